//! `export lm-eval-task`: a DeltaLogic set as an lm-evaluation-harness task folder, run by
//! lm-eval 0.4.13 itself (`lm_eval --include_path`) with its `hf` backend on the Hugging Face
//! directory `model export-hf` writes of SmolLM2, against deltalogic's own result on the same
//! set: every prompt and continuation deltalogic scored is one of lm-eval's requests, byte for
//! byte, with the same log-likelihood within a stated tolerance (our f32 engine and transformers
//! sum in different orders), and the task's aggregation gives the benchmark's metrics, overall
//! and per edit type, equal to the JSON report's. lm-eval runs in the venv `DELTALOGIC_LMEVAL`
//! with torch and transformers from the venv `DELTALOGIC_VLLM` on its path (both made by
//! `.ci/run`).

use crate::common::{dl, smollm2};
use crate::lm_eval::{lmeval_python, scored_with};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// |lm-eval's log-likelihood − deltalogic's| allowed: transformers' f32 sums in another order
/// than our kernels (measured on 600 labels: at most 3.6e-5).
const LOGLIKELIHOOD_TOLERANCE: f64 = 2e-4;

/// The site-packages of the venv with torch and transformers.
fn torch_site_packages() -> PathBuf {
    let venv = std::env::var_os("DELTALOGIC_VLLM").expect("DELTALOGIC_VLLM names no venv");
    let lib = PathBuf::from(venv).join("lib");
    let python = std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e}", lib.display()))
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("python3")
        })
        .unwrap_or_else(|| panic!("no python3.* in {}", lib.display()));
    python.join("site-packages")
}

