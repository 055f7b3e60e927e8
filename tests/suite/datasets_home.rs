//! The datasets folder: `datasets where` names it and says per dataset whether it is found,
//! missing or another version; `ingest` and the builds that read files take their default paths
//! from it; and build.rs marks a test ignored exactly when a dataset it needs is absent.

use deltalogic::datasets::home::{self, DATASETS};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The binary on a store in `dir`, with `DELTALOGIC_DATASETS` set to `datasets` (or removed).
fn run(dir: &Path, datasets: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_deltalogic"));
    c.arg("--store").arg(dir.join("s.redb")).args(args);
    match datasets {
        Some(d) => c.env(home::VAR, d),
        None => c.env_remove(home::VAR),
    };
    c.output().unwrap()
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--json prints JSON")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Each dataset's entry of `datasets where --json`, by folder.
fn statuses(listing: &Value) -> Vec<(String, String)> {
    let list = listing["datasets"].as_array().unwrap();
    list.iter()
        .map(|d| {
            let field = |k: &str| d[k].as_str().unwrap().to_string();
            (field("folder"), field("status"))
        })
        .collect()
}

/// The folder the tests read holds every dataset at the version of the manifest: every file's
/// sha256 checked, nothing else in their folders. No store is opened or made.
#[test]
#[cfg_attr(
    any(
        dataset_missing = "folio/v0.0",
        dataset_missing = "folio/logic-lm",
        dataset_missing = "proofwriter/logic-lm",
        dataset_missing = "ruletaker_cwa",
        dataset_missing = "belief_r",
        dataset_missing = "robustlr/glore_subset",
        dataset_missing = "clomo",
        dataset_missing = "gsm8k/openai",
        dataset_missing = "gsm8k/satlm"
    ),
    ignore = "needs every dataset (deltalogic datasets where)"
)]
fn where_finds_every_dataset_at_its_version_in_the_folder_the_tests_read() {
    let dir = tempfile::tempdir().unwrap();
    let folder = crate::common::dataset("");
    let listing = json(&run(
        dir.path(),
        Some(&folder),
        &["--json", "datasets", "where"],
    ));
    assert_eq!(listing["dir"].as_str(), folder.to_str());
    assert_eq!(listing["chosen"], "variable");
    let expected: Vec<(String, String)> = DATASETS
        .iter()
        .map(|d| (d.folder.to_string(), "found".to_string()))
        .collect();
    assert_eq!(statuses(&listing), expected);
    assert!(!dir.path().join("s.redb").exists(), "no store is made");
}

