//! The frame around every stored value (schema 2): `checksum (32 bytes) ‖ rkyv archive`.
//!
//! The checksum is blake3 in key-derivation mode over the table name, the record's key and the
//! archive. A content id already protects what a record *is*; the checksum also protects what
//! the id does not hash (a score's log-probs, a file's provenance) and catches a value moved
//! under another key or into another table.

/// Length of the checksum in front of every value.
pub const LEN: usize = 32;

const CONTEXT: &str = "deltalogic 2026-11-23 stored value checksum v2";

fn sum(table: &str, key: &[u8], body: &[u8]) -> [u8; LEN] {
    let mut h = blake3::Hasher::new_derive_key(CONTEXT);
    h.update(&(table.len() as u64).to_le_bytes());
    h.update(table.as_bytes());
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key);
    h.update(body);
    *h.finalize().as_bytes()
}

/// The stored form of `body` under `key` in `table`.
pub fn seal(table: &str, key: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(LEN + body.len());
    out.extend_from_slice(&sum(table, key, body));
    out.extend_from_slice(body);
    out
}

/// The archive inside a stored value, or `None` when the value is not what was written there.
pub fn unseal<'a>(table: &str, key: &[u8], stored: &'a [u8]) -> Option<&'a [u8]> {
    if stored.len() < LEN {
        return None;
    }
    let (check, body) = stored.split_at(LEN);
    (check == sum(table, key, body)).then_some(body)
}
