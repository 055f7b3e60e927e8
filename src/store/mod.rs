//! The store: an embedded, content-addressed database (redb) of records, one table per kind
//! ([`Kind`], declared beside each record type), and of names pointing at them.
//!
//! Format, fixed by this module (drawn in `docs/registry.md`):
//! - Every record's id is `blake3::derive_key(CONTEXT_OF_ITS_KIND, canonical JSON of its content)`.
//!   The canonical encoding is serde_json of a struct whose fields are in declaration order and
//!   whose maps are sorted vectors, so the same content has the same id on every machine.
//! - Values are rkyv archives built with the features `little_endian`, `pointer_width_32` and
//!   `unaligned`. redb does not align value slices, so archives are made alignment-free and read
//!   through validated access (`bytecheck`) straight from the page, never trusted blindly.
//! - A `meta` table holds the schema version; a database of another version is refused.
//! - Every command writes in transactions, each atomic: a failure or interruption leaves the store
//!   as of its last commit, which every command can read afterwards (see [`Store::open_read`]).

mod checksum;
pub mod ingest;
mod kind;
mod legacy;
mod migrate;
mod outputs;
mod records;
mod shield;

pub use kind::{Declared, Kind};
pub use outputs::{guard_output, record_output, same_file};
pub use records::{
    ResultRecord, ResultRow, SourceFile, StoredSet, StoredSpec, Turn, TurnAnswer, KINDS,
};

use anyhow::{anyhow, bail, Result};
use redb::{
    Database, ReadOnlyDatabase, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition, TableHandle,
};
use rkyv::api::high::{HighSerializer, HighValidator};
use rkyv::de::Pool;
use rkyv::rancor::{self, Strategy};
use rkyv::ser::allocator::ArenaHandle;
use rkyv::util::AlignedVec;
use shield::{shield, Place};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped whenever a table or record layout, or the derivation of an id, changes. Version 2
/// frames every value with a checksum (see `checksum.rs`); version 3 derives a result's id from
/// its answers too (see [`ResultRecord`]). Older stores are migrated on their first writing open.
pub const SCHEMA_VERSION: u32 = 3;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// Keys of scores merged from another store without a recomputed check (see `cache::merge`).
const UNVERIFIED: TableDefinition<[u8; 32], ()> = TableDefinition::new("unverified_scores");

/// Files this tool wrote: canonical path -> blake3 of the bytes written (see `outputs.rs`).
const OUTPUTS: TableDefinition<&str, [u8; 32]> = TableDefinition::new("outputs");

/// Where this store asks its served models: model id -> the registration `model add --served`
/// wrote here (its bytes are `eval::served`'s). A store's own: never exported nor merged, so a
/// cache file can never say where a request goes (docs/served.md, "threat model").
const SERVED_AT: TableDefinition<[u8; 32], &[u8]> = TableDefinition::new("served_at");

/// Whether a table of a store holds records (every table but the store's own of schema, names,
/// marks and served models' locations).
fn is_record_table(name: &str) -> bool {
    let own = [
        META.name(),
        UNVERIFIED.name(),
        OUTPUTS.name(),
        SERVED_AT.name(),
    ];
    !own.contains(&name) && !Names::ALL.iter().any(|n| n.table().name() == name)
}

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
            Names::Sets => "set",
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
        Id(blake3::derive_key(kind.context, content))
    }

    pub fn hex(&self) -> String {
        // Without a `format!` per byte: reports write one for every row they read.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from(DIGITS[usize::from(b >> 4)]));
            s.push(char::from(DIGITS[usize::from(b & 15)]));
        }
        s
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

/// The canonical encoding that ids hash: JSON of the content, fields in declaration order.
pub fn canonical<T: serde::Serialize>(content: &T) -> Vec<u8> {
    serde_json::to_vec(content).expect("records serialise to JSON")
}

type Serializer<'a> = HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>;

