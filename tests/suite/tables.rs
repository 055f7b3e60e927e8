//! `export table` and `export dataset`: the results, scores and items of a scored set as Parquet
//! and CSV, and the items as a Hugging Face dataset folder, read by pyarrow, pandas and
//! `datasets` (in the venv `DELTALOGIC_LMEVAL` that `.ci/run` installs) and checked against the
//! store: row counts, accuracies against the report, each log-likelihood against the stored
//! score to the bit, item ids against `export items`.

use crate::common::dl;
use crate::lm_eval::{lmeval_python, scored};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;

/// Reads the exports in `dir` with pandas, pyarrow and `datasets`; what they found, as JSON.
const READ: &str = r#"
import json, sys
import pandas as pd, pyarrow.parquet as pq, datasets
d = sys.argv[1]
out = {}
for what in ["results", "scores", "items"]:
    df = pd.read_parquet(f"{d}/{what}.parquet")
    out[what] = {
        "rows": len(df),
        "types": {f.name: str(f.type) for f in pq.read_schema(f"{d}/{what}.parquet")},
    }
res = pd.read_parquet(f"{d}/results.parquet")
out["results"]["accuracy"] = {
    f"{n}/{t}": float(g["correct"].astype(float).mean())
    for (n, t), g in res.groupby(["normalisation", "turn"])
}
csv = pd.read_csv(f"{d}/results.csv")
out["results"]["csv_equal"] = bool(
    (csv["correct"].tolist() == res["correct"].tolist())
    and csv["item_id"].tolist() == res["item_id"].tolist()
)
sc = pd.read_parquet(f"{d}/scores.parquet")
out["scores"]["logprob"] = {k: float(v).hex() for k, v in zip(sc["score_key"], sc["logprob"])}
scsv = pd.read_csv(f"{d}/scores.csv")
out["scores"]["csv_logprob_equal"] = bool((scsv["logprob"] == sc["logprob"]).all())
out["scores"]["chosen_per_turn"] = sorted(set(sc.groupby(["result_id", "item_id", "turn"])["chosen"].sum().tolist()))
out["items"]["ids"] = pd.read_parquet(f"{d}/items.parquet")["item_id"].tolist()
ds = datasets.load_dataset(f"{d}/dataset")
out["dataset"] = {
    "splits": list(ds.keys()),
    "rows": ds["test"].num_rows,
    "features": {k: str(v.dtype) for k, v in ds["test"].features.items()},
    "ids": list(ds["test"]["item_id"]),
}
# polars and DuckDB read the same files: rows, types, values, and a join on the shared ids.
import polars as pl, duckdb
out["polars"] = {
    "rows": {w: pl.read_parquet(f"{d}/{w}.parquet").height for w in ["results", "scores", "items"]},
    "logprob_equal": pl.read_parquet(f"{d}/scores.parquet")["logprob"].to_list() == sc["logprob"].tolist(),
    "types": {k: str(v) for k, v in pl.read_parquet_schema(f"{d}/scores.parquet").items()},
}
db = duckdb.connect()
q = lambda w: f"read_parquet('{d}/{w}.parquet')"
out["duckdb"] = {
    "rows": {w: db.execute(f"select count(*) from {q(w)}").fetchone()[0] for w in ["results", "scores", "items"]},
    "accuracy": {
        f"{n}/{t}": float(a)
        for n, t, a in db.execute(
            f"select normalisation, turn, avg(correct::double) from {q('results')} group by all"
        ).fetchall()
    },
    "joined": db.execute(
        f"select count(*) from {q('results')} r join {q('items')} i using (item_id)"
    ).fetchone()[0],
}
print(json.dumps(out))
"#;

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    lmeval_missing,
    ignore = "needs pandas, pyarrow, datasets, polars and duckdb: python3 -m venv V && V/bin/pip install lm-eval==0.4.13 pyarrow pandas datasets polars duckdb, then DELTALOGIC_LMEVAL=V"
)]
fn tables_and_the_dataset_folder_load_in_pandas_polars_duckdb_and_datasets_with_the_stores_values()
{
    let dir = tempfile::tempdir().unwrap();
    let store = scored(dir.path());
    let out = dir.path().join("out");
    let path = |name: &str| out.join(name).to_str().unwrap().to_string();
    for what in ["results", "scores", "items"] {
        for format in ["parquet", "csv"] {
            let file = path(&format!("{what}.{format}"));
            dl(
                &store,
                &[
                    "export", "table", "--set", "tiny", "--what", what, "--format", format, "-o",
                    &file,
                ],
            );
        }
    }
    dl(
        &store,
        &["export", "dataset", "--set", "tiny", "-o", &path("dataset")],
    );
    let o = Command::new(lmeval_python())
        .args(["-c", READ])
        .arg(&out)
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HOME", dir.path().join("hf"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read: Value = serde_json::from_slice(&o.stdout).unwrap();

    // Two results (sum, pmi) of four episodes, two turns each, three labels a turn.
    assert_eq!(read["results"]["rows"], 16);
    assert_eq!(read["scores"]["rows"], 48);
    assert_eq!(read["items"]["rows"], 4);
    let types = &read["scores"]["types"];
    assert_eq!(types["logprob"], "double");
    assert_eq!(types["tokens"], "int64");
    assert_eq!(types["chosen"], "bool");
    assert_eq!(read["results"]["types"]["turn"], "int64");
    assert_eq!(read["results"]["csv_equal"], true);
    assert_eq!(read["scores"]["csv_logprob_equal"], true);
    // One label chosen in every scored turn.
    assert_eq!(read["scores"]["chosen_per_turn"], serde_json::json!([1]));

    // polars and DuckDB read the same rows, types and values.
    for (what, rows) in [("results", 16), ("scores", 48), ("items", 4)] {
        assert_eq!(read["polars"]["rows"][what], rows, "polars {what}");
        assert_eq!(read["duckdb"]["rows"][what], rows, "duckdb {what}");
    }
    assert_eq!(read["polars"]["logprob_equal"], true);
    assert_eq!(read["polars"]["types"]["logprob"], "Float64");
    assert_eq!(read["polars"]["types"]["tokens"], "Int64");
    assert_eq!(read["polars"]["types"]["chosen"], "Boolean");
    assert_eq!(
        read["duckdb"]["joined"], 16,
        "every result row finds its item"
    );

    // Each turn's accuracy is the report's initial and revision accuracy.
    let report: Value = serde_json::from_slice(&dl(&store, &["--json", "report"]).stdout).unwrap();
    for entry in report["results"].as_array().unwrap() {
        let norm = entry["normalisation"].as_str().unwrap();
        let overall = &entry["metrics"]["overall"];
        for (turn, metric) in [(1, "initial_accuracy"), (2, "revision_accuracy")] {
            for reader in ["results", "duckdb"] {
                assert_eq!(
                    read[reader]["accuracy"][format!("{norm}/{turn}")],
                    overall[metric]["value"],
                    "{reader}: {norm} {metric}"
                );
            }
        }
        // Every log-likelihood is the stored score's sum, to the bit.
        let rid = entry["result_id"].as_str().unwrap();
        let audit: Value =
            serde_json::from_slice(&dl(&store, &["--json", "audit", rid]).stdout).unwrap();
        let logprob = read["scores"]["logprob"].as_object().unwrap();
        let mut seen = 0;
        for s in audit["audit"]["scores"].as_array().unwrap() {
            let Some(got) = logprob.get(s["key"].as_str().unwrap()) else {
                continue; // a content-free score: part of a value, not a row
            };
            let sum: f64 = s["logprobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| f64::from(v.as_f64().unwrap() as f32))
                .sum();
            assert_eq!(got.as_str().unwrap(), python_hex(sum));
            seen += 1;
        }
        assert!(seen >= 24, "{norm}: {seen}");
    }

    // The items, in the set's order, as `export items` lists them; the dataset is that table.
    let items = dl(&store, &["export", "items", "--set", "tiny"]).stdout;
    let ids: Vec<Value> = String::from_utf8(items)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
        .collect();
    assert_eq!(read["items"]["ids"], Value::Array(ids.clone()));
    let ds = &read["dataset"];
    assert_eq!(ds["splits"], serde_json::json!(["test"]));
    assert_eq!(ds["rows"], 4);
    assert_eq!(ds["ids"], Value::Array(ids));
    let features: BTreeMap<String, Value> = serde_json::from_value(ds["features"].clone()).unwrap();
    assert_eq!(features["item_index"], "int64");
    assert_eq!(features["set"], "string");
    let card = std::fs::read_to_string(out.join("dataset/README.md")).unwrap();
    assert!(card.contains("\"seed\""), "{card}");
}

/// Python's `float.hex()`: the exact bits as `[-]0x1.<13 hex digits>p<exp>`.
fn python_hex(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0x0.0p+0"
        } else {
            "0x0.0p+0"
        }
        .into();
    }
    let bits = x.to_bits();
    let sign = if bits >> 63 == 1 { "-" } else { "" };
    let exp = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mantissa = bits & ((1 << 52) - 1);
    format!("{sign}0x1.{mantissa:013x}p{exp:+}")
}