/// A folder holding nothing, another version of one dataset, and part of another: each is named,
/// with the files that make it so and where the known version comes from.
#[test]
fn where_names_missing_datasets_and_other_versions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let satlm = data.join("gsm8k/satlm");
    std::fs::create_dir_all(&satlm).unwrap();
    std::fs::write(satlm.join("gsm_test.json"), "[]").unwrap();
    std::fs::write(satlm.join("README.md"), "documentation is not data").unwrap();
    let openai = data.join("gsm8k/openai");
    std::fs::create_dir_all(openai.join(".git")).unwrap();
    std::fs::write(openai.join(".git/HEAD"), "a hidden folder is not data").unwrap();
    std::fs::write(openai.join("example_model_solutions.jsonl"), "{}").unwrap();

    let data_arg = data.to_str().unwrap();
    let listing = json(&run(
        dir.path(),
        None,
        &["--json", "datasets", "where", "--datasets", data_arg],
    ));
    assert_eq!(listing["chosen"], "flag");
    let by_folder = |f: &str| {
        listing["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["folder"] == f)
            .unwrap()
            .clone()
    };
    let satlm = by_folder("gsm8k/satlm");
    assert_eq!(satlm["status"], "wrong-version");
    assert_eq!(satlm["different"], serde_json::json!(["gsm_test.json"]));
    assert_eq!(satlm["extra"], serde_json::json!([]));
    let openai = by_folder("gsm8k/openai");
    assert_eq!(openai["status"], "wrong-version");
    assert_eq!(
        openai["absent"],
        serde_json::json!(["test.jsonl", "test_socratic.jsonl", "train.jsonl"])
    );
    assert_eq!(
        openai["extra"],
        serde_json::json!(["example_model_solutions.jsonl"])
    );
    let folio = by_folder("folio/v0.0");
    assert_eq!(folio["status"], "missing");
    assert_eq!(
        folio["source"],
        "https://github.com/Yale-LILY/FOLIO/tree/266c382ca2173f56338f407fff2fd58b9fc1d0ef/data/v0.0"
    );
    assert_eq!(folio["licence"], "CC BY-SA 4.0");

    // The same from DELTALOGIC_DATASETS, as text.
    let out = run(dir.path(), Some(&data), &["datasets", "where"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        text.starts_with(&format!(
            "datasets folder: {}\n  given by DELTALOGIC_DATASETS\n",
            data.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("gsm8k/satlm            wrong version")
            && text.contains("other bytes: gsm_test.json")
            && text.contains("not in this version: example_model_solutions.jsonl")
            && text.contains("get it from https://github.com/Yale-LILY/FOLIO/tree/"),
        "{text}"
    );
}

/// A RuleTaker file laid out as `ruletaker_cwa/depth-0/dev.jsonl` in `data`.
fn ruletaker_folder(data: &Path) {
    let depth0 = data.join("ruletaker_cwa/depth-0");
    std::fs::create_dir_all(&depth0).unwrap();
    let line = r#"{"id":"RelNeg-D0-1","context":"Bob is red.","questions":[{"id":"RelNeg-D0-1-1","text":"Bob is red.","label":true,"meta":{"QDep":0,"strategy":"proof"}}]}"#;
    std::fs::write(depth0.join("dev.jsonl"), format!("{line}\n")).unwrap();
}

/// `ingest FORMAT` with no path reads the format's folder in the datasets folder, from
/// `--datasets` or DELTALOGIC_DATASETS; an absent folder is an error naming it and the way the
/// datasets folder was chosen.
#[test]
fn ingest_without_a_path_reads_the_formats_folder_of_the_datasets_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ruletaker_folder(&data);
    let data_arg = data.to_str().unwrap();
    let first = json(&run(
        dir.path(),
        None,
        &["--json", "ingest", "ruletaker", "--datasets", data_arg],
    ));
    assert_eq!(first["records"], 1);
    assert_eq!(first["new_items"], 1);
    let file = data.join("ruletaker_cwa/depth-0/dev.jsonl");
    assert_eq!(first["files"][0]["path"].as_str(), file.to_str());
    let again = json(&run(
        dir.path(),
        Some(&data),
        &["--json", "ingest", "ruletaker"],
    ));
    assert_eq!(
        (again["records"].clone(), again["new_items"].clone()),
        (1.into(), 0.into()),
        "the same file from DELTALOGIC_DATASETS"
    );

    let empty = dir.path().join("empty");
    let out = run(dir.path(), Some(&empty), &["ingest", "folio"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    let missing = empty.join("folio/v0.0");
    assert!(
        err.contains(&format!("{}: no folio dataset here", missing.display()))
            && err.contains("given by DELTALOGIC_DATASETS")
            && err.contains("datasets where"),
        "{err}"
    );

    let out = run(
        dir.path(),
        None,
        &[
            "ingest",
            "ruletaker",
            "some/file.jsonl",
            "--datasets",
            data_arg,
        ],
    );
    assert!(!out.status.success(), "a path and --datasets together");
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
}

/// `build deduce` and `build clomo` read their files from the datasets folder unless `--data`
/// names another.
#[test]
fn builds_read_their_files_from_the_datasets_folder_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let gsm8k = data.join("gsm8k/openai");
    std::fs::create_dir_all(&gsm8k).unwrap();
    let row = serde_json::json!({
        "question": "Ann has 3 boxes of 4 pens. How many pens does she have?",
        "answer": "She has 3*4=<<3*4=12>>12 pens.\n#### 12",
    });
    std::fs::write(gsm8k.join("test.jsonl"), format!("{row}\n")).unwrap();
    let built = json(&run(
        dir.path(),
        Some(&data),
        &["--json", "build", "deduce", "--limit", "1"],
    ));
    assert_eq!(built["read"], 1, "{built}");

    // From an empty datasets folder, each fails naming where it looked.
    let empty = dir.path().join("empty");
    for (benchmark, looked) in [
        ("deduce", "gsm8k/openai/test.jsonl"),
        ("clomo", "clomo/data"),
    ] {
        let out = run(dir.path(), Some(&empty), &["build", benchmark]);
        assert!(!out.status.success(), "{benchmark}");
        let expected = empty.join(looked).display().to_string();
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    }
}

/// Every format's default folder lies in a dataset of the manifest.
#[test]
fn every_formats_folder_is_in_a_known_dataset() {
    use clap::ValueEnum;
    use deltalogic::datasets::Format;
    for format in Format::value_variants() {
        let folder = format.folder();
        let known = DATASETS
            .iter()
            .any(|d| folder == d.folder || folder.starts_with(&format!("{}/", d.folder)));
        assert!(known, "{format:?}: {folder}");
    }
}

/// build.rs ignores the tests of a dataset exactly when the datasets folder lacks its files,
/// and never under CI, where they must run (and fail, naming the folder).
#[test]
fn a_dataset_is_marked_missing_exactly_when_its_files_are_absent() {
    let marked = [
        ("folio/v0.0", cfg!(dataset_missing = "folio/v0.0")),
        ("folio/logic-lm", cfg!(dataset_missing = "folio/logic-lm")),
        (
            "proofwriter/logic-lm",
            cfg!(dataset_missing = "proofwriter/logic-lm"),
        ),
        ("ruletaker_cwa", cfg!(dataset_missing = "ruletaker_cwa")),
        ("belief_r", cfg!(dataset_missing = "belief_r")),
        (
            "robustlr/glore_subset",
            cfg!(dataset_missing = "robustlr/glore_subset"),
        ),
        ("clomo", cfg!(dataset_missing = "clomo")),
        ("gsm8k/openai", cfg!(dataset_missing = "gsm8k/openai")),
        ("gsm8k/satlm", cfg!(dataset_missing = "gsm8k/satlm")),
    ];
    let folders: Vec<&str> = DATASETS.iter().map(|d| d.folder).collect();
    let listed: Vec<&str> = marked.iter().map(|(f, _)| *f).collect();
    assert_eq!(listed, folders, "one line per dataset of the manifest");
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let home = home::find(None).ok();
    for ((folder, missing), d) in marked.iter().zip(DATASETS) {
        let present = home.as_ref().is_some_and(|h| d.present(&h.dir));
        assert_eq!(*missing, !ci && !present, "{folder}");
    }
}