/// A record kept in the store under its content id.
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

    /// Whether `key` is this record's id in a store of schema `schema`: its content id, unless
    /// the kind's ids changed with the schema.
    fn keyed_by(&self, key: &Id, _schema: u32) -> bool {
        self.id() == *key
    }

    /// The records this one names, by kind: what a self-contained cache file holding it must
    /// also hold (see `crate::eval::share`).
    fn references(&self) -> Vec<(Kind, Id)> {
        Vec::new()
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
            R::KIND.table
        )
    })
}

/// The first bytes of every redb file.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

enum Db {
    Write(Database),
    Read(ReadOnlyDatabase),
}

impl Db {
    fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::Write(db) => db.begin_read(),
            Db::Read(db) => db.begin_read(),
        }
    }
}

/// The store, opened for reading ([`Store::open_read`], never writes) or for writing
/// ([`Store::open_write`], creates it and migrates an older schema).
pub struct Store {
    db: Arc<Db>,
    path: PathBuf,
    /// The schema its values are in: a read-only store of an older version is read as it is.
    version: u32,
    /// Read where this store lacks a record ([`Store::layered`]): a merge's view of the store
    /// as it will be after the merge.
    under: Option<Box<Store>>,
}

impl Store {
    /// Opens a store for a command that writes: creates a missing file (and its folder), and
    /// migrates a schema 1 store in place, after copying it beside itself.
    pub fn open_write(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                anyhow!(
                    "{}: cannot create the store folder: {}",
                    dir.display(),
                    io_cause(&e)
                )
            })?;
        }
        if path.exists() {
            check_redb_file(path)?;
        } else {
            Store::create_new(path)?;
        }
        // A schema 1 store is copied before redb opens it for writing (which rewrites parts of
        // its header), so the backup is the very file.
        let copied = Store::peek_version(path) == Some(1);
        if copied {
            migrate::backup_v1(path)?;
        }
        let mut reg = Store::create(path)?;
        match reg.schema()? {
            Some(SCHEMA_VERSION) => {}
            Some(1) => {
                if !copied {
                    // Not closed cleanly, so not readable before redb repaired it on open:
                    // back up the repaired file, closed.
                    drop(reg);
                    migrate::backup_v1(path)?;
                    reg = Store::create(path)?;
                }
                migrate::v1_to_current(&reg)?;
                reg.version = SCHEMA_VERSION;
            }
            Some(2) => {
                migrate::v2_to_v3(&reg)?;
                reg.version = SCHEMA_VERSION;
            }
            Some(v) => bail!(version_refused(path, v)),
            None => reg.initialise()?,
        }
        Ok(reg)
    }

    /// The schema version of a store that opens read-only as it is (closed cleanly), if any:
    /// no repair, no copy.
    fn peek_version(path: &Path) -> Option<u32> {
        let db = shield(path, Place::default(), || Ok(ReadOnlyDatabase::open(path)?)).ok()?;
        let reg = Store {
            db: Arc::new(Db::Read(db)),
            path: path.to_path_buf(),
            version: SCHEMA_VERSION,
            under: None,
        };
        reg.schema().ok().flatten()
    }

    /// Opens an existing store for a command that writes (repairs an unclean one, migrates an
    /// older schema); a missing store is refused, never created.
    pub fn open_existing(path: &Path) -> Result<Store> {
        check_redb_file(path)?;
        Store::open_write(path)
    }

    /// Opens an existing store without ever writing to it (works on read-only files). A missing,
    /// empty, non-redb or non-deltalogic file is refused. A schema 1 store is read as it is:
    /// its values carry no checksums, so they are validated (archive, and key hash where a
    /// command checks it) but not checksummed.
    ///
    /// A store left unclean by an interrupted command (killed, out of space) is read as of its
    /// last commit: redb must repair such a file before reading it, which writes, so the repair
    /// is made on a private copy (in the temporary folder, removed at once: only the open file
    /// handle keeps it) and the store itself is left as it is for a writing command to repair.
    pub fn open_read(path: &Path) -> Result<Store> {
        check_exists(path)?;
        check_redb_file(path)?;
        let opened = shield(path, Place::default(), || Ok(ReadOnlyDatabase::open(path)))?;
        let db = match opened {
            Ok(db) => db,
            Err(redb::DatabaseError::RepairAborted) => repaired_copy(path)?,
            Err(e) => return Err(open_error(path, e)),
        };
        let mut reg = Store {
            db: Arc::new(Db::Read(db)),
            path: path.to_path_buf(),
            version: SCHEMA_VERSION,
            under: None,
        };
        match reg.schema()? {
            Some(v @ 1..=SCHEMA_VERSION) => reg.version = v,
            Some(v) => bail!(version_refused(path, v)),
            None => bail!(
                "{}: a redb database without a deltalogic schema record: not a deltalogic store",
                path.display()
            ),
        }
        Ok(reg)
    }

    /// Creates a new, empty store at `path` all at once: it is made and initialised under a
    /// temporary name beside it, then linked into place, so a process killed while creating a
    /// store leaves no half-written file where the store should be (only the temporary one).
    fn create_new(path: &Path) -> Result<()> {
        let temp = temp_beside(path, "new");
        let _ = std::fs::remove_file(&temp);
        let made = (|| {
            let mut reg = Store::create(&temp).map_err(|e| {
                // The message names the store the user asked for, not the temporary name.
                anyhow!(
                    "{}: cannot create the store: {}",
                    path.display(),
                    cause_of(&e)
                )
            })?;
            reg.path = temp.clone();
            reg.initialise()
        })();
        // A hard link never replaces a file: of two processes creating the same store at once,
        // the second finds the first's store and uses it.
        let linked = made.and_then(|()| {
            std::fs::hard_link(&temp, path).or_else(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => bail!(
                    "{}: cannot put the new store in place: {}",
                    path.display(),
                    io_cause(&e)
                ),
            })
        });
        // On every path, success or failure: no temporary file stays behind.
        let _ = std::fs::remove_file(&temp);
        linked
    }

    fn create(path: &Path) -> Result<Store> {
        let db = shield(path, Place::default(), || {
            Database::create(path).map_err(|e| open_error(path, e))
        })?;
        Ok(Store {
            db: Arc::new(Db::Write(db)),
            path: path.to_path_buf(),
            version: SCHEMA_VERSION,
            under: None,
        })
    }

    /// This store read over `under`: a record, name or mark this store lacks is read from
    /// `under` (ours first, as a merge keeps ours). What a merge of `under` into this store would
    /// leave, before anything is written; the view itself never writes.
    pub fn layered(&self, under: &Store) -> Store {
        Store {
            db: Arc::clone(&self.db),
            path: self.path.clone(),
            version: self.version,
            under: Some(Box::new(Store {
                db: Arc::clone(&under.db),
                path: under.path.clone(),
                version: under.version,
                under: None,
            })),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`Store::write`] may write: opened for writing, and not a layered view.
    pub fn writable(&self) -> bool {
        matches!((&*self.db, &self.under), (Db::Write(_), None))
    }

    /// The schema version the store's values are in.
    pub fn schema_version(&self) -> u32 {
        self.version
    }

    /// Refuses a schema 1 store opened for reading: its results are in the old layout, which only
    /// the migration reads. Any command that writes migrates a store in place (after a backup).
    pub fn require_current(&self) -> Result<()> {
        // Schema 2 has today's layout; only its result ids differ, and they are read as stored.
        if self.version < 2 {
            bail!(
                "{}: written by schema {} of deltalogic; run a command that writes to it (for \
                 example `deltalogic --store {} report`) to migrate it in place, after a backup \
                 copy beside it, or migrate a copy",
                self.path.display(),
                self.version,
                self.path.display()
            );
        }
        Ok(())
    }

    fn schema(&self) -> Result<Option<u32>> {
        let found = self
            .read(META, |t| {
                Ok(t.get("schema_version")?.map(|v| v.value().to_vec()))
            })?
            .flatten();
        found
            .map(|bytes| {
                <[u8; 4]>::try_from(bytes.as_slice())
                    .map(u32::from_le_bytes)
                    .map_err(|_| {
                        anyhow!(
                            "{}: the schema version record is corrupt",
                            self.path.display()
                        )
                    })
            })
            .transpose()
    }

    /// Writes the schema version into a new, empty database.
    fn initialise(&self) -> Result<()> {
        self.transaction(|txn| {
            if txn.list_tables()?.next().is_some() {
                bail!(
                    "{}: a redb database without a deltalogic schema record; refusing to use it",
                    self.path.display()
                );
            }
            let mut meta = txn.open_table(META)?;
            meta.insert("schema_version", SCHEMA_VERSION.to_le_bytes().as_slice())?;
            Ok(())
        })
    }

    /// Runs `f` inside one write transaction; it is committed only if `f` succeeds.
    pub fn write<T>(&self, f: impl FnOnce(&mut Writer<'_>) -> Result<T>) -> Result<T> {
        let (Db::Write(db), None) = (&*self.db, &self.under) else {
            bail!(
                "{}: opened read-only; this command cannot write to it",
                self.path.display()
            );
        };
        let unwritten = |e: anyhow::Error| storage_error(&self.path, e);
        let txn =
            shield(&self.path, Place::default(), || Ok(db.begin_write()?)).map_err(unwritten)?;
        let mut w = Writer {
            txn: &txn,
            path: &self.path,
        };
        let out = f(&mut w).map_err(unwritten)?;
        shield(&self.path, Place::default(), || Ok(txn.commit()?)).map_err(unwritten)?;
        Ok(out)
    }

    /// Runs `f` on the raw write transaction (schema set-up and migration), shielded.
    fn transaction(&self, f: impl FnOnce(&redb::WriteTransaction) -> Result<()>) -> Result<()> {
        let Db::Write(db) = &*self.db else {
            bail!("{}: opened read-only", self.path.display());
        };
        shield(&self.path, Place::default(), || {
            let txn = db.begin_write()?;
            f(&txn)?;
            txn.commit()?;
            Ok(())
        })
        .map_err(|e| storage_error(&self.path, e))
    }

    /// Runs `f` on a table in a read transaction; `None` when the table was never written.
    fn read<K: redb::Key + 'static, V: redb::Value + 'static, T>(
        &self,
        def: TableDefinition<K, V>,
        f: impl FnOnce(&redb::ReadOnlyTable<K, V>) -> Result<T>,
    ) -> Result<Option<T>> {
        let name = def.name().to_string();
        shield(&self.path, Place::table(&name), || {
            let txn = self.db.begin_read()?;
            match txn.open_table(def) {
                Ok(t) => f(&t).map(Some),
                Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// The archive inside a stored value, after checking its checksum.
    fn body(&self, kind: Kind, id: &Id, stored: &[u8]) -> Result<Vec<u8>> {
        if self.version < 2 {
            return Ok(stored.to_vec());
        }
        checksum::unseal(kind.table, &id.0, stored)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                anyhow!(
                    "{}: record {} in table `{}` fails its checksum: the value was changed or \
                     damaged after it was written",
                    self.path.display(),
                    id.short(),
                    kind.table
                )
            })
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
        self.raw_all(R::KIND)?
            .into_iter()
            .map(|(id, body)| Ok((id, decode(&body, &self.path, &id)?)))
            .collect()
    }

    /// Every record of a kind as its archive, checksums checked, in id order (with a layered
    /// store's, [`Store::layered`], ours where both hold one); the first value that fails its
    /// checksum is an error.
    pub fn raw_all(&self, kind: Kind) -> Result<Vec<(Id, Vec<u8>)>> {
        self.scan(kind)?
            .into_iter()
            .map(|(id, body)| Ok((id, body?)))
            .collect()
    }

    /// Every record of a kind, each with its archive or why it cannot be trusted (for verify).
    pub fn scan(&self, kind: Kind) -> Result<Vec<(Id, Result<Vec<u8>>)>> {
        let found = self.read(kind.definition(), |t| {
            let mut out = Vec::with_capacity(t.len()? as usize);
            for entry in t.iter()? {
                let (k, v) = entry?;
                let id = Id(k.value());
                out.push((id, self.body(kind, &id, v.value())));
            }
            Ok(out)
        })?;
        let mut out = found.unwrap_or_default();
        if let Some(under) = &self.under {
            let ours: std::collections::BTreeSet<Id> = out.iter().map(|(id, _)| *id).collect();
            out.extend(
                under
                    .scan(kind)?
                    .into_iter()
                    .filter(|(id, _)| !ours.contains(id)),
            );
            out.sort_by_key(|(id, _)| *id);
        }
        Ok(out)
    }

    /// One record's archive, checksum checked.
    pub fn raw_get(&self, kind: Kind, id: &Id) -> Result<Option<Vec<u8>>> {
        let found = self.read(kind.definition(), |t| {
            Ok(t.get(&id.0)?.map(|v| v.value().to_vec()))
        })?;
        match (found.flatten(), &self.under) {
            (Some(stored), _) => self.body(kind, id, &stored).map(Some),
            (None, Some(under)) => under.raw_get(kind, id),
            (None, None) => Ok(None),
        }
    }

    /// Which of `ids` this store lacks, in the order asked, read in one transaction (the values
    /// are not read: a report asks whether a result's scores are all there).
    pub fn missing(&self, kind: Kind, ids: &[Id]) -> Result<Vec<Id>> {
        let found = self.read(kind.definition(), |t| {
            let mut out = Vec::new();
            for id in ids {
                if t.get(&id.0)?.is_none() {
                    out.push(*id);
                }
            }
            Ok(out)
        })?;
        let lacking = found.unwrap_or_else(|| ids.to_vec());
        match &self.under {
            Some(under) if !lacking.is_empty() => under.missing(kind, &lacking),
            _ => Ok(lacking),
        }
    }

    /// Records of a kind by id, in the order asked, read in one transaction (a report reads
    /// every item of a result: one transaction each was most of that read).
    pub fn get_many<R: Record>(&self, ids: &[Id]) -> Result<Vec<Option<R>>>
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
            + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
    {
        let found = self.read(R::KIND.definition(), |t| {
            ids.iter()
                .map(|id| Ok(t.get(&id.0)?.map(|v| v.value().to_vec())))
                .collect::<Result<Vec<_>>>()
        })?;
        let found = found.unwrap_or_else(|| ids.iter().map(|_| None).collect());
        ids.iter()
            .zip(found)
            .map(|(id, stored)| match (stored, &self.under) {
                (Some(stored), _) => {
                    decode(&self.body(R::KIND, id, &stored)?, &self.path, id).map(Some)
                }
                (None, Some(under)) => under.get(id),
                (None, None) => Ok(None),
            })
            .collect()
    }

    pub fn count(&self, kind: Kind) -> Result<u64> {
        Ok(self.read(kind.definition(), |t| Ok(t.len()?))?.unwrap_or(0))
    }

    /// Resolves a full id or a unique hex prefix of one (at least 6 digits).
    pub fn resolve(&self, kind: Kind, prefix: &str) -> Result<Id> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.len() < 6 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            bail!("`{prefix}` is not an id (give at least 6 hex digits)");
        }
        let hits = self.read(kind.definition(), |t| {
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
            [] => bail!("no {} id starts with `{prefix}`", kind.noun),
            hits => bail!("`{prefix}` names {} records; give more digits", hits.len()),
        }
    }

    /// The id a name points at.
    pub fn lookup(&self, names: Names, name: &str) -> Result<Option<Id>> {
        let found = self
            .read(names.table(), |t| Ok(t.get(name)?.map(|v| Id(v.value()))))?
            .flatten();
        match (found, &self.under) {
            (None, Some(under)) => under.lookup(names, name),
            (found, _) => Ok(found),
        }
    }

    /// Every name of a table, sorted.
    pub fn names(&self, names: Names) -> Result<Vec<(String, Id)>> {
        let found: Option<Vec<(String, Id)>> = self.read(names.table(), |t| {
            t.iter()?
                .map(|e| {
                    e.map(|(k, v)| (k.value().to_string(), Id(v.value())))
                        .map_err(Into::into)
                })
                .collect()
        })?;
        let mut out = found.unwrap_or_default();
        if let Some(under) = &self.under {
            for (name, id) in under.names(names)? {
                if let Err(at) = out.binary_search_by(|(n, _)| n.as_str().cmp(&name)) {
                    out.insert(at, (name, id));
                }
            }
        }
        Ok(out)
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

    /// Whether a score was merged from another store without a recomputed check.
    pub fn is_unverified(&self, score: &Id) -> Result<bool> {
        let here = self
            .read(UNVERIFIED, |t| Ok(t.get(&score.0)?.is_some()))?
            .unwrap_or(false);
        match &self.under {
            Some(under) if !here => under.is_unverified(score),
            _ => Ok(here),
        }
    }

    /// Every score key marked unverified, in key order.
    pub fn unverified_scores(&self) -> Result<Vec<Id>> {
        let found = self.read(UNVERIFIED, |t| {
            t.iter()?
                .map(|e| e.map(|(k, _)| Id(k.value())).map_err(Into::into))
                .collect()
        })?;
        Ok(found.unwrap_or_default())
    }

    /// What `model add --served` registered here for `model`, if it did (in this store or the
    /// one it is layered over).
    pub fn served_at(&self, model: &Id) -> Result<Option<Vec<u8>>> {
        let here = self
            .read(SERVED_AT, |t| {
                Ok(t.get(&model.0)?.map(|v| v.value().to_vec()))
            })?
            .flatten();
        match (&here, &self.under) {
            (None, Some(under)) => under.served_at(model),
            _ => Ok(here),
        }
    }

    /// blake3 of the bytes this tool last wrote to `key` (a canonical path), if any.
    fn output_hash(&self, key: &str) -> Result<Option<[u8; 32]>> {
        Ok(self
            .read(OUTPUTS, |t| Ok(t.get(key)?.map(|v| v.value())))?
            .flatten())
    }
}

/// Refuses a path that names no store, saying why: a missing file, or one that cannot be looked
/// at (a folder without permission).
fn check_exists(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{}: no such store (it does not exist)", path.display())
        }
        Err(e) => bail!(
            "{}: cannot open the store: {}",
            path.display(),
            io_cause(&e)
        ),
    }
}

/// Refuses what cannot be a store before redb sees it: redb would initialise an empty file (and
/// so rewrite a colleague's 0-byte download) and gives poor messages for other files.
fn check_redb_file(path: &Path) -> Result<()> {
    use std::io::Read;
    check_exists(path)?;
    let meta = std::fs::metadata(path).map_err(|e| {
        anyhow!(
            "{}: cannot open the store: {}",
            path.display(),
            io_cause(&e)
        )
    })?;
    if !meta.is_file() {
        bail!("{}: not a file, so not a deltalogic store", path.display());
    }
    if meta.len() == 0 {
        bail!("{}: an empty file, not a deltalogic store", path.display());
    }
    let mut head = [0u8; REDB_MAGIC.len()];
    let mut file = std::fs::File::open(path).map_err(|e| {
        anyhow!(
            "{}: cannot open the store: {}",
            path.display(),
            io_cause(&e)
        )
    })?;
    let read = file.read_exact(&mut head).is_ok();
    if !read || head != REDB_MAGIC {
        bail!(
            "{}: not a deltalogic store (not a redb database)",
            path.display()
        );
    }
    Ok(())
}

/// A temporary name beside `path` for a file made whole before it is linked into place:
/// `PATH.WHAT-PID`.
pub(crate) fn temp_beside(path: &Path, what: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{what}-{}", std::process::id()));
    PathBuf::from(name)
}

/// The store as of its last commit, when it was not closed cleanly: a copy in the temporary
/// folder, repaired by a writing open there, then opened read-only and unlinked (the open file
/// keeps it until the command ends). The store itself is not touched.
fn repaired_copy(path: &Path) -> Result<ReadOnlyDatabase> {
    static COPIES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let copy =
        std::env::temp_dir().join(format!("deltalogic-repair-{}-{n}.redb", std::process::id()));
    let opened = (|| {
        std::fs::copy(path, &copy).map_err(|e| {
            anyhow!(
                "{}: not closed cleanly, and a copy to read its last commit from cannot be made \
                 in {}: {}; run any command that writes to the store (it repairs on open)",
                path.display(),
                std::env::temp_dir().display(),
                io_cause(&e)
            )
        })?;
        shield(path, Place::default(), || {
            drop(Database::create(&copy).map_err(|e| open_error(path, e))?);
            ReadOnlyDatabase::open(&copy).map_err(|e| open_error(path, e))
        })
    })();
    let _ = std::fs::remove_file(&copy);
    let db = opened?;
    eprintln!(
        "{}: not closed cleanly (an interrupted command); read as of its last commit. Any \
         command that writes to it repairs it in place.",
        path.display()
    );
    Ok(db)
}

/// The I/O error under a storage error, if there is one: redb's errors do not chain theirs.
fn io_error_of(e: &anyhow::Error) -> Option<&std::io::Error> {
    fn storage(s: &redb::StorageError) -> Option<&std::io::Error> {
        match s {
            redb::StorageError::Io(io) => Some(io),
            _ => None,
        }
    }
    e.chain().find_map(|c| {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        if let Some(s) = c.downcast_ref::<redb::StorageError>() {
            return storage(s);
        }
        if let Some(redb::DatabaseError::Storage(s)) = c.downcast_ref::<redb::DatabaseError>() {
            return storage(s);
        }
        if let Some(redb::TransactionError::Storage(s)) = c.downcast_ref::<redb::TransactionError>()
        {
            return storage(s);
        }
        if let Some(redb::CommitError::Storage(s)) = c.downcast_ref::<redb::CommitError>() {
            return storage(s);
        }
        if let Some(redb::TableError::Storage(s)) = c.downcast_ref::<redb::TableError>() {
            return storage(s);
        }
        if let Some(redb::Error::Io(io)) = c.downcast_ref::<redb::Error>() {
            return Some(io);
        }
        None
    })
}

/// Why an I/O operation failed, in the words a user acts on: each cause its own message.
pub fn io_cause(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => "permission denied".into(),
        Some(libc::ENOSPC) => "no space left on the device".into(),
        Some(libc::EDQUOT) => "the disk quota is exceeded".into(),
        Some(libc::EFBIG) => {
            "the file size limit was reached (File too large; see `ulimit -f`)".into()
        }
        Some(libc::EROFS) => "the file system is read-only".into(),
        Some(libc::ENOENT) => "not found".into(),
        _ => e.to_string(),
    }
}

