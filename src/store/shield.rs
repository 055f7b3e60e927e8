//! The store boundary. redb trusts its own pages: a few flipped bits in a branch page or a
//! length field make it panic (index out of range, failed asserts in the b-tree code) instead of
//! returning an error. Every call into redb goes through [`shield`], which turns such a panic
//! into an error naming the store, and the table and record where known.

use anyhow::{anyhow, Error, Result};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

thread_local! {
    /// Depth of shielded calls on this thread: their panics are reported as errors, so the
    /// default hook must not also print them.
    static SHIELDED: Cell<u32> = const { Cell::new(0) };
}

static QUIET_HOOK: Once = Once::new();

/// Where in the store a call was working, for the message.
#[derive(Clone, Copy, Default)]
pub struct Place<'a> {
    pub table: Option<&'a str>,
    pub record: Option<&'a [u8; 32]>,
}

impl<'a> Place<'a> {
    pub fn table(table: &'a str) -> Place<'a> {
        Place {
            table: Some(table),
            record: None,
        }
    }

    pub fn record(table: &'a str, record: &'a [u8; 32]) -> Place<'a> {
        Place {
            table: Some(table),
            record: Some(record),
        }
    }
}

/// Runs `f`, converting a panic inside it into a "store is damaged" error.
pub fn shield<T>(path: &Path, place: Place<'_>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    QUIET_HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if SHIELDED.with(Cell::get) == 0 {
                default(info);
            }
        }));
    });
    SHIELDED.with(|s| s.set(s.get() + 1));
    let out = panic::catch_unwind(AssertUnwindSafe(f));
    SHIELDED.with(|s| s.set(s.get() - 1));
    out.unwrap_or_else(|payload| Err(damaged(path, place, payload.as_ref())))
}

fn damaged(path: &Path, place: Place<'_>, payload: &(dyn std::any::Any + Send)) -> Error {
    let cause = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    let mut at = String::new();
    if let Some(t) = place.table {
        at += &format!(" (table `{t}`");
        if let Some(r) = place.record {
            at += &format!(", record {}", super::Id(*r).short());
        }
        at += ")";
    }
    anyhow!(
        "store {} is damaged{at}: the storage engine failed ({cause}); run `deltalogic cache verify` \
         or restore a backup",
        path.display()
    )
}