/// The worked analysis of docs/interop.md: its Python block, run on two models' scores.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    lmeval_missing,
    ignore = "needs pandas and pyarrow: python3 -m venv V && V/bin/pip install lm-eval==0.4.13 pyarrow pandas, then DELTALOGIC_LMEVAL=V"
)]
fn the_docs_worked_analysis_runs_and_counts_the_turns_two_models_answer_differently() {
    let dir = tempfile::tempdir().unwrap();
    let store = scored(dir.path());
    let other = crate::common::tiny_llama(&dir.path().join("tiny-llama"));
    dl(
        &store,
        &["model", "add", other.to_str().unwrap(), "--name", "other"],
    );
    dl(
        &store,
        &[
            "score", "--model", "other", "--set", "tiny", "--norm", "sum",
        ],
    );
    let out = dir.path().join("analysis");
    std::fs::create_dir_all(&out).unwrap();
    let file = |name: &str| out.join(name).to_str().unwrap().to_string();
    for (what, name) in [
        ("scores", "scores.parquet"),
        ("items", "items.parquet"),
        ("results", "results.csv"),
    ] {
        let format = if name.ends_with("csv") {
            "csv"
        } else {
            "parquet"
        };
        dl(
            &store,
            &[
                "export",
                "table",
                "--set",
                "tiny",
                "--norm",
                "sum",
                "--what",
                what,
                "--format",
                format,
                "-o",
                &file(name),
            ],
        );
    }
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/interop.md")).unwrap();
    let block = doc
        .split("<!-- analysis")
        .nth(1)
        .and_then(|rest| rest.split("```python\n").nth(1))
        .and_then(|code| code.split("```").next())
        .expect("docs/interop.md's analysis block");
    let o = Command::new(lmeval_python())
        .args(["-c", block])
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8(o.stdout).unwrap();

    // The count, from the results table: each turn's answer by model.
    let mut answers: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    let mut rows = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let headers = rows.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    for row in rows.records() {
        let row = row.unwrap();
        answers
            .entry((
                row[col("item_id")].to_string(),
                row[col("turn")].to_string(),
            ))
            .or_default()
            .insert(
                row[col("model")].to_string(),
                row[col("answer")].to_string(),
            );
    }
    assert_eq!(answers.len(), 8);
    let differ = answers
        .values()
        .filter(|by| by["smol"] != by["other"])
        .count();
    let want = format!("{differ} of 8 turns answered differently by other and smol");
    assert!(printed.starts_with(&want), "{want}\n{printed}");
    assert!(printed.contains("edit_type"), "{printed}");
}