/// The cause of an error: its I/O cause where it has one, else its own message.
fn cause_of(e: &anyhow::Error) -> String {
    io_error_of(e).map_or_else(|| format!("{e:#}"), io_cause)
}

/// An error of a write to the store, naming its real cause: out of space (or past a size
/// limit), permission, a read-only file system. Other errors pass unchanged.
fn storage_error(path: &Path, e: anyhow::Error) -> anyhow::Error {
    let Some(io) = io_error_of(&e) else {
        return e;
    };
    match io.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG) => anyhow!(
            "{}: {}: nothing after the store's last commit was written, and it reads as of that \
             commit; make room and run the command again",
            path.display(),
            io_cause(io)
        ),
        Some(libc::EACCES | libc::EPERM | libc::EROFS) => anyhow!(
            "{}: cannot write to the store: {}",
            path.display(),
            io_cause(io)
        ),
        _ => e,
    }
}

fn open_error(path: &Path, e: redb::DatabaseError) -> anyhow::Error {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => anyhow!(
            "{}: the store is in use by another process (or already open in this one)",
            path.display()
        ),
        redb::DatabaseError::RepairAborted => anyhow!(
            "{}: the store was not closed cleanly (an interrupted command) and cannot be repaired \
             while opened read-only; run any command that writes to it (it repairs on open)",
            path.display()
        ),
        redb::DatabaseError::Storage(redb::StorageError::Io(io)) => {
            let verb = match io.raw_os_error() {
                Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG) => "cannot grow the store",
                _ => "cannot open the store",
            };
            anyhow!("{}: {verb}: {}", path.display(), io_cause(&io))
        }
        e => anyhow!(
            "{}: damaged (not readable as a deltalogic store): {e}; run `deltalogic cache verify` \
             or restore a backup",
            path.display()
        ),
    }
}

