//! `export samples`: a set's results as lm-evaluation-harness files, read back and checked
//! against the store (the real SmolLM2 on four generated episodes, scored under `mean` and
//! `pmi`, so both a plain and a content-free normalisation are exported).

use crate::common;

use common::{dl, smollm2};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
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

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn samples_match_the_store_the_report_and_lm_evals_hashes() {
    let model = smollm2();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let model = model.to_str().unwrap();
    dl(&store, &["model", "add", model, "--name", "smol"]);
    dl(
        &store,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            "0",
            "--per-type",
            "1",
            "--name",
            "tiny",
        ],
    );
    dl(
        &store,
        &[
            "score", "--model", "smol", "--set", "tiny", "--norm", "mean,pmi",
        ],
    );
    let out = dir.path().join("out");
    dl(
        &store,
        &[
            "export",
            "samples",
            "--set",
            "tiny",
            "-o",
            out.to_str().unwrap(),
        ],
    );

    // Every stored score of the two results, by key, as `audit` lists them.
    let report: Value = serde_json::from_slice(&dl(&store, &["--json", "report"]).stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for entry in results {
        let norm = entry["normalisation"].as_str().unwrap();
        let rid = entry["result_id"].as_str().unwrap();
        let audit: Value =
            serde_json::from_slice(&dl(&store, &["--json", "audit", rid]).stdout).unwrap();
        let stored: BTreeMap<&str, f64> = audit["audit"]["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let lp = s["logprobs"].as_array().unwrap();
                let sum = lp
                    .iter()
                    .map(|v| f64::from(v.as_f64().unwrap() as f32))
                    .sum();
                (s["key"].as_str().unwrap(), sum)
            })
            .collect();

        let task = format!("deltalogic_tiny_plain_{norm}");
        let samples = json_lines(&out.join(format!("smol/samples_{task}.jsonl")));
        // Four episodes, two scored turns each.
        assert_eq!(samples.len(), 8, "{norm}");
        let mut acc_by_turn: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for s in &samples {
            let ours = &s["deltalogic"];
            let keys = ours["score_keys"].as_array().unwrap();
            let cf = ours["content_free_keys"].as_array().unwrap();
            assert_eq!(keys.len(), 3);
            // pmi reads each label after the empty filler too; mean reads nothing more.
            assert_eq!(cf.len(), if norm == "pmi" { 3 } else { 0 }, "{norm}");
            // Each choice's log-likelihood is the stored score's sum, to the bit.
            for (key, resp) in keys.iter().zip(s["filtered_resps"].as_array().unwrap()) {
                let want = stored[key.as_str().unwrap()];
                assert_eq!(resp[0].as_f64().unwrap().to_bits(), want.to_bits());
            }
            let prompt = s["arguments"][0][0].as_str().unwrap();
            assert!(prompt.ends_with("Label:"), "{prompt}");
            // lm-eval's hashes: sha256 of the pretty JSON doc, the prompt and str(target).
            let doc = serde_json::to_string_pretty(&s["doc"]).unwrap();
            assert_eq!(s["doc_hash"].as_str().unwrap(), sha256(&doc));
            assert_eq!(s["prompt_hash"].as_str().unwrap(), sha256(prompt));
            let target = s["target"].as_u64().unwrap();
            assert_eq!(
                s["target_hash"].as_str().unwrap(),
                sha256(&target.to_string())
            );
            // The prediction is the stored answer; acc compares it with the gold label.
            let prediction = ours["prediction"].as_u64().unwrap();
            let labels = ["True", "False", "Uncertain"];
            assert_eq!(ours["answer"], labels[prediction as usize]);
            assert_eq!(ours["gold"], labels[target as usize]);
            let acc = s["acc"].as_f64().unwrap();
            assert_eq!(acc, f64::from(u8::from(prediction == target)));
            acc_by_turn
                .entry(ours["turn"].as_u64().unwrap())
                .or_default()
                .push(acc);
        }
        // Turn 1's acc is the report's initial accuracy, turn 2's its revision accuracy.
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let overall = &entry["metrics"]["overall"];
        assert_eq!(
            mean(&acc_by_turn[&1]),
            overall["initial_accuracy"]["value"].as_f64().unwrap(),
            "{norm}"
        );
        assert_eq!(
            mean(&acc_by_turn[&2]),
            overall["revision_accuracy"]["value"].as_f64().unwrap(),
            "{norm}"
        );
        let results: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(format!("smol/results_{task}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(results["config"]["result_id"], rid);
        assert_eq!(results["n-samples"][&task]["effective"], 8);
        let all: Vec<f64> = acc_by_turn.values().flatten().copied().collect();
        assert_eq!(
            results["results"][&task]["acc,none"].as_f64().unwrap(),
            mean(&all)
        );
        assert_eq!(results["deltalogic"][&task], entry["metrics"]);
    }

    // The same store exports the same bytes (no timestamps).
    let again = dir.path().join("again");
    dl(
        &store,
        &[
            "export",
            "samples",
            "--set",
            "tiny",
            "-o",
            again.to_str().unwrap(),
        ],
    );
    for f in std::fs::read_dir(out.join("smol")).unwrap() {
        let f = f.unwrap();
        assert_eq!(
            std::fs::read(f.path()).unwrap(),
            std::fs::read(again.join("smol").join(f.file_name())).unwrap(),
            "{:?}",
            f.file_name()
        );
    }

    // A missing set, and an output directory that is a file, are errors that name them.
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
}
