//! Record kinds. A kind is declared once, beside its record type (`Record::KIND`): the table that
//! holds its records, the `derive_key` context of their ids and the noun messages use.
//! [`Declared`] adds what the generic walks need of the type itself — decoding a stored value,
//! checking that it hashes to its key, naming the records it references — so that verification,
//! merges, statistics and cache exports work from lists of declarations: the store's own
//! (`store::KINDS`, in `records`), the runner's and each benchmark's. The store names no benchmark type.

use super::{decode, Id, Record, Store};
use anyhow::{bail, Result};
use redb::TableDefinition;
use rkyv::api::high::HighValidator;
use rkyv::de::Pool;
use rkyv::rancor::{self, Strategy};

/// A kind of content-addressed record. None of its strings may change once records of it
/// exist: the table and the context are part of the stored bytes (checksums cover the table
/// name; ids hash under the context).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind {
    /// The redb table holding its records.
    pub table: &'static str,
    /// The blake3 `derive_key` context of its ids.
    pub context: &'static str,
    /// How messages name one of its records.
    pub noun: &'static str,
}

impl Kind {
    pub(super) fn definition(self) -> TableDefinition<'static, [u8; 32], &'static [u8]> {
        TableDefinition::new(self.table)
    }
}

/// Decodes a stored value, checks its key and gives what it references (see [`Declared::check`]).
type Check = fn(&Store, &Id, &[u8]) -> Result<Vec<(Kind, Id)>>;

/// A record kind with what a walk over stored records needs of its type.
#[derive(Clone, Copy)]
pub struct Declared {
    pub kind: Kind,
    check: Check,
}

impl Declared {
    /// The declaration of record type `R`.
    pub const fn of<R: Record>() -> Declared
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
            + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
    {
        Declared {
            kind: R::KIND,
            check: check::<R>,
        }
    }

    /// Decodes a stored value of this kind (validating its archive), checks that its key is the
    /// hash of its content, and gives the records it references ([`Record::references`]).
    pub fn check(&self, store: &Store, id: &Id, body: &[u8]) -> Result<Vec<(Kind, Id)>> {
        (self.check)(store, id, body)
    }
}

fn check<R: Record>(store: &Store, id: &Id, body: &[u8]) -> Result<Vec<(Kind, Id)>>
where
    R::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<R, Strategy<Pool, rancor::Error>>,
{
    let record: R = decode(body, store.path(), id)?;
    if !record.keyed_by(id, store.schema_version()) {
        bail!(
            "{}: {} {} does not hash to its key",
            store.path().display(),
            R::KIND.noun,
            id.short()
        );
    }
    Ok(record.references())
}
