//! `export samples`: a set's results as lm-evaluation-harness 0.4 files, read back and checked
//! against the store (the real SmolLM2 on four generated episodes, scored under `sum` and `pmi`,
//! so both lm-eval's own `acc` and a content-free normalisation are exported), and read by
//! lm-eval 0.4.13's own schema, loaders, `make_table` and `process_results`
//! (`lm_eval_tools.py`, in the venv `DELTALOGIC_LMEVAL` that `.ci/run` installs).

use crate::common;

use common::{dl, smollm2};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sha256(s: &str) -> String {
    deltalogic::report::lm_eval::hash_string(s)
}

/// A store with SmolLM2 (`smol`) and four generated episodes (`tiny`), scored under `sum` and
/// `pmi`.
pub fn scored(dir: &Path) -> PathBuf {
    scored_with(dir, &[], "sum,pmi")
}

/// A store with SmolLM2 (`smol`, added with the further arguments `add`) and four generated
/// episodes (`tiny`), scored under the normalisations `norm`.
pub fn scored_with(dir: &Path, add: &[&str], norm: &str) -> PathBuf {
    let store = dir.join("s.redb");
    let model = smollm2();
    let mut args = vec!["model", "add", model.to_str().unwrap(), "--name", "smol"];
    args.extend_from_slice(add);
    dl(&store, &args);
    common::build_generated(&store, "0", "1", "tiny");
    dl(
        &store,
        &["score", "--model", "smol", "--set", "tiny", "--norm", norm],
    );
    store
}

