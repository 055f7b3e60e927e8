//! Evaluations kept in the store (`eval::evaluated`): a report that reads them back prints the
//! same bytes as one that computes them; a forged one is caught by `cache verify` and never
//! travels in a merge; a lost scores table is still refused.

use crate::common;

use common::{dl, score_with};
use deltalogic::eval::cache::{self, MergeOptions};
use deltalogic::eval::evaluated::EvaluationRecord;
use deltalogic::eval::{Normalisation, ResultRecord};
use deltalogic::report::{self, Format};
use deltalogic::store::{Record, Store};
use std::path::{Path, PathBuf};

/// A store with four results: two stand-in models on a DeltaLogic set, each under two
/// normalisations (so the report has its side-by-side and robustness sections).
fn scored(dir: &Path) -> PathBuf {
    let path = dir.join("scored.redb");
    let reg = Store::open_write(&path).unwrap();
    common::generated_set(&reg, "set", 3, 6);
    for model in ["m1", "m2"] {
        for norm in [Normalisation::Mean, Normalisation::Sum] {
            score_with(&reg, model, "set", None, norm);
        }
    }
    path
}

fn copy(from: &Path, to: PathBuf) -> PathBuf {
    std::fs::copy(from, &to).unwrap();
    to
}

fn kept(path: &Path) -> u64 {
    Store::open_read(path)
        .unwrap()
        .count(EvaluationRecord::KIND)
        .unwrap()
}

/// Every format a report prints, and its figure (named after the store: a figure is only
/// overwritten by the store that wrote it), through the binary.
fn reported(store: &Path, dir: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for format in ["md", "csv", "json"] {
        let stem = store.file_stem().unwrap().to_str().unwrap();
        let svg = dir.join(format!("{stem}-{format}.svg"));
        let printed = dl(
            store,
            &["report", "--format", format, "--svg", svg.to_str().unwrap()],
        );
        out.push(printed.stdout);
        out.push(std::fs::read(&svg).unwrap());
    }
    out
}

/// The same, computed by the library over a read-only store, which keeps nothing.
fn computed(store: &Path) -> Vec<Vec<u8>> {
    let reg = Store::open_read(store).unwrap();
    let entries = report::entries(&reg, deltalogic::benchmarks::ALL, &[], &[]).unwrap();
    [Format::Md, Format::Csv, Format::Json]
        .into_iter()
        .flat_map(|f| {
            [
                report::render(&entries, f).unwrap().into_bytes(),
                report::svg(&entries).into_bytes(),
            ]
        })
        .collect()
}

#[test]
fn a_report_from_kept_evaluations_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let store = scored(dir.path());
    let results = Store::open_read(&store)
        .unwrap()
        .count(ResultRecord::KIND)
        .unwrap();
    assert_eq!(results, 4);

    let fresh = computed(&store);
    assert_eq!(kept(&store), 0, "a read-only store is only read");
    // The first report computes and keeps one evaluation per result; the next read them.
    let first = reported(&store, dir.path());
    assert_eq!(kept(&store), results);
    let again = reported(&store, dir.path());
    assert_eq!(kept(&store), results, "nothing computed again");
    for (i, ((a, b), c)) in fresh.iter().zip(&first).zip(&again).enumerate() {
        assert!(a == b && b == c, "output {i} differs");
    }
    // Read back by the library too (the store holds them now).
    assert_eq!(computed(&store), fresh);
}

/// Changes the first overall metric value of every kept evaluation and seals it again, as a
/// forger can: the checksum is no signature.
fn forge(store: &Path) {
    let reg = Store::open_write(store).unwrap();
    let all = reg.all::<EvaluationRecord>().unwrap();
    assert!(!all.is_empty());
    reg.write(|w| {
        for (id, mut e) in all {
            let m = e.groups[0].metrics[0].as_mut().unwrap();
            m.value = Some(m.value.unwrap() / 2.0 + 0.01);
            assert_eq!(
                w.replace(&e)?,
                id,
                "the key is what it names, not its value"
            );
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_forged_evaluation_is_caught_and_never_merged() {
    let dir = tempfile::tempdir().unwrap();
    let store = scored(dir.path());
    let honest = computed(&store);
    dl(&store, &["report", "--format", "json"]);
    let forged = copy(&store, dir.path().join("forged.redb"));
    forge(&forged);
    // The forgery is what the report would read...
    assert_ne!(computed(&forged), honest);
    // ...and `cache verify` recomputes every kept evaluation and names it.
    let out = common::deltalogic(&forged)
        .args(["cache", "verify"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert_eq!(
        text.matches("differs from its recomputation").count(),
        4,
        "{text}"
    );
    // The honest store verifies.
    dl(&store, &["cache", "verify"]);

    // A merge brings no evaluation in: the receiving store computes its own.
    let target_path = dir.path().join("target.redb");
    let target = Store::open_write(&target_path).unwrap();
    let other = cache::open_incoming(&target, &forged).unwrap();
    let mut unavailable = |_: &cache::Computed| Ok(None);
    cache::merge(&target, &other, MergeOptions::new(&mut unavailable)).unwrap();
    drop(other);
    drop(target);
    assert_eq!(kept(&target_path), 0);
    assert_eq!(
        reported(&target_path, dir.path()),
        reported(&store, dir.path())
    );
    assert_eq!(computed(&target_path), honest);
}

#[test]
fn a_store_that_lost_its_scores_is_refused_despite_kept_evaluations() {
    let dir = tempfile::tempdir().unwrap();
    let store = scored(dir.path());
    dl(&store, &["report", "--format", "json"]);
    assert_eq!(kept(&store), 4);
    {
        let db = redb::Database::create(&store).unwrap();
        let txn = db.begin_write().unwrap();
        let scores: redb::TableDefinition<[u8; 32], &[u8]> = redb::TableDefinition::new("scores");
        assert!(txn.delete_table(scores).unwrap());
        txn.commit().unwrap();
    }
    let out = common::deltalogic(&store)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("cannot be backed by its scores"), "{err}");
}
