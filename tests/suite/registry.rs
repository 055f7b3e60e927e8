//! The store: schema checks, foreign and corrupt files, all-or-nothing writes, stable ids.

use deltalogic::datasets::{BaseItem, Origin};
use deltalogic::logic::{Label, World};
use deltalogic::store::{Record, Store, SCHEMA_VERSION};
use redb::{Database, TableDefinition};
use std::path::Path;

fn item(query: &str) -> BaseItem {
    BaseItem {
        origin: Origin {
            dataset: "proofwriter".into(),
            file: "dev.json".into(),
            position: "record 1".into(),
            external_id: "x".into(),
        },
        world: Some(World::Open),
        premises: vec![
            "Bob is cold.".into(),
            "If something is cold then it is red.".into(),
        ],
        query: query.into(),
        dataset_label: Some(Label::True),
        formal: None,
        extra: vec![],
    }
}

fn store(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("registry.redb")
}

#[test]
fn ids_are_content_addresses_fixed_across_machines() {
    let a = item("Bob is red.");
    let mut moved = a.clone();
    moved.origin.position = "record 99".into();
    moved.origin.file = "other.json".into();
    assert_eq!(
        a.id(),
        moved.id(),
        "where an item was seen is not part of its id"
    );
    assert_ne!(a.id(), item("Bob is blue.").id());
    // Pinned: a change here changes every stored id, so it needs a schema bump.
    assert_eq!(
        a.id().hex(),
        include_str!("../../fixtures/ids/base_item.hex").trim()
    );
}

#[test]
fn reopen_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = store(&dir);
    let id = {
        let reg = Store::open_write(&path).unwrap();
        reg.write(|w| Ok(w.put(&item("Bob is red."))?.0)).unwrap()
    };
    let reg = Store::open_write(&path).unwrap();
    assert_eq!(reg.get::<BaseItem>(&id).unwrap(), Some(item("Bob is red.")));
    assert_eq!(reg.count(BaseItem::KIND).unwrap(), 1);
    assert_eq!(reg.resolve(BaseItem::KIND, &id.short()).unwrap(), id);
}

#[test]
fn failed_write_leaves_store_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&store(&dir)).unwrap();
    reg.write(|w| w.put(&item("Bob is red.")).map(|_| ()))
        .unwrap();
    let before = reg.all::<BaseItem>().unwrap();
    let err = reg
        .write(|w| -> anyhow::Result<()> {
            w.put(&item("Bob is blue."))?;
            w.put(&item("Bob is green."))?;
            anyhow::bail!("interrupted half way")
        })
        .unwrap_err();
    assert!(err.to_string().contains("interrupted"));
    assert_eq!(reg.all::<BaseItem>().unwrap(), before);
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = store(&dir);
    drop(Store::open_write(&path).unwrap());
    {
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn
                .open_table(TableDefinition::<&str, &[u8]>::new("meta"))
                .unwrap();
            meta.insert(
                "schema_version",
                (SCHEMA_VERSION + 1).to_le_bytes().as_slice(),
            )
            .unwrap();
        }
        txn.commit().unwrap();
    }
    let msg = Store::open_write(&path).err().expect("refused").to_string();
    assert!(
        msg.contains(&format!("schema version {}", SCHEMA_VERSION + 1)),
        "{msg}"
    );
    assert!(msg.contains(&path.display().to_string()), "{msg}");
}

#[test]
fn foreign_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    // Not a database at all.
    let junk = dir.path().join("junk.redb");
    std::fs::write(&junk, b"this is not a redb file, it is a colleague's notes").unwrap();
    let msg = Store::open_write(&junk).err().expect("refused").to_string();
    assert!(msg.contains("junk.redb"), "{msg}");
    assert_eq!(
        std::fs::read(&junk).unwrap(),
        b"this is not a redb file, it is a colleague's notes"
    );
    // A redb database of some other program.
    let other = dir.path().join("other.redb");
    {
        let db = Database::create(&other).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(TableDefinition::<u64, u64>::new("theirs"))
            .unwrap()
            .insert(1, 2)
            .unwrap();
        txn.commit().unwrap();
    }
    let msg = Store::open_write(&other)
        .err()
        .expect("refused")
        .to_string();
    assert!(msg.contains("without a deltalogic schema"), "{msg}");
}

#[test]
fn corrupt_record_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = store(&dir);
    let id = {
        let reg = Store::open_write(&path).unwrap();
        reg.write(|w| Ok(w.put(&item("Bob is red."))?.0)).unwrap()
    };
    overwrite_value(&path, "items", id.0, &[0xff; 7]);
    let reg = Store::open_write(&path).unwrap();
    let msg = reg.get::<BaseItem>(&id).expect_err("corrupt").to_string();
    // Schema 2: the checksum refuses it before the archive is looked at.
    assert!(
        msg.contains("fails its checksum") && msg.contains(&id.short()) && msg.contains("items"),
        "{msg}"
    );
    assert!(reg.all::<BaseItem>().is_err());
}

fn overwrite_value(path: &Path, table: &str, key: [u8; 32], value: &[u8]) {
    let db = Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut t = txn
            .open_table(TableDefinition::<[u8; 32], &[u8]>::new(table))
            .unwrap();
        t.insert(key, value).unwrap();
    }
    txn.commit().unwrap();
}
