//! The registry: an embedded, content-addressed store (redb) of ingested files, base items,
//! episodes and named episode sets.
//!
//! Format, fixed by this module (see also `store/README.md`):
//! - Every record's id is `blake3::derive_key(CONTEXT_OF_ITS_KIND, canonical JSON of its content)`.
//!   The canonical encoding is serde_json of a struct whose fields are in declaration order and
//!   whose maps are sorted vectors, so the same content has the same id on every machine.
//! - Values are rkyv archives built with the features `little_endian`, `pointer_width_32` and
//!   `unaligned`. redb does not align value slices, so archives are made alignment-free and read
//!   through validated access (`bytecheck`) straight from the page, never trusted blindly.
//! - A `meta` table holds the schema version; a database of another version is refused.
//! - Every command writes in one transaction: a failure or interruption leaves the store as it was.

pub mod cache;
pub mod ingest;
mod records;

pub use records::{SourceFile, StoredSet, StoredSpec};

use anyhow::{anyhow, bail, Context, Result};
use redb::{
    Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle,
};
use rkyv::api::high::{HighSerializer, HighValidator};
use rkyv::de::Pool;
use rkyv::rancor::{self, Strategy};
use rkyv::ser::allocator::ArenaHandle;
use rkyv::util::AlignedVec;
use std::fmt;
use std::path::{Path, PathBuf};

/// Bumped whenever a table or record layout changes.
pub const SCHEMA_VERSION: u32 = 1;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// Tables of names: aliases pointing at content ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    Sets,
    Models,
}

impl Names {
    pub const ALL: [Names; 2] = [Names::Sets, Names::Models];

    pub fn noun(self) -> &'static str {
        match self {
            Names::Sets => "episode set",
            Names::Models => "model",
        }
    }

    fn table(self) -> TableDefinition<'static, &'static str, [u8; 32]> {
        TableDefinition::new(match self {
            Names::Sets => "set_names",
            Names::Models => "model_names",
        })
    }
}

/// A content address: blake3 in key-derivation mode, one context string per kind of record.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(pub [u8; 32]);

impl Id {
    pub fn derive(kind: Kind, content: &[u8]) -> Id {
        Id(blake3::derive_key(kind.context(), content))
    }

    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The first 12 hex digits: what listings show and what `show` accepts as a prefix.
    pub fn short(&self) -> String {
        self.hex()[..12].to_string()
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({})", self.short())
    }
}

impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

/// The kinds of content-addressed records, each with its own key-derivation context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    SourceFile,
    BaseItem,
    Episode,
    EpisodeSet,
    BuildSpec,
    Model,
    Template,
    Prompt,
    Score,
    Result,
    Question,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::SourceFile,
        Kind::BaseItem,
        Kind::Episode,
        Kind::EpisodeSet,
        Kind::BuildSpec,
        Kind::Model,
        Kind::Template,
        Kind::Prompt,
        Kind::Score,
        Kind::Result,
        Kind::Question,
    ];

    fn context(self) -> &'static str {
        match self {
            Kind::SourceFile => "deltalogic 2026-11-21 source file v1",
            Kind::BaseItem => "deltalogic 2026-11-21 base item v1",
            Kind::Episode => "deltalogic 2026-11-21 episode v1",
            Kind::EpisodeSet => "deltalogic 2026-11-21 episode set v1",
            Kind::BuildSpec => "deltalogic 2026-11-21 build spec v1",
            Kind::Model => "deltalogic 2026-11-21 model fingerprint v1",
            Kind::Template => "deltalogic 2026-11-21 prompt template v1",
            Kind::Prompt => "deltalogic 2026-11-21 prompt text v1",
            Kind::Score => "deltalogic 2026-11-21 score key v1",
            Kind::Result => "deltalogic 2026-11-21 result v1",
            Kind::Question => "deltalogic 2026-11-21 question v1",
        }
    }

    /// How messages name a record of this kind.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::SourceFile => "source file",
            Kind::BaseItem => "item",
            Kind::Episode => "episode",
            Kind::EpisodeSet => "episode set",
            Kind::BuildSpec => "build spec",
            Kind::Model => "model",
            Kind::Template => "template",
            Kind::Prompt => "prompt",
            Kind::Score => "score",
            Kind::Result => "result",
            Kind::Question => "question",
        }
    }

    fn table(self) -> TableDefinition<'static, [u8; 32], &'static [u8]> {
        TableDefinition::new(match self {
            Kind::SourceFile => "sources",
            Kind::BaseItem => "items",
            Kind::Episode => "episodes",
            Kind::EpisodeSet => "sets",
            Kind::BuildSpec => "specs",
            Kind::Model => "models",
            Kind::Template => "templates",
            Kind::Prompt => "prompts",
            Kind::Score => "scores",
            Kind::Result => "results",
            Kind::Question => "questions",
        })
    }
}

