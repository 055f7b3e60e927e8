//! `score` and `run` on the real default model (SmolLM2-135M, fetched by scripts/fetch_models.sh):
//! a second run computes nothing; kill -9 during scoring, then a rerun, ends with exactly the
//! scores of an uninterrupted run. Without the model file the tests fail under CI and are ignored
//! elsewhere (build.rs).

use deltalogic::eval::ScoreRecord;
use deltalogic::store::Registry;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn dl(store: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
        .arg("--store")
        .arg(store)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

fn scores(store: &Path) -> BTreeMap<String, Vec<f32>> {
    Registry::open_write(store)
        .unwrap()
        .all::<ScoreRecord>()
        .unwrap()
        .into_iter()
        .map(|(k, s)| (k.hex(), s.logprobs))
        .collect()
}

/// A small set and a registered model in a fresh store.
fn prepare(store: &Path, model: &Path) {
    dl(
        store,
        &["model", "add", model.to_str().unwrap(), "--name", "smol"],
    );
    dl(
        store,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            "1",
            "--per-type",
            "1",
            "--name",
            "small",
        ],
    );
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn second_score_computes_nothing_and_reports_the_same() {
    let model = crate::common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    prepare(&store, &model);
    let first = json(&dl(
        &store,
        &["--json", "score", "--model", "smol", "--set", "small"],
    ));
    assert_eq!(first["items"], 4);
    assert_eq!(first["scores_needed"], 24);
    assert!(first["scores_computed"].as_u64().unwrap() > 0);
    // The prefix tree computes every distinct prefix exactly once (eval/tree.rs).
    assert_eq!(first["forward_tokens"], first["tree_tokens"]);
    let svg = dir.path().join("f.svg");
    let report1 = dl(
        &store,
        &["report", "--format", "md", "--svg", svg.to_str().unwrap()],
    )
    .stdout;
    let second = json(&dl(
        &store,
        &["--json", "score", "--model", "smol", "--set", "small"],
    ));
    assert_eq!(second["scores_computed"], 0);
    assert_eq!(second["forward_tokens"], 0);
    assert_eq!(second["result"], first["result"]);
    let report2 = dl(
        &store,
        &["report", "--format", "md", "--svg", svg.to_str().unwrap()],
    )
    .stdout;
    assert_eq!(report1, report2);

    // The audit lists exactly the 24 scores the result read.
    let audit = json(&dl(
        &store,
        &[
            "--json",
            "audit",
            &first["result"].as_str().unwrap()[..12],
            "--verify",
            "3",
        ],
    ));
    assert_eq!(audit["audit"]["scores"].as_array().unwrap().len(), 24);
    assert_eq!(audit["verify"]["checked"], 3);
    assert!(
        audit["verify"]["max_abs_diff"].as_f64().unwrap() <= 1e-4,
        "recomputed scores match: {}",
        audit["verify"]
    );
    let all = scores(&store);
    assert_eq!(all.len(), 24, "nothing but the result's scores is stored");
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn killed_scoring_resumes_to_the_uninterrupted_result() {
    let model = crate::common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.redb");
    prepare(&whole, &model);
    let started = std::time::Instant::now();
    dl(&whole, &["score", "--model", "smol", "--set", "small"]);
    let took = started.elapsed();

    let cut = dir.path().join("cut.redb");
    prepare(&cut, &model);
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
        .args([
            "--store",
            cut.to_str().unwrap(),
            "score",
            "--model",
            "smol",
            "--set",
            "small",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // kill -9 part way through (the store is locked while the child runs, so by time).
    std::thread::sleep(took.mul_f64(0.6));
    let finished = child.try_wait().unwrap().is_some();
    child.kill().ok();
    child.wait().unwrap();
    let partial = scores(&cut).len();
    assert!(finished || partial < 24, "killed before the end");
    let rerun = json(&dl(
        &cut,
        &["--json", "score", "--model", "smol", "--set", "small"],
    ));
    assert_eq!(
        rerun["scores_found_in_cache"].as_u64().unwrap() as usize,
        partial.min(24)
    );
    // The same scores (a resumed prefix tree may split prefills differently: within 1e-4) and
    // exactly the same result and report.
    let (a, b) = (scores(&cut), scores(&whole));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, x) in &a {
        for (p, q) in x.iter().zip(&b[k]) {
            assert!((p - q).abs() <= 1e-4, "score {k}: {x:?} vs {:?}", b[k]);
        }
    }
    let report = |s: &Path| {
        json(&dl(
            s,
            &[
                "--json",
                "report",
                "--svg",
                // Each store writes its own figure: a file another store wrote is not this
                // store's output, and is refused.
                s.with_extension("svg").to_str().unwrap(),
            ],
        ))
    };
    assert_eq!(report(&cut), report(&whole));
}

/// The README's main command, `deltalogic run`, in an empty folder with the fetched model: cold it
/// computes every score of the default set, and the forward pass computes each prefix-tree token
/// exactly once; warm it computes nothing and reports the same results.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn the_main_command_runs_cold_then_warm_computing_nothing() {
    let model = crate::common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let main_job = || {
        let out = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
            .args(["--json", "run"])
            .current_dir(dir.path())
            .env("DELTALOGIC_MODELS", model.parent().unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "deltalogic run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out)
    };
    let cold = main_job();
    let score = &cold["score"];
    assert_eq!(score["items"], 100, "the default set: {score}");
    assert!(score["scores_computed"].as_u64().unwrap() > 0);
    assert_eq!(score["scores_found_in_cache"], 0);
    assert_eq!(score["forward_tokens"], score["tree_tokens"]);
    assert!(dir.path().join("store/registry.redb").is_file());

    let warm = main_job();
    assert_eq!(warm["score"]["scores_computed"], 0);
    assert_eq!(warm["score"]["forward_tokens"], 0);
    assert_eq!(
        warm["score"]["scores_found_in_cache"],
        score["scores_needed"]
    );
    assert_eq!(warm["results"], cold["results"]);
}