fn one(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .collect();
    assert_eq!(found.len(), 1, "{prefix}*{suffix} under {dir:?}: {found:?}");
    found.into_iter().next().unwrap()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    any(lmeval_missing, vllm_missing),
    ignore = "needs lm-eval 0.4.13 (DELTALOGIC_LMEVAL: python3 -m venv V && V/bin/pip install lm-eval==0.4.13) and torch with transformers (DELTALOGIC_VLLM: the venv of ../shared/recipes/vllm-cpu.sh)"
)]
fn the_exported_task_runs_in_lm_eval_and_gives_deltalogics_metrics() {
    let dir = tempfile::tempdir().unwrap();
    // SmolLM2 in the exact f32 mode (`flex`), which transformers' f32 matches to rounding; the
    // default int8 mode quantises activations (0.2 apart in log-likelihood here).
    let store = scored_with(dir.path(), &["--backend", "flex"], "sum");
    let task_dir = dir.path().join("task");
    dl(
        &store,
        &[
            "export",
            "lm-eval-task",
            "--set",
            "tiny",
            "-o",
            task_dir.to_str().unwrap(),
        ],
    );
    let task = "deltalogic_tiny_plain_sum";
    for file in [
        format!("{task}.yaml"),
        format!("{task}.jsonl"),
        "utils.py".into(),
    ] {
        assert!(task_dir.join(&file).is_file(), "{file} not written");
    }
    // What deltalogic scored under `sum`: each scored turn's prompt and labels with their
    // log-likelihoods, as `export samples` gives them (tests/suite/lm_eval.rs checks those
    // against the store).
    let ours = dir.path().join("ours");
    dl(
        &store,
        &[
            "export",
            "samples",
            "--set",
            "tiny",
            "--norm",
            "sum",
            "-o",
            ours.to_str().unwrap(),
        ],
    );
    let mut scored_by_us: BTreeMap<(String, String), f64> = BTreeMap::new();
    for line in std::fs::read_to_string(one(&ours, "samples_", ".jsonl"))
        .unwrap()
        .lines()
    {
        let s: Value = serde_json::from_str(line).unwrap();
        let args = s["arguments"].as_object().unwrap();
        for (i, resp) in s["filtered_resps"].as_array().unwrap().iter().enumerate() {
            let a = &args[&format!("gen_args_{i}")];
            let ll: f64 = resp[0].as_str().unwrap().parse().unwrap();
            scored_by_us.insert(
                (
                    a["arg_0"].as_str().unwrap().to_string(),
                    a["arg_1"].as_str().unwrap().to_string(),
                ),
                ll,
            );
        }
    }
    assert_eq!(
        scored_by_us.len(),
        4 * 2 * 3,
        "4 episodes, 2 turns, 3 labels"
    );

    // lm-eval itself, its hf backend on the same weights as a transformers directory.
    let hf = dir.path().join("smol-hf");
    dl(
        &store,
        &[
            "model",
            "export-hf",
            "--model",
            smollm2().to_str().unwrap(),
            "-o",
            hf.to_str().unwrap(),
        ],
    );
    let out = dir.path().join("lm-eval-out");
    let run = Command::new(lmeval_python())
        .args(["-m", "lm_eval", "--include_path"])
        .arg(&task_dir)
        .args(["--tasks", task, "--model", "hf", "--model_args"])
        .arg(format!("pretrained={},dtype=float32", hf.display()))
        .args(["--device", "cpu", "--batch_size", "1", "--log_samples"])
        .arg("--output_path")
        .arg(&out)
        .env("PYTHONPATH", torch_site_packages())
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HOME", dir.path().join("hf-home"))
        .env("OMP_NUM_THREADS", "2")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "lm_eval failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // Every request deltalogic made is one of lm-eval's, with the same texts and log-likelihood.
    let samples = one(&out, &format!("samples_{task}_"), ".jsonl");
    let mut theirs: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut docs = 0;
    for line in std::fs::read_to_string(&samples).unwrap().lines() {
        let s: Value = serde_json::from_str(line).unwrap();
        docs += 1;
        for (i, resp) in s["filtered_resps"].as_array().unwrap().iter().enumerate() {
            let a = &s["arguments"][format!("gen_args_{i}")];
            let ll: f64 = resp[0].as_str().unwrap().parse().unwrap();
            theirs.insert(
                (
                    a["arg_0"].as_str().unwrap().to_string(),
                    a["arg_1"].as_str().unwrap().to_string(),
                ),
                ll,
            );
        }
    }
    assert_eq!(
        docs,
        4 * (1 + 3),
        "each episode: turn 1, and turn 2 after each answer"
    );
    let mut worst: f64 = 0.0;
    for (request, ll) in &scored_by_us {
        let theirs = theirs
            .get(request)
            .unwrap_or_else(|| panic!("lm-eval never asked {request:?}"));
        worst = worst.max((theirs - ll).abs());
    }
    eprintln!(
        "{} requests shared; largest log-likelihood difference {worst:.2e}",
        scored_by_us.len()
    );
    assert!(worst < LOGLIKELIHOOD_TOLERANCE, "{worst}");

    // The task's aggregation against the JSON report's metrics under `sum`.
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(one(&out, "results_", ".json")).unwrap())
            .unwrap();
    let figures = &results["results"][task];
    let report: Value = serde_json::from_slice(&dl(&store, &["--json", "report"]).stdout).unwrap();
    let entry = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["normalisation"] == "sum")
        .unwrap();
    assert_eq!(report["results"].as_array().unwrap().len(), 1);
    let mut compared = 0;
    let mut check = |name: String, ours: &Value| {
        let theirs = &figures[format!("{name},none")];
        match ours["value"].as_f64() {
            Some(v) => assert_eq!(theirs.as_f64(), Some(v), "{name}: {theirs} vs {ours}"),
            None => assert!(
                theirs.is_null(),
                "{name}: {theirs} where deltalogic has none"
            ),
        }
        compared += 1;
    };
    let keys = [
        "initial_accuracy",
        "revision_accuracy",
        "revision_gap",
        "inertia",
        "over_flip",
        "abstain",
    ];
    for key in keys {
        check(key.to_string(), &entry["metrics"]["overall"][key]);
    }
    for (edit, m) in entry["metrics"]["by_edit_type"].as_object().unwrap() {
        for key in keys {
            let slug: String = edit
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            check(format!("{key}__edit_type__{slug}"), &m[key]);
        }
    }
    assert_eq!(compared, 6 * 5, "overall and four edit types");
    // lm-eval's results name where the docs are and how a doc reads, so it can run the task again.
    let config = &results["configs"][task];
    assert_eq!(config["dataset_path"], "json");
    assert_eq!(config["doc_to_text"], "prompt");
    assert_eq!(config["doc_to_choice"], "choices");
    assert_eq!(config["doc_to_target"], "gold");
    let data = config["dataset_kwargs"]["data_files"]["test"]
        .as_str()
        .unwrap();
    assert!(
        Path::new(data).ends_with(format!("task/{task}.jsonl")),
        "{data}"
    );
}
