//! lm-evaluation-harness 0.4's output files for stored results, in the schema of its
//! `result_schema` (`EvalResults`, `SampleResult`) and its file naming, so that lm-eval's own
//! tools read them unchanged (`get_file_task_name`, `get_file_datetime`, `get_latest_filename`,
//! `make_table`): per model, `samples_<task>_<datetime>.jsonl` for each task (one result: a set,
//! a template and a normalisation) and one `results_<datetime>.json` holding all its tasks, as
//! one lm-eval run writes them.
//!
//! A sample is one scored turn, a multiple-choice doc in lm-eval's terms: its `doc_id` numbers
//! the task's lines, `arguments` are `{"gen_args_i": {"arg_0": prompt, "arg_1": label}}`, and
//! `resps`/`filtered_resps` hold lm-eval's strings `[str(log-likelihood), str(is_greedy)]`.
//! `acc`, `acc_norm` and `acc_bytes` are computed as lm-eval computes them from the same
//! log-likelihoods (argmax of the sums, of the sums over the label's characters, over its
//! bytes): each is the answer of the normalisation that `Normalisation::lm_eval_metric` maps to
//! it. The result's own normalisation, its values and answer, and deltalogic's ids stay under a
//! `deltalogic` key.
//!
//! Everything but `is_greedy` is read from the store: the prompts and labels from the result's
//! score records, the gold labels from the benchmark (`Prepared::target`). The answer of each
//! sample is recomputed from its scores under the result's normalisation and must equal the
//! stored one, and the prompt must be the one the benchmark renders today, so an export never
//! shows a sample that does not match its result. `is_greedy` (whether greedy decoding after the
//! prompt gives the label's tokens) is not stored: the caller computes it with the model. The
//! date in the file names is the latest score's, so the same store gives the same bytes.

use super::turns::{self, Scored, Turn};
use super::Entry;
use crate::benchmarks::Prepared;
use crate::eval::normalise;
use crate::eval::{ModelRecord, Normalisation, ResultRecord};
use crate::logic::Label;
use crate::store::{Id, Record, Store};
use anyhow::{ensure, Context, Result};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// lm-eval's per-sample metrics of a multiple-choice doc that deltalogic's scores give.
const METRICS: [Normalisation; 3] = [
    Normalisation::Sum,
    Normalisation::PerChar,
    Normalisation::Byte,
];

/// The tokens greedy decoding gives after a prompt, at most so many, by the model that scored
/// it: `(model, prompt, max_tokens)`. The caller runs the model (or its server).
pub type Greedy<'a> = dyn FnMut(Id, &str, usize) -> Result<Vec<u32>> + 'a;

