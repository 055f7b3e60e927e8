//! Stores written by schema 1 keep working: `fixtures/v1` was made by the last schema-1 code
//! (`scripts/make_v1_fixture.sh`) with the stand-in model. Opened by today's code, it is migrated
//! in place after a backup, reports the same numbers, every result re-derives from its scores,
//! and a rescore finds every score. Result ids changed in schema 3 (they cover the answers): a
//! migrated result is stored under its new id, and its old one is its `legacy_id`.

use crate::common;

use common::{ByteModel, NoChat};
use deltalogic::benchmarks;
use deltalogic::eval::ResultRecord;
use deltalogic::eval::{self, Normalisation, Quiet};
use deltalogic::store::{Id, Names, Record, Store};

fn hex32(hex: &str) -> [u8; 32] {
    let bytes: Vec<u8> = (0..64)
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    bytes.try_into().unwrap()
}
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/v1")
        .join(name)
}

/// A copy of the fixture store, migrated by a writing open.
fn migrated(dir: &tempfile::TempDir) -> Store {
    let path = dir.path().join("registry.redb");
    std::fs::copy(fixture("store.redb"), &path).unwrap();
    let read = Store::open_read(&path).unwrap();
    assert_eq!(read.schema_version(), 1);
    let e = read.require_current().unwrap_err().to_string();
    assert!(e.contains("to migrate it in place"), "{e}");
    drop(read);
    Store::open_write(&path).unwrap()
}

/// (model, set, template, normalisation) → (result id, metrics) of a report's JSON.
type Keyed = BTreeMap<(String, String, String, String), (String, Value)>;

fn key(r: &Value) -> (String, String, String, String) {
    let s = |k: &str| r[k].as_str().unwrap().to_string();
    (s("model"), s("set"), s("template"), s("normalisation"))
}

#[test]
fn a_schema_1_store_is_migrated_and_reports_the_same_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let reg = migrated(&dir);
    assert_eq!(reg.schema_version(), deltalogic::store::SCHEMA_VERSION);
    let backup = dir.path().join("registry.redb.v1.bak");
    assert_eq!(
        std::fs::read(&backup).unwrap(),
        std::fs::read(fixture("store.redb")).unwrap(),
        "the backup is the schema 1 file"
    );

    let old: Value =
        serde_json::from_slice(&std::fs::read(fixture("report.json")).unwrap()).unwrap();
    let mut want = Keyed::new();
    for r in old["deltalogic"].as_array().unwrap() {
        want.insert(
            key(r),
            (
                r["result_id"].as_str().unwrap().into(),
                r["breakdown"].clone(),
            ),
        );
    }
    let mut question_ids = Vec::new();
    for r in old["questions"].as_array().unwrap() {
        // Schema 1 tagged a question result's metrics with their kind; the numbers are the rest.
        let mut m = r["metrics"].clone();
        m.as_object_mut().unwrap().remove("metrics");
        question_ids.push(r["result_id"].as_str().unwrap().to_string());
        want.insert(key(r), (String::new(), m));
    }
    assert_eq!(want.len(), 6, "four DeltaLogic and two RobustLR results");

    let entries = deltalogic::report::entries(&reg, deltalogic::benchmarks::ALL, &[], &[]).unwrap();
    let got: Vec<Value> = entries
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(got.len(), want.len());
    for r in &got {
        let (id, metrics) = &want[&key(r)];
        assert_eq!(&r["metrics"], metrics, "{:?}", key(r));
        let new_id = Id(hex32(r["result_id"].as_str().unwrap()));
        let record = reg.get::<ResultRecord>(&new_id).unwrap().unwrap();
        assert_eq!(record.id(), new_id, "stored under today's id");
        if !id.is_empty() {
            // A DeltaLogic result's old id is its legacy id; a question result had another kind.
            assert_eq!(&record.legacy_id().hex(), id);
        } else {
            assert!(!question_ids.contains(&new_id.hex()));
        }
    }
    let underived =
        deltalogic::eval::cache::verify_results(&reg, deltalogic::benchmarks::ALL).unwrap();
    assert!(underived.is_empty(), "{underived:?}");

    // Every score is found: rescoring each set with its stand-in model computes nothing and
    // gives the same result ids.
    let ids: Vec<String> = got
        .iter()
        .map(|r| r["result_id"].as_str().unwrap().to_string())
        .collect();
    for (set_name, norms) in [
        ("dl", &[Normalisation::Mean, Normalisation::Sum][..]),
        ("rl", &[Normalisation::Mean][..]),
    ] {
        let (set_id, set) = reg.set_by_name(set_name).unwrap().unwrap();
        let benchmark = benchmarks::ALL.named(&set.benchmark).unwrap();
        for model in ["m1", "m2"] {
            let model_id = reg.lookup(Names::Models, model).unwrap().unwrap();
            for &norm in norms {
                let out = eval::run(
                    &reg,
                    &eval::Run {
                        benchmark,
                        set_id,
                        set: &set,
                        models: eval::Participants {
                            subject: model_id,
                            info: &NoChat,
                            judge: None,
                        },
                        template: benchmark.templates()[0],
                        norms: vec![norm],
                        shard: None,
                        execution: Default::default(),
                    },
                    |_| -> anyhow::Result<eval::Engine<ByteModel>> {
                        panic!("nothing may be computed")
                    },
                    &mut Quiet,
                )
                .unwrap();
                assert_eq!(out.report.scores_computed, 0);
                assert!(
                    ids.contains(&out.result.hex()),
                    "{set_name} {model} {norm:?}"
                );
            }
        }
    }
    drop(reg);
    // A second open finds schema 2: no second migration, the backup untouched.
    let again = Store::open_write(&dir.path().join("registry.redb")).unwrap();
    assert_eq!(again.schema_version(), deltalogic::store::SCHEMA_VERSION);
}
