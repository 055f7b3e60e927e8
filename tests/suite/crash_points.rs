//! kill -9 at seeded moments of ingest, build, merge and score: after each kill the store opens
//! (a writing open repairs an unclean shutdown), every record verifies, and rerunning the
//! command ends with exactly what an uninterrupted run stores. 56 moments in all; the scoring
//! moments need the real SmolLM2 (ignored outside CI when it is missing: build.rs).

use crate::common;

use deltalogic::eval::{cache, Normalisation};
use deltalogic::store::{Names, Store};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn command(store: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_deltalogic"));
    c.arg("--store")
        .arg(store)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn ok(store: &Path, args: &[&str]) -> Output {
    let out = command(store, args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Seeded fractions in [0, 1), one per moment, spread over the interval (one per 1/n slice).
fn moments(seed: u64, n: usize) -> Vec<f64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (i as f64 + (x >> 11) as f64 / (1u64 << 53) as f64) / n as f64
        })
        .collect()
}

/// Runs `args` to the end on `store`, timed.
fn timed(store: &Path, args: &[&str]) -> Duration {
    let t = Instant::now();
    ok(store, args);
    t.elapsed()
}

/// Kills `args` after `delay`; returns whether it had already finished.
fn kill_after(store: &Path, args: &[&str], delay: Duration) -> bool {
    let mut child = command(store, args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let finished = child.try_wait().unwrap().is_some();
    child.kill().ok();
    child.wait().unwrap();
    finished
}

/// The store opens after the kill and every record verifies.
fn opens_and_verifies(store: &Path) {
    if !store.exists() {
        return; // killed before the store was created
    }
    let reg = Store::open_write(store).expect("the store opens after a kill");
    let report = cache::verify(&reg, deltalogic::benchmarks::ALL).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// What a store holds, for comparing two stores: counts per kind, sets, names, results.
fn holdings(store: &Path) -> Value {
    let reg = Store::open_read(store).unwrap();
    let stats = cache::stats(&reg, deltalogic::benchmarks::ALL).unwrap();
    // The report as a user reads it, byte for byte (empty before anything is scored).
    let entries = deltalogic::report::entries(&reg, deltalogic::benchmarks::ALL, &[], &[]).unwrap();
    let report = deltalogic::report::render(&entries, deltalogic::report::Format::Json).unwrap();
    serde_json::json!({
        "report": report,
        "records": stats.records,
        "scores_per_model": stats.scores_per_model,
        "sets": reg.names(Names::Sets).unwrap(),
        "models": reg.names(Names::Models).unwrap(),
    })
}

/// `n` kills of `args` at seeded moments, each on a copy of `before` (None: a new store), then a
/// rerun; every store ends as the uninterrupted one did. Returns how many kills hit a running
/// process.
fn crash_points(
    dir: &Path,
    name: &str,
    before: Option<&Path>,
    args: &[&str],
    seed: u64,
    n: usize,
) -> usize {
    let fresh = |path: &PathBuf| {
        if let Some(b) = before {
            std::fs::copy(b, path).unwrap();
        }
    };
    let whole = dir.join(format!("{name}-whole.redb"));
    fresh(&whole);
    let took = timed(&whole, args);
    let want = holdings(&whole);
    let mut hit = 0;
    for (i, f) in moments(seed, n).into_iter().enumerate() {
        let store = dir.join(format!("{name}-{i}.redb"));
        fresh(&store);
        if !kill_after(&store, args, took.mul_f64(f)) {
            hit += 1;
        }
        opens_and_verifies(&store);
        ok(&store, args);
        assert_eq!(
            holdings(&store),
            want,
            "{name}: killed at {f:.3} of {took:?}"
        );
        std::fs::remove_file(&store).unwrap();
    }
    hit
}

#[test]
#[cfg_attr(
    dataset_missing = "proofwriter/logic-lm",
    ignore = "needs the dataset proofwriter/logic-lm (deltalogic datasets where)"
)]
fn ingest_build_and_merge_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let proofwriter = crate::common::dataset("proofwriter/logic-lm");
    let ingest = ["ingest", "proofwriter", proofwriter.to_str().unwrap()];
    let mut hits = crash_points(d, "ingest", None, &ingest, 1, 16);

    let ingested = d.join("ingested.redb");
    ok(&ingested, &ingest);
    let build = [
        "build",
        "robustlr",
        "--from",
        "proofwriter",
        "--per-set",
        "4",
        "--seed",
        "3",
    ];
    hits += crash_points(d, "build-robustlr", Some(&ingested), &build, 2, 12);
    let build = [
        "build",
        "deltalogic",
        "--from",
        "generated",
        "--per-type",
        "20",
        "--seed",
        "4",
    ];
    hits += crash_points(d, "build-deltalogic", Some(&ingested), &build, 3, 12);

    // A colleague's cache: a few hundred episodes scored by the stand-in model.
    let theirs = d.join("theirs.redb");
    {
        let reg = Store::open_write(&theirs).unwrap();
        common::generated_set(&reg, "shared", 5, 40);
        common::score_with(&reg, "m1", "shared", None, Normalisation::Mean);
    }
    let cache_file = d.join("cache.redb");
    common::export(
        &Store::open_write(&theirs).unwrap(),
        common::model_id("m1"),
        "shared",
        &cache_file,
    );
    let merge = [
        "cache",
        "merge",
        cache_file.to_str().unwrap(),
        "--no-verify",
    ];
    hits += crash_points(d, "merge", Some(&ingested), &merge, 4, 12);
    // Most moments must fall inside the commands, or the test would check nothing.
    assert!(hits >= 26, "only {hits} of 52 kills hit a running command");
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn scoring_survives_kill_9() {
    let model = common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prepared = d.join("prepared.redb");
    ok(
        &prepared,
        &["model", "add", model.to_str().unwrap(), "--name", "smol"],
    );
    ok(
        &prepared,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--per-type",
            "1",
            "--seed",
            "6",
            "--name",
            "small",
        ],
    );
    // The dialogue template asks for scores and a generation per episode: a kill may land in
    // either, and the rerun must end with the same records.
    let score = [
        "score",
        "--model",
        "smol",
        "--set",
        "small",
        "--template",
        "dialogue",
    ];
    let hits = crash_points(d, "score", Some(&prepared), &score, 5, 4);
    assert!(hits >= 2, "only {hits} of 4 kills hit a running scoring");
}
