//! Migrations, in place on the first writing open, each in one transaction (all or nothing):
//! - schema 1 -> 3: the old file is copied beside the store, then every value is rewritten with
//!   its checksum, and results of both schema 1 kinds become the one kind, under today's ids;
//! - schema 2 -> 3: results are re-keyed under ids that cover their answers. Only keys change
//!   (and so the checksums, which cover the key): no backup is made.

use super::{checksum, legacy, Id, Record, ResultRecord, Store, META, SCHEMA_VERSION};
use anyhow::{bail, Context, Result};
use redb::{ReadableTable, TableHandle};
use std::path::{Path, PathBuf};

/// Where the schema 1 file is kept: `registry.redb` -> `registry.redb.v1.bak`.
pub(super) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".v1.bak");
    PathBuf::from(name)
}

/// Copies the (closed) schema 1 file beside itself. An existing backup is never overwritten;
/// one equal to the file (left by an interrupted migration) is kept as it is.
pub(super) fn backup_v1(path: &Path) -> Result<()> {
    let backup = backup_path(path);
    if backup.exists() {
        if std::fs::read(&backup).ok() == std::fs::read(path).ok() {
            return Ok(());
        }
        bail!(
            "{}: a schema 1 store to migrate, but its backup {} already exists; move that file \
             away and run the command again",
            path.display(),
            backup.display()
        );
    }
    std::fs::copy(path, &backup).with_context(|| {
        format!(
            "{}: cannot copy the schema 1 store to {} before migrating it",
            path.display(),
            backup.display()
        )
    })?;
    Ok(())
}

/// A schema 1 table's rows, as the rows to store in schema 2 (each under its table and key, as
/// an rkyv archive without its checksum). Results of both schema 1 kinds (DeltaLogic results in
/// `results`, question results in `question_results`) become the one result kind; every other
/// table keeps its rows. Rows of every table are read before any is written.
fn convert_v1(table: &str, rows: Vec<(Id, Vec<u8>)>) -> Result<Vec<(String, Id, Vec<u8>)>> {
    if table != legacy::EPISODE_RESULTS_V1 && table != legacy::QUESTION_RESULTS_V1 {
        return Ok(rows
            .into_iter()
            .map(|(id, body)| (table.to_string(), id, body))
            .collect());
    }
    rows.into_iter()
        .map(|(key, body)| {
            let record = legacy::upgrade_result(table, key, &body)?;
            let bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&record).map_err(|e| {
                anyhow::anyhow!("cannot encode upgraded result {}: {e}", key.short())
            })?;
            Ok((
                ResultRecord::KIND.table.to_string(),
                record.id(),
                bytes.to_vec(),
            ))
        })
        .collect()
}

pub(super) fn v1_to_current(reg: &Store) -> Result<()> {
    reg.transaction(|txn| {
        let mut rows = Vec::new();
        // Every table of records the file holds, whatever their kind: the store knows its own
        // tables of names and marks, not every benchmark's records.
        let tables: Vec<String> = txn
            .list_tables()?
            .map(|t| t.name().to_string())
            .filter(|name| super::is_record_table(name))
            .collect();
        for name in &tables {
            let def = redb::TableDefinition::<[u8; 32], &[u8]>::new(name);
            let old: Vec<(Id, Vec<u8>)> = txn
                .open_table(def)?
                .iter()?
                .map(|e| e.map(|(k, v)| (Id(k.value()), v.value().to_vec())))
                .collect::<Result<_, _>>()?;
            txn.delete_table(def)?;
            rows.extend(
                convert_v1(name, old).with_context(|| format!("migrating table `{name}`"))?,
            );
        }
        for (table, id, body) in rows {
            let def = redb::TableDefinition::<[u8; 32], &[u8]>::new(&table);
            txn.open_table(def)?
                .insert(&id.0, checksum::seal(&table, &id.0, &body).as_slice())?;
        }
        txn.open_table(META)?
            .insert("schema_version", SCHEMA_VERSION.to_le_bytes().as_slice())?;
        Ok(())
    })
    .with_context(|| {
        format!(
            "{}: migrating from schema 1 to {SCHEMA_VERSION} failed; the store is unchanged",
            reg.path().display()
        )
    })?;
    eprintln!(
        "{}: migrated from schema 1 to {SCHEMA_VERSION} (every value now carries a checksum, \
         results of every benchmark are one kind and their ids cover their answers); the schema 1 \
         file is kept as {}",
        reg.path().display(),
        backup_path(reg.path()).display()
    );
    Ok(())
}

/// Schema 2 -> 3: every result under the id that covers its answers. A value that fails its
/// checksum or does not decode stays under its old key, for `cache verify` to report.
pub(super) fn v2_to_v3(reg: &Store) -> Result<()> {
    let mut rekeyed = 0;
    reg.transaction(|txn| {
        let table = ResultRecord::KIND.table;
        let mut moves = Vec::new();
        match txn.open_table(ResultRecord::KIND.definition()) {
            Ok(t) => {
                for entry in t.iter()? {
                    let (k, v) = entry?;
                    let old = Id(k.value());
                    let Some(body) = checksum::unseal(table, &old.0, v.value()) else {
                        continue;
                    };
                    let Ok(record) = rkyv::from_bytes::<ResultRecord, rkyv::rancor::Error>(body)
                    else {
                        continue;
                    };
                    let new = record.id();
                    if new != old {
                        moves.push((old, new, body.to_vec()));
                    }
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
        let mut t = txn.open_table(ResultRecord::KIND.definition())?;
        for (old, new, body) in &moves {
            t.remove(&old.0)?;
            t.insert(&new.0, checksum::seal(table, &new.0, body).as_slice())?;
        }
        rekeyed = moves.len();
        drop(t);
        txn.open_table(META)?
            .insert("schema_version", SCHEMA_VERSION.to_le_bytes().as_slice())?;
        Ok(())
    })
    .with_context(|| {
        format!(
            "{}: migrating from schema 2 to {SCHEMA_VERSION} failed; the store is unchanged",
            reg.path().display()
        )
    })?;
    eprintln!(
        "{}: migrated from schema 2 to {SCHEMA_VERSION}: {rekeyed} result(s) re-keyed under ids \
         that cover their answers (nothing else changed)",
        reg.path().display()
    );
    Ok(())
}