fn version_refused(path: &Path, v: u32) -> String {
    format!(
        "{}: written by deltalogic schema version {v}; this build reads versions 1 to \
         {SCHEMA_VERSION}. Use a deltalogic that matches, or another --store.",
        path.display()
    )
}

/// Writes inside one transaction (see [`Store::write`]).
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
        let bytes = self.encode(record)?;
        Ok((id, self.put_raw(R::KIND, id, &bytes)?))
    }

    /// Replaces the stored value of a record that keeps its id: only provenance (a model's
    /// location) may differ between two values of one id.
    pub fn replace<R: Record>(&mut self, record: &R) -> Result<Id>
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
            + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
    {
        let id = record.id();
        let bytes = self.encode(record)?;
        let table = R::KIND.table;
        shield(self.path, Place::record(table, &id.0), || {
            let mut t = self.txn.open_table(R::KIND.definition())?;
            t.insert(&id.0, checksum::seal(table, &id.0, &bytes).as_slice())?;
            Ok(())
        })?;
        Ok(id)
    }

    fn encode<R: Record>(&self, record: &R) -> Result<rkyv::util::AlignedVec>
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
            + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
    {
        rkyv::to_bytes::<rancor::Error>(record).map_err(|e| {
            anyhow!(
                "{}: cannot encode a {} record: {e}",
                self.path.display(),
                R::KIND.noun
            )
        })
    }

    /// Stores an archive under its key, framed with its checksum. Bytes from another store must
    /// have been validated first (see `crate::eval::cache`); an existing record is kept.
    pub fn put_raw(&mut self, kind: Kind, id: Id, body: &[u8]) -> Result<bool> {
        let table = kind.table;
        shield(self.path, Place::record(table, &id.0), || {
            let mut t = self.txn.open_table(kind.definition())?;
            if t.get(&id.0)?.is_some() {
                return Ok(false);
            }
            t.insert(&id.0, checksum::seal(table, &id.0, body).as_slice())?;
            Ok(true)
        })
    }

    /// Points a name at a record (an earlier record of that name stays, unnamed).
    pub fn name(&mut self, names: Names, name: &str, id: Id) -> Result<()> {
        let def = names.table();
        shield(self.path, Place::table(def.name()), || {
            self.txn.open_table(def)?.insert(name, id.0)?;
            Ok(())
        })
    }

    /// Marks a score as merged without a recomputed check.
    pub fn mark_unverified(&mut self, score: Id) -> Result<()> {
        shield(
            self.path,
            Place::record("unverified_scores", &score.0),
            || {
                self.txn.open_table(UNVERIFIED)?.insert(&score.0, ())?;
                Ok(())
            },
        )
    }

    /// Clears a score's unverified mark: it was recomputed here and matched (`cache verify
    /// --recompute`).
    pub fn mark_verified(&mut self, score: Id) -> Result<()> {
        shield(
            self.path,
            Place::record("unverified_scores", &score.0),
            || {
                self.txn.open_table(UNVERIFIED)?.remove(&score.0)?;
                Ok(())
            },
        )
    }

    /// Registers where this store asks served model `model` (see [`Store::served_at`]).
    pub fn set_served_at(&mut self, model: Id, registration: &[u8]) -> Result<()> {
        shield(self.path, Place::record("served_at", &model.0), || {
            self.txn
                .open_table(SERVED_AT)?
                .insert(&model.0, registration)?;
            Ok(())
        })
    }

    /// Remembers the bytes written to an output file (see [`record_output`]).
    fn record_output(&mut self, key: &str, hash: [u8; 32]) -> Result<()> {
        shield(self.path, Place::table("outputs"), || {
            self.txn.open_table(OUTPUTS)?.insert(key, hash)?;
            Ok(())
        })
    }
}