/// The canonical encoding that ids hash: JSON of the content, fields in declaration order.
pub fn canonical<T: serde::Serialize>(content: &T) -> Vec<u8> {
    serde_json::to_vec(content).expect("records serialise to JSON")
}

type Serializer<'a> = HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>;

/// A record kept in the registry under its content id.
pub trait Record: rkyv::Archive + for<'a> rkyv::Serialize<Serializer<'a>> + Sized
where
    Self::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<Self, Strategy<Pool, rancor::Error>>,
{
    const KIND: Kind;

    /// The canonical encoding of what this record *is*; provenance that may differ between two
    /// copies of the same content (where it was first seen) stays out of it.
    fn content(&self) -> Vec<u8>;

    fn id(&self) -> Id {
        Id::derive(Self::KIND, &self.content())
    }
}

pub fn decode<R: Record>(bytes: &[u8], path: &Path, id: &Id) -> Result<R>
where
    R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
{
    rkyv::from_bytes::<R, rancor::Error>(bytes).map_err(|e| {
        anyhow!(
            "{}: record {} in table `{}` is corrupt: {e}",
            path.display(),
            id.short(),
            R::KIND.table().name()
        )
    })
}

/// The store. Opening it checks (or, for a new file, writes) the schema version.
pub struct Registry {
    db: Database,
    path: PathBuf,
}

