//! `score` and `run` on the real default model (SmolLM2-135M, fetched by scripts/fetch_models.sh):
//! a second run computes nothing; kill -9 during scoring, then a rerun, ends with exactly the
//! scores of an uninterrupted run. Without the model file the tests fail under CI and are ignored
//! elsewhere (build.rs).

use deltalogic::eval::ScoreRecord;
use deltalogic::store::Store;
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
    Store::open_write(store)
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
    crate::common::build_generated(store, "1", "1", "small");
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
    // The text audit gives each score's time as ISO 8601 UTC, `at 2026-11-26T05:06:17Z`.
    let text = dl(&store, &["audit", &first["result"].as_str().unwrap()[..12]]).stdout;
    let text = String::from_utf8(text).unwrap();
    let times: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split(" at ").nth(1))
        .collect();
    assert_eq!(times.len(), 24, "{text}");
    for t in times {
        let b = t.as_bytes();
        assert!(
            t.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[19] == b'Z' && t.starts_with("20"),
            "{t}"
        );
    }
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

/// Two stores in one folder: the outputs each writes beside itself are named after it, so
/// building, scoring, reporting and exporting with one never trips over the other's files.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn two_stores_share_a_folder() {
    let model = crate::common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let stores = [dir.path().join("a.redb"), dir.path().join("b.redb")];
    for store in &stores {
        prepare(store, &model);
    }
    for store in &stores {
        dl(store, &["score", "--model", "smol", "--set", "small"]);
    }
    for _ in 0..2 {
        for store in &stores {
            dl(store, &["report"]);
            dl(store, &["--json", "report", "--format", "csv"]);
        }
    }
    for (store, stem) in stores.iter().zip(["a", "b"]) {
        let figure = dir.path().join(format!("{stem}.figure.svg"));
        assert!(figure.is_file(), "{} has its own figure", store.display());
        let out = dir.path().join(format!("{stem}-cache.redb"));
        let samples = dir.path().join(format!("{stem}-lm-eval"));
        let items = dir.path().join(format!("{stem}-items.jsonl"));
        for args in [
            vec![
                "cache",
                "export",
                "--model",
                "smol",
                "--set",
                "small",
                "-o",
                out.to_str().unwrap(),
            ],
            vec![
                "export",
                "samples",
                "--set",
                "small",
                "-o",
                samples.to_str().unwrap(),
            ],
            vec![
                "export",
                "items",
                "--set",
                "small",
                "-o",
                items.to_str().unwrap(),
            ],
        ] {
            dl(store, &args);
        }
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "a-cache.redb",
            "a-items.jsonl",
            "a-lm-eval",
            "a.figure.svg",
            "a.redb",
            "b-cache.redb",
            "b-items.jsonl",
            "b-lm-eval",
            "b.figure.svg",
            "b.redb"
        ]
    );
}

/// The README's main command, `deltalogic run`, in an empty folder with the fetched model. Cold, it
/// computes the default set's scores, each prefix-tree token exactly once, writes the full report
/// beside the store, named after it, and ends with its summary (the headline numbers under
/// `mean`, the conclusions that flip, where the report and figure are, the next commands with a
/// short result id `audit` takes). Warm, it computes nothing and prints the same summary.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn the_main_command_runs_cold_then_warm_computing_nothing() {
    let model = crate::common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let run = |flags: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
            .args(flags)
            .arg("run")
            .current_dir(dir.path())
            .env("DELTALOGIC_MODELS", model.parent().unwrap())
            .env_remove("DELTALOGIC_STORE")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "deltalogic run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let first = String::from_utf8(run(&[]).stdout).unwrap();
    for needle in [
        "normalisation `mean`",
        "Inertia",
        "(n=",
        "store/registry.report.md",
        "store/registry.report.csv",
        "store/registry.report.json",
        "store/registry.figure.svg",
        "deltalogic report --norm all",
        "deltalogic model add",
    ] {
        assert!(first.contains(needle), "no `{needle}` in:\n{first}");
    }
    assert!(
        first.contains("Every conclusion holds") || first.contains("Conclusions that change"),
        "{first}"
    );
    // Every prefix of the tree through the model exactly once.
    let counts: Vec<u64> = first
        .lines()
        .find(|l| l.contains("tokens through the model"))
        .unwrap_or_else(|| panic!("no token counts in:\n{first}"))
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(counts[0], counts[1], "forward vs prefix-tree tokens");
    // No full-length ids; the audit command's id is one `audit` takes.
    assert!(
        !first
            .split(|c: char| !c.is_ascii_hexdigit())
            .any(|w| w.len() == 64),
        "{first}"
    );
    let id = first
        .lines()
        .find_map(|l| l.trim().strip_prefix("deltalogic audit "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    let store = dir.path().join("store/registry.redb");
    let audit = String::from_utf8(dl(&store, &["audit", &id]).stdout).unwrap();
    assert!(audit.contains("normalisation mean"), "{audit}");
    // The full report holds every normalisation; the summary is short.
    let md = std::fs::read_to_string(dir.path().join("store/registry.report.md")).unwrap();
    assert!(md.contains("calibrated") && md.contains("### DeltaLogic by edit-type"));
    assert!(first.lines().count() < 40, "{first}");

    let again = String::from_utf8(run(&[]).stdout).unwrap();
    assert!(again.contains("0 computed"), "{again}");
    let summary = |s: &str| s.split_once("\n\n").unwrap().1.to_string();
    assert_eq!(summary(&first), summary(&again));
    let warm = json(&run(&["--json"]));
    assert_eq!(warm["score"]["items"], 100, "the default set");
    assert_eq!(warm["score"]["scores_computed"], 0);
    assert_eq!(warm["score"]["forward_tokens"], 0);
    assert_eq!(
        warm["score"]["scores_found_in_cache"],
        warm["score"]["scores_needed"]
    );
}