/// lm-eval's `hash_string`: sha256 of the UTF-8 text, lowercase hex.
pub fn hash_string(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `name` in characters any file system takes in a file name (others become `_`).
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Python's `str(x)` of a float, which lm-eval writes for log-likelihoods: the shortest digits
/// that read back as `x` (Rust's too), fixed notation with at least one decimal for exponents
/// -4 to 15, scientific with a signed two-digit exponent otherwise.
pub fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` writes an integer exponent");
    if (-4..16).contains(&exp) {
        let fixed = x.to_string();
        if fixed.contains('.') {
            fixed
        } else {
            fixed + ".0"
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// The task name lm-eval files and keys carry: benchmark, set, template and normalisation.
/// lm-eval's file-name readers split at the first and last `_`, which stay outside it.
pub fn task_name(entry: &Entry) -> String {
    file_safe(&format!(
        "{}_{}_{}_{}",
        entry.benchmark, entry.set, entry.template, entry.normalisation
    ))
}

/// lm-eval's run id in file names (`datetime.isoformat()` with `-` for `:`) of an ISO 8601 UTC
/// time (`2026-11-27T17:25:03Z` gives `2026-11-27T17-25-03`). It holds no `_`, so lm-eval's
/// `get_file_datetime` reads it back, and it sorts as the times do (`get_latest_filename`).
pub fn date_id(utc_iso: &str) -> String {
    utc_iso.trim_end_matches('Z').replace(':', "-")
}

/// The result behind a report entry.
pub fn result(reg: &Store, entry: &Entry) -> Result<(Id, ResultRecord)> {
    let rid = reg.resolve(ResultRecord::KIND, &entry.result_id)?;
    let r = reg
        .get::<ResultRecord>(&rid)?
        .with_context(|| format!("result {} vanished", rid.short()))?;
    Ok((rid, r))
}

/// One result as an lm-eval task: its samples file's lines and its parts of the run's
/// `results_*.json`.
pub struct Task {
    pub name: String,
    /// `samples_<name>_<date>.jsonl`'s contents.
    pub samples: String,
    /// Unix seconds of the latest score the task reads (the run's date).
    pub latest: u64,
    model: Id,
    metrics: Value,
    config: Value,
    higher_is_better: Value,
    sample_len: usize,
    task_hash: String,
    deltalogic: Value,
}

/// What one task's samples add up to.
#[derive(Default)]
struct Tally {
    lines: String,
    samples: usize,
    /// Each metric's per-sample values (of the samples with a target), as `METRICS`.
    metrics: [Vec<f64>; 3],
    hashes: String,
    latest: u64,
}

/// Result `rid` (`r`), shown in the report as `entry`, whose items `prepared` asks (the
/// result's template) and `docs` describe (the benchmark's export, in the set's order), as an
/// lm-eval task.
pub fn task(
    reg: &Store,
    entry: &Entry,
    (rid, r): (Id, &ResultRecord),
    prepared: &dyn Prepared,
    docs: &[Value],
    greedy: &mut Greedy,
) -> Result<Task> {
    ensure!(
        docs.len() == r.rows.len(),
        "result {}: {} rows, but the set exports {} items",
        rid.short(),
        r.rows.len(),
        docs.len()
    );
    let norm = turns::normalisation(rid, r)?;
    let mut tally = Tally::default();
    turns::each(reg, (rid, r), prepared, |turn| {
        let Turn::Scored(scored) = turn else {
            return Ok(());
        };
        let sample = sample(
            norm,
            scored,
            &docs[scored.place.item_index],
            &mut tally,
            greedy,
        )?;
        tally.lines.push_str(&serde_json::to_string(&sample)?);
        tally.lines.push('\n');
        tally.samples += 1;
        Ok(())
    })?;
    ensure!(
        tally.samples > 0,
        "result {} has no scored turn: lm-eval's multiple-choice samples are scored turns \
         (`export table --what results` lists generated ones)",
        rid.short()
    );
    let name = task_name(entry);
    let mut metrics = json!({ "name": name, "alias": name, "sample_len": tally.samples });
    let mut higher = Map::new();
    for (norm, values) in METRICS.iter().zip(&tally.metrics) {
        let metric = norm.lm_eval_metric().expect("METRICS are lm-eval's");
        higher.insert(metric.into(), json!(true));
        if values.is_empty() {
            continue;
        }
        // lm-eval's `mean` and its standard error (`mean_stderr`: the sample standard
        // deviation over √n).
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        metrics[format!("{metric},none")] = json!(mean);
        metrics[format!("{metric}_stderr,none")] = json!((var / n).sqrt());
    }
    Ok(Task {
        config: config(entry, r, &name),
        model: Id(r.model),
        metrics,
        higher_is_better: Value::Object(higher),
        sample_len: tally.samples,
        task_hash: hash_string(&tally.hashes),
        deltalogic: json!({
            "result_id": entry.result_id,
            "model": entry.model,
            "normalisation": entry.normalisation,
            "metrics": entry.evaluation.metrics,
        }),
        name,
        samples: tally.lines,
        latest: tally.latest,
    })
}

/// One scored turn as lm-eval's `SampleResult`, numbered `tally.samples` (lm-eval's doc index).
fn sample(
    norm: Normalisation,
    s: &Scored,
    doc: &Value,
    tally: &mut Tally,
    greedy: &mut Greedy,
) -> Result<Value> {
    // lm-eval's is_greedy: every label token is the argmax after the prompt and the label's
    // tokens before it, which is greedy decoding giving the label's tokens.
    let longest = s.own.iter().map(|o| o.tokens.len()).max().unwrap_or(0);
    let decoded = greedy(Id(s.own[0].model), &s.prompt, longest)
        .context("greedy decoding after the prompt, for lm-eval's is_greedy")?;
    let resps: Vec<[String; 2]> = s
        .own
        .iter()
        .map(|o| {
            let is_greedy = decoded.starts_with(&o.tokens);
            [
                python_float(o.sum()),
                if is_greedy { "True" } else { "False" }.to_string(),
            ]
        })
        .collect();
    let doc_text = serde_json::to_string_pretty(doc)?;
    // lm-eval writes `str(target)`: the gold choice's index, or `None`.
    let target_text = s
        .target
        .map_or_else(|| "None".to_string(), |t| t.to_string());
    let arguments: Map<String, Value> = s
        .labels
        .iter()
        .enumerate()
        .map(|(i, (text, _))| {
            (
                format!("gen_args_{i}"),
                json!({ "arg_0": s.prompt, "arg_1": text }),
            )
        })
        .collect();
    let (doc_hash, prompt_hash, target_hash) = (
        hash_string(&doc_text),
        hash_string(&s.prompt),
        hash_string(&target_text),
    );
    tally
        .hashes
        .push_str(&format!("{doc_hash}{prompt_hash}{target_hash}"));
    for o in s.own.iter().chain(s.content_free.iter().flatten()) {
        tally.latest = tally.latest.max(o.computed_at);
    }
    let mut out = json!({
        "doc_id": tally.samples,
        "doc": doc,
        "target": target_text,
        "arguments": arguments,
        "resps": resps.iter().map(|r| [r]).collect::<Vec<_>>(),
        "filtered_resps": resps,
        "filter": "none",
        "metrics": if s.target.is_some() {
            json!(METRICS.map(|n| n.lm_eval_metric()))
        } else {
            json!([])
        },
        "doc_hash": doc_hash,
        "prompt_hash": prompt_hash,
        "target_hash": target_hash,
        "deltalogic": {
            "item": s.place.item.hex(),
            "item_index": s.place.item_index,
            "turn": s.place.turn + 1,
            "normalisation": norm.as_str(),
            "values": s.values,
            "prediction": s.predicted,
            "answer": s.labels[s.predicted].1.as_str(),
            "gold": s.gold.map(Label::as_str),
            "score_keys": s.own_keys.iter().map(|k| k.hex()).collect::<Vec<_>>(),
            "content_free_keys": s.content_free_keys.iter().map(|k| k.hex()).collect::<Vec<_>>(),
        },
    });
    if let Some(gold) = s.target {
        for (metric, values) in METRICS.iter().zip(&mut tally.metrics) {
            let chosen = normalise::best(&normalise::values(&s.own, &[], *metric)?);
            let correct = if chosen == gold { 1.0 } else { 0.0 };
            values.push(correct);
            out[metric.lm_eval_metric().expect("METRICS are lm-eval's")] = json!(correct);
        }
    }
    Ok(out)
}

/// The task's entry in `configs`: what lm-eval's task config says (output type, how a choice
/// continues the prompt, the metrics and their aggregation) and where the task comes from.
fn config(entry: &Entry, r: &ResultRecord, name: &str) -> Value {
    json!({
        "task": name,
        "output_type": "multiple_choice",
        // The labels are whole continuations (` True`, leading space included), so lm-eval's
        // choice lengths are the labels' characters.
        "target_delimiter": "",
        "num_fewshot": 0,
        "metric_list": METRICS.map(|n| json!({
            "metric": n.lm_eval_metric(),
            "aggregation": "mean",
            "higher_is_better": true,
        })),
        "metadata": { "version": Id(r.template).short() },
        "deltalogic": {
            "benchmark": entry.benchmark,
            "set": entry.set,
            "set_id": Id(r.set).hex(),
            "template": entry.template,
            "template_id": Id(r.template).hex(),
            "normalisation": entry.normalisation,
            "result_id": entry.result_id,
        },
    })
}

/// One model's `results_<date>.json` over its `tasks` (all of one model), as `EvalResults`.
/// `date` is the latest score's time (lm-eval's is the run's start); the store keeps no run's
/// wall time, so `total_evaluation_time_seconds`, optional in the schema, is left out.
pub fn results(reg: &Store, model_name: &str, tasks: &[Task]) -> Result<String> {
    let first = tasks.first().context("no tasks to write results for")?;
    ensure!(
        tasks.iter().all(|t| t.model == first.model),
        "one results file holds one model's tasks"
    );
    let model = first.model;
    let record = reg
        .get::<ModelRecord>(&model)?
        .with_context(|| format!("model {} is missing", model.short()))?;
    let by_task = |f: &dyn Fn(&Task) -> Value| -> Value {
        Value::Object(tasks.iter().map(|t| (t.name.clone(), f(t))).collect())
    };
    let latest = tasks.iter().map(|t| t.latest).max().unwrap_or(0);
    let doc = json!({
        "results": by_task(&|t| t.metrics.clone()),
        "group_subtasks": by_task(&|_| json!([])),
        "configs": by_task(&|t| t.config.clone()),
        "versions": by_task(&|t| t.config["metadata"]["version"].clone()),
        "n-shot": by_task(&|_| json!(0)),
        "higher_is_better": by_task(&|t| t.higher_is_better.clone()),
        // Every scored turn is a doc, and every doc was evaluated.
        "n-samples": by_task(&|t| json!({ "original": t.sample_len, "effective": t.sample_len })),
        "config": {
            "model": "deltalogic",
            "model_args": format!(
                "fingerprint={},{}={}",
                model.hex(),
                if crate::eval::served::is_served(&record) { "served" } else { "file" },
                record.path
            ),
            "batch_size": null,
            "limit": null,
            "bootstrap_iters": 0,
        },
        "date": latest as f64,
        "model_source": "deltalogic",
        "model_name": model_name,
        "model_name_sanitized": file_safe(model_name),
        "task_hashes": by_task(&|t| json!(t.task_hash)),
        "deltalogic": {
            "tool_version": env!("CARGO_PKG_VERSION"),
            "model_fingerprint": model.hex(),
            "backend": record.backend,
            "scorer_version": record.scorer_version,
            "tasks": by_task(&|t| t.deltalogic.clone()),
        },
    });
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::python_float;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        // Each right side is Python's `str(float(left))`.
        for (x, py) in [
            (-3.0, "-3.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (-3.1875, "-3.1875"),
            (-12.345678901234567, "-12.345678901234567"),
            (-0.0001, "-0.0001"),
            (-0.00001234, "-1.234e-05"),
            (1e-5, "1e-05"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (-2.5e300, "-2.5e+300"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(python_float(x), py, "{x:e}");
        }
    }
}