impl Registry {
    pub fn open(path: &Path) -> Result<Registry> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the store folder {}", dir.display()))?;
        }
        let db = Database::create(path).map_err(|e| {
            anyhow!(
                "{}: not a deltalogic store (or unreadable): {e}",
                path.display()
            )
        })?;
        let reg = Registry {
            db,
            path: path.to_path_buf(),
        };
        reg.check_schema()?;
        Ok(reg)
    }

    /// Opens a store that must already exist (a cache file to read or merge): a missing file is
    /// an error, not a new empty store.
    pub fn open_existing(path: &Path) -> Result<Registry> {
        if !path.is_file() {
            bail!("{}: no such cache file", path.display());
        }
        Registry::open(path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_schema(&self) -> Result<()> {
        let found = self
            .read(META, |t| {
                Ok(t.get("schema_version")?.map(|v| v.value().to_vec()))
            })?
            .flatten();
        match found {
            Some(bytes) => {
                let v = <[u8; 4]>::try_from(bytes.as_slice())
                    .map(u32::from_le_bytes)
                    .map_err(|_| {
                        anyhow!(
                            "{}: the schema version record is corrupt",
                            self.path.display()
                        )
                    })?;
                if v != SCHEMA_VERSION {
                    bail!(
                        "{}: written by deltalogic schema version {v}; this build reads version {SCHEMA_VERSION}. \
                         Use a deltalogic that matches, or another --store.",
                        self.path.display()
                    );
                }
                Ok(())
            }
            None => {
                let txn = self.db.begin_write()?;
                {
                    let has_tables = txn.list_tables()?.next().is_some();
                    if has_tables {
                        bail!(
                            "{}: a redb database without a deltalogic schema record; refusing to use it",
                            self.path.display()
                        );
                    }
                    let mut meta = txn.open_table(META)?;
                    meta.insert("schema_version", SCHEMA_VERSION.to_le_bytes().as_slice())?;
                }
                txn.commit()?;
                Ok(())
            }
        }
    }

    /// Runs `f` inside one write transaction; it is committed only if `f` succeeds.
    pub fn write<T>(&self, f: impl FnOnce(&mut Writer<'_>) -> Result<T>) -> Result<T> {
        let txn = self.db.begin_write()?;
        let mut w = Writer {
            txn: &txn,
            path: &self.path,
        };
        let out = f(&mut w)?;
        txn.commit().with_context(|| {
            format!(
                "{}: commit failed; nothing was written",
                self.path.display()
            )
        })?;
        Ok(out)
    }

    /// Runs `f` on a table in a read transaction; `None` when the table was never written.
    fn read<K: redb::Key + 'static, V: redb::Value + 'static, T>(
        &self,
        def: TableDefinition<K, V>,
        f: impl FnOnce(&redb::ReadOnlyTable<K, V>) -> Result<T>,
    ) -> Result<Option<T>> {
        let txn = self.db.begin_read()?;
        match txn.open_table(def) {
            Ok(t) => f(&t).map(Some),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub fn get<R: Record>(&self, id: &Id) -> Result<Option<R>>
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
            + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
    {
        let bytes = self.raw_get(R::KIND, id)?;
        bytes.map(|b| decode(&b, &self.path, id)).transpose()
    }

    /// Every record of a kind, in id order.
    pub fn all<R: Record>(&self) -> Result<Vec<(Id, R)>>
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
            + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
    {
        let found = self.read(R::KIND.table(), |t| {
            let mut out = Vec::with_capacity(t.len()? as usize);
            for entry in t.iter()? {
                let (k, v) = entry?;
                let id = Id(k.value());
                out.push((id, decode(v.value(), &self.path, &id)?));
            }
            Ok(out)
        })?;
        Ok(found.unwrap_or_default())
    }

    /// Every record of a kind as stored bytes, in id order (for copying between stores).
    pub fn raw_all(&self, kind: Kind) -> Result<Vec<(Id, Vec<u8>)>> {
        let found = self.read(kind.table(), |t| {
            t.iter()?
                .map(|e| {
                    e.map(|(k, v)| (Id(k.value()), v.value().to_vec()))
                        .map_err(Into::into)
                })
                .collect()
        })?;
        Ok(found.unwrap_or_default())
    }

    pub fn raw_get(&self, kind: Kind, id: &Id) -> Result<Option<Vec<u8>>> {
        let found = self.read(kind.table(), |t| {
            Ok(t.get(&id.0)?.map(|v| v.value().to_vec()))
        })?;
        Ok(found.flatten())
    }

    pub fn count(&self, kind: Kind) -> Result<u64> {
        Ok(self.read(kind.table(), |t| Ok(t.len()?))?.unwrap_or(0))
    }

    /// Resolves a full id or a unique hex prefix of one (at least 6 digits).
    pub fn resolve(&self, kind: Kind, prefix: &str) -> Result<Id> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.len() < 6 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            bail!("`{prefix}` is not an id (give at least 6 hex digits)");
        }
        let hits = self.read(kind.table(), |t| {
            let mut hits = Vec::new();
            for entry in t.iter()? {
                let id = Id(entry?.0.value());
                if id.hex().starts_with(&prefix) {
                    hits.push(id);
                }
            }
            Ok(hits)
        })?;
        match hits.unwrap_or_default().as_slice() {
            [id] => Ok(*id),
            [] => bail!("no {} id starts with `{prefix}`", kind.noun()),
            hits => bail!("`{prefix}` names {} records; give more digits", hits.len()),
        }
    }

    /// The id a name points at.
    pub fn lookup(&self, names: Names, name: &str) -> Result<Option<Id>> {
        Ok(self
            .read(names.table(), |t| Ok(t.get(name)?.map(|v| Id(v.value()))))?
            .flatten())
    }

    /// Every name of a table, sorted.
    pub fn names(&self, names: Names) -> Result<Vec<(String, Id)>> {
        let found = self.read(names.table(), |t| {
            t.iter()?
                .map(|e| {
                    e.map(|(k, v)| (k.value().to_string(), Id(v.value())))
                        .map_err(Into::into)
                })
                .collect()
        })?;
        Ok(found.unwrap_or_default())
    }

    pub fn set_by_name(&self, name: &str) -> Result<Option<(Id, StoredSet)>> {
        let Some(id) = self.lookup(Names::Sets, name)? else {
            return Ok(None);
        };
        let set = self.get::<StoredSet>(&id)?.ok_or_else(|| {
            anyhow!(
                "{}: set name `{name}` points to a missing set {}",
                self.path.display(),
                id.short()
            )
        })?;
        Ok(Some((id, set)))
    }
}

/// Writes inside one transaction (see [`Registry::write`]).
pub struct Writer<'t> {
    txn: &'t redb::WriteTransaction,
    path: &'t Path,
}

impl Writer<'_> {
    /// Stores a record under its content id. Returns the id and whether it was new; an existing
    /// record with the same id is left as it is (same content, same id).
    pub fn put<R: Record>(&mut self, record: &R) -> Result<(Id, bool)>
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
            + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
    {
        let id = record.id();
        let mut table = self.txn.open_table(R::KIND.table())?;
        if table.get(&id.0)?.is_some() {
            return Ok((id, false));
        }
        let bytes = rkyv::to_bytes::<rancor::Error>(record).map_err(|e| {
            anyhow!(
                "{}: cannot encode a {} record: {e}",
                self.path.display(),
                R::KIND.noun()
            )
        })?;
        table.insert(&id.0, bytes.as_slice())?;
        Ok((id, true))
    }

    /// Stores bytes read from another store under their key. The caller has validated them
    /// (see `crate::store::cache`); an existing record is kept.
    pub fn put_raw(&mut self, kind: Kind, id: Id, bytes: &[u8]) -> Result<bool> {
        let mut table = self.txn.open_table(kind.table())?;
        if table.get(&id.0)?.is_some() {
            return Ok(false);
        }
        table.insert(&id.0, bytes)?;
        Ok(true)
    }

    /// Points a name at a record (an earlier record of that name stays, unnamed).
    pub fn name(&mut self, names: Names, name: &str, id: Id) -> Result<()> {
        let mut table = self.txn.open_table(names.table())?;
        table.insert(name, id.0)?;
        Ok(())
    }
}