/// `export samples` of set `tiny` into `out`, with more arguments.
fn export(store: &Path, out: &Path, more: &[&str]) {
    let mut args = vec![
        "export",
        "samples",
        "--set",
        "tiny",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(more);
    dl(store, &args);
}

/// The one file in `dir` whose name starts with `prefix`.
fn one(dir: &Path, prefix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{prefix} in {dir:?}: {found:?}");
    found.into_iter().next().unwrap()
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn samples_match_the_store_the_report_and_lm_evals_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let store = scored(dir.path());
    let out = dir.path().join("out");
    export(&store, &out, &[]);

    // Every stored score of the two results, by key, as `audit` lists them.
    let report: Value = serde_json::from_slice(&dl(&store, &["--json", "report"]).stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    // One lm-eval run: one results file for the model, dated as its samples files.
    let run_path = one(&out.join("smol"), "results_");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&run_path).unwrap()).unwrap();
    let date = run_path.file_name().unwrap().to_str().unwrap()["results_".len()..]
        .trim_end_matches(".json")
        .to_string();
    assert_eq!(date.len(), "2026-11-27T17-25-03".len(), "{date}");
    assert!(!date.contains('_') && !date.contains(':'), "{date}");
    for entry in results {
        let norm = entry["normalisation"].as_str().unwrap();
        let rid = entry["result_id"].as_str().unwrap();
        let audit: Value =
            serde_json::from_slice(&dl(&store, &["--json", "audit", rid]).stdout).unwrap();
        let stored: BTreeMap<&str, (f64, Vec<f32>)> = audit["audit"]["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let lp: Vec<f32> = s["logprobs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap() as f32)
                    .collect();
                let sum = lp.iter().map(|&v| f64::from(v)).sum();
                (s["key"].as_str().unwrap(), (sum, lp))
            })
            .collect();

        let task = format!("deltalogic_tiny_plain_{norm}");
        let samples = json_lines(&out.join(format!("smol/samples_{task}_{date}.jsonl")));
        // Four episodes, two scored turns each: eight docs, numbered as lm-eval numbers them.
        assert_eq!(samples.len(), 8, "{norm}");
        let mut acc_by_turn: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        let mut ours_by_turn: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for (n, s) in samples.iter().enumerate() {
            assert_eq!(s["doc_id"], n, "{norm}");
            let ours = &s["deltalogic"];
            let keys = ours["score_keys"].as_array().unwrap();
            let cf = ours["content_free_keys"].as_array().unwrap();
            assert_eq!(keys.len(), 3);
            // pmi reads each label after the empty filler too; sum reads nothing more.
            assert_eq!(cf.len(), if norm == "pmi" { 3 } else { 0 }, "{norm}");
            // Each choice's log-likelihood is the stored score's sum, to the bit, in Python's
            // text; is_greedy is a Python bool's text.
            let resps = s["filtered_resps"].as_array().unwrap();
            let mut lls = Vec::new();
            let mut greedy = Vec::new();
            for (key, resp) in keys.iter().zip(resps) {
                let (want, logprobs) = &stored[key.as_str().unwrap()];
                let ll: f64 = resp[0].as_str().unwrap().parse().unwrap();
                assert_eq!(ll.to_bits(), want.to_bits());
                lls.push(ll);
                greedy.push(match resp[1].as_str().unwrap() {
                    "True" => true,
                    "False" => false,
                    other => panic!("is_greedy {other:?}"),
                });
                // A token more likely than all others together is the argmax.
                if logprobs.iter().all(|&l| l > 0.5f32.ln()) {
                    assert!(greedy.last().unwrap(), "{key}: {logprobs:?}");
                }
            }
            assert_eq!(s["resps"].as_array().unwrap().len(), 3);
            assert_eq!(s["resps"][1][0], resps[1]);
            // The labels' first tokens differ, so greedy decoding gives at most one of them,
            // and only the one most likely at its first token.
            let first = |k: &Value| stored[k.as_str().unwrap()].1[0];
            let top = (0..3)
                .max_by(|&a, &b| first(&keys[a]).total_cmp(&first(&keys[b])))
                .unwrap();
            for (i, g) in greedy.iter().enumerate() {
                assert!(!g || i == top, "{norm} sample {n}: {greedy:?}");
            }
            let prompt = s["arguments"]["gen_args_0"]["arg_0"].as_str().unwrap();
            assert!(prompt.ends_with("Label:"), "{prompt}");
            assert_eq!(s["arguments"]["gen_args_2"]["arg_1"], " Uncertain");
            // lm-eval's hashes: sha256 of the pretty JSON doc, the prompt and str(target).
            let doc = serde_json::to_string_pretty(&s["doc"]).unwrap();
            assert_eq!(s["doc_hash"].as_str().unwrap(), sha256(&doc));
            assert_eq!(s["prompt_hash"].as_str().unwrap(), sha256(prompt));
            let target_text = s["target"].as_str().unwrap();
            assert_eq!(s["target_hash"].as_str().unwrap(), sha256(target_text));
            let target: usize = target_text.parse().unwrap();
            // The deltalogic prediction is the stored answer under the result's normalisation;
            // lm-eval's acc is the argmax of the sums, acc_norm of the sums per character.
            let prediction = ours["prediction"].as_u64().unwrap() as usize;
            let labels = ["True", "False", "Uncertain"];
            assert_eq!(ours["answer"], labels[prediction]);
            assert_eq!(ours["gold"], labels[target]);
            let argmax =
                |v: &[f64]| (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best });
            let per_char: Vec<f64> = lls
                .iter()
                .zip([5.0, 6.0, 10.0])
                .map(|(l, c)| l / c)
                .collect();
            let hit = |p: usize| f64::from(u8::from(p == target));
            assert_eq!(s["acc"].as_f64().unwrap(), hit(argmax(&lls)));
            assert_eq!(s["acc_norm"].as_f64().unwrap(), hit(argmax(&per_char)));
            // The labels are ASCII: bytes are characters.
            assert_eq!(s["acc_bytes"], s["acc_norm"]);
            if norm == "sum" {
                assert_eq!(prediction, argmax(&lls));
            }
            let turn = ours["turn"].as_u64().unwrap();
            acc_by_turn
                .entry(turn)
                .or_default()
                .push(s["acc"].as_f64().unwrap());
            ours_by_turn.entry(turn).or_default().push(hit(prediction));
        }
        // Turn 1's answers give the report's initial accuracy, turn 2's its revision accuracy:
        // under `sum`, lm-eval's acc is that answer.
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let overall = &entry["metrics"]["overall"];
        for (turn, metric) in [(1, "initial_accuracy"), (2, "revision_accuracy")] {
            let want = overall[metric]["value"].as_f64().unwrap();
            assert_eq!(mean(&ours_by_turn[&turn]), want, "{norm} {metric}");
            if norm == "sum" {
                assert_eq!(mean(&acc_by_turn[&turn]), want, "{metric}");
            }
        }
        assert_eq!(run["configs"][&task]["deltalogic"]["result_id"], rid);
        assert_eq!(run["deltalogic"]["tasks"][&task]["result_id"], rid);
        assert_eq!(run["n-samples"][&task]["effective"], 8);
        assert_eq!(run["n-samples"][&task]["original"], 8);
        assert_eq!(run["results"][&task]["sample_len"], 8);
        assert_eq!(run["results"][&task]["name"], task.as_str());
        let all: Vec<f64> = acc_by_turn.values().flatten().copied().collect();
        assert_eq!(
            run["results"][&task]["acc,none"].as_f64().unwrap(),
            mean(&all)
        );
        assert_eq!(
            run["deltalogic"]["tasks"][&task]["metrics"],
            entry["metrics"]
        );
        // lm-eval's task hash: over each sample's three hashes, in order.
        let hashes: String = samples
            .iter()
            .map(|s| {
                format!(
                    "{}{}{}",
                    s["doc_hash"].as_str().unwrap(),
                    s["prompt_hash"].as_str().unwrap(),
                    s["target_hash"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(run["task_hashes"][&task].as_str().unwrap(), sha256(&hashes));
    }
    assert_eq!(run["model_name"], "smol");
    assert!(run["date"].as_f64().unwrap() > 1.7e9);

    // The same store exports the same bytes (no run time in them).
    let again = dir.path().join("again");
    export(&store, &again, &[]);
    for f in std::fs::read_dir(out.join("smol")).unwrap() {
        let f = f.unwrap();
        assert_eq!(
            std::fs::read(f.path()).unwrap(),
            std::fs::read(again.join("smol").join(f.file_name())).unwrap(),
            "{:?}",
            f.file_name()
        );
    }
    // lm-eval's metric names select the normalisations they equal: `acc` is `sum`.
    let only = dir.path().join("only-acc");
    export(&store, &only, &["--norm", "acc"]);
    let names: Vec<String> = std::fs::read_dir(only.join("smol"))
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("samples_"))
        .collect();
    assert_eq!(
        names,
        [format!("samples_deltalogic_tiny_plain_sum_{date}.jsonl")]
    );

    // A missing set, an output directory that is a file, and an lm-eval metric that is no
    // normalisation here are errors that name them.
    let fail = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
            .arg("--store")
            .arg(&store)
            .args(args)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let err = fail(&["export", "samples", "--set", "nope", "-o", "x"]);
    assert!(err.contains("no set named `nope`"), "{err}");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = fail(&[
        "export",
        "samples",
        "--set",
        "tiny",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(err.contains("a-file"), "{err}");
    let err = fail(&[
        "export",
        "samples",
        "--set",
        "tiny",
        "--norm",
        "acc_mutual_info",
        "-o",
        "x",
    ]);
    assert!(
        err.contains("unknown normalisation `acc_mutual_info`") && err.contains("`pmi`"),
        "{err}"
    );
}

/// The venv with lm-eval 0.4.13, pyarrow, pandas and `datasets` (`.ci/run` installs it).
pub fn lmeval_python() -> PathBuf {
    let venv = std::env::var_os("DELTALOGIC_LMEVAL").expect("DELTALOGIC_LMEVAL names no venv");
    PathBuf::from(venv).join("bin/python")
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    lmeval_missing,
    ignore = "needs lm-eval 0.4.13: python3 -m venv V && V/bin/pip install lm-eval==0.4.13 pyarrow pandas, then DELTALOGIC_LMEVAL=V"
)]
fn lm_evals_own_schema_loaders_table_and_metrics_read_the_exported_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = scored(dir.path());
    let out = dir.path().join("out");
    export(&store, &out, &[]);
    let tool = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/suite/lm_eval_tools.py");
    let o = Command::new(lmeval_python())
        .arg(tool)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "lm_eval_tools.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let read: Value = serde_json::from_slice(&o.stdout).unwrap();
    let smol = &read["smol"];
    let run = one(&out.join("smol"), "results_");
    // lm-eval's get_latest_filename found our results file, and each task's samples file.
    assert_eq!(smol["results"], run.file_name().unwrap().to_str().unwrap());
    let tasks = smol["tasks"].as_object().unwrap();
    assert_eq!(tasks.len(), 2);
    for norm in ["sum", "pmi"] {
        let task = &tasks[&format!("deltalogic_tiny_plain_{norm}")];
        assert_eq!(task["lines"], 8);
        assert!(out
            .join("smol")
            .join(task["samples"].as_str().unwrap())
            .is_file());
    }
    // make_table's rows: each task with its three metrics.
    let table = smol["table"].as_str().unwrap();
    assert_eq!(table.matches("|acc_norm |").count(), 2, "{table}");
    assert!(table.contains("deltalogic_tiny_plain_pmi"), "{table}");

    // A sample whose is_greedy is not lm-eval's text is refused by the same check.
    let samples = one(&out.join("smol"), "samples_deltalogic_tiny_plain_sum_");
    let text = std::fs::read_to_string(&samples).unwrap();
    let broken = text.replacen("\"False\"", "null", 1);
    assert_ne!(broken, text);
    std::fs::write(&samples, broken).unwrap();
    let o = Command::new(lmeval_python())
        .arg(tool)
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("samples_deltalogic_tiny_plain_sum_"), "{err}");
}
