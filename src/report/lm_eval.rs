//! lm-evaluation-harness's output shapes for a stored result, so analysis scripts written for
//! lm-eval read deltalogic results: `samples_<task>.jsonl`, one line per scored turn in the shape
//! of lm-eval's `loglikelihood` samples of a multiple-choice doc, and `results_<task>.json` with
//! the aggregate `acc`, the benchmark's own metrics and the configuration that made them.
//!
//! Everything is read from the store: the prompts and labels from the result's score records,
//! the gold labels from the benchmark (`Prepared::target`). The answer of each sample is
//! recomputed from its scores under the result's normalisation and must equal the stored one,
//! and the prompt must be the one the benchmark renders today, so an export never shows a
//! sample that does not match its result. No timestamps: the same store gives the same bytes.

use super::Entry;
use crate::benchmarks::{Answer, Prepared, Request};
use crate::eval::normalise;
use crate::eval::{
    self, ModelRecord, Normalisation, PromptRecord, ResultRecord, ScoreRecord, Turn,
};
use crate::logic::Label;
use crate::store::{Id, Record, Store};
use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The two files of one result: (file name, contents).
pub struct Files {
    pub samples: (String, String),
    pub results: (String, String),
}

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

/// The task name lm-eval files and keys carry: benchmark, set, template and normalisation.
fn task(entry: &Entry) -> String {
    file_safe(&format!(
        "{}_{}_{}_{}",
        entry.benchmark, entry.set, entry.template, entry.normalisation
    ))
}

/// The score records `keys` name, in order.
fn scores(reg: &Store, rid: Id, keys: &[[u8; 32]]) -> Result<Vec<ScoreRecord>> {
    keys.iter()
        .map(|k| {
            reg.get::<ScoreRecord>(&Id(*k))?.with_context(|| {
                format!(
                    "result {} reads a missing score {}",
                    rid.short(),
                    Id(*k).short()
                )
            })
        })
        .collect()
}

/// The result behind a report entry.
pub fn result(reg: &Store, entry: &Entry) -> Result<(Id, ResultRecord)> {
    let rid = reg.resolve(ResultRecord::KIND, &entry.result_id)?;
    let r = reg
        .get::<ResultRecord>(&rid)?
        .with_context(|| format!("result {} vanished", rid.short()))?;
    Ok((rid, r))
}

/// The files of result `rid` (`r`), shown in the report as `entry`, whose items `prepared` asks
/// (the result's template) and `docs` describe (the benchmark's export, in the set's order).
pub fn files(
    reg: &Store,
    entry: &Entry,
    (rid, r): (Id, &ResultRecord),
    prepared: &dyn Prepared,
    docs: &[Value],
) -> Result<Files> {
    let norm = Normalisation::named(&r.normalisation).with_context(|| {
        format!(
            "result {} names an unknown normalisation `{}`",
            rid.short(),
            r.normalisation
        )
    })?;
    let items = prepared.items();
    ensure!(
        items.len() == r.rows.len() && docs.len() == items.len(),
        "result {}: {} rows, but the set has {} items and {} exported",
        rid.short(),
        r.rows.len(),
        items.len(),
        docs.len()
    );
    let mut lines = String::new();
    let (mut samples, mut correct) = (0usize, Vec::new());
    for (i, row) in r.rows.iter().enumerate() {
        ensure!(
            items[i].0 == row.item,
            "result {}: row {i} is item {}, the set's item there is {}",
            rid.short(),
            Id(row.item).short(),
            items[i].short()
        );
        let answered = eval::answered(reg, row)?;
        for (t, turn) in row.turns.iter().enumerate() {
            let Some(answer) = turn.answer.label() else {
                continue;
            };
            let sample = sample(
                reg,
                rid,
                norm,
                Sample {
                    doc_id: i,
                    doc: &docs[i],
                    item: Id(row.item),
                    turn: t,
                    stored: turn,
                    answer,
                    earlier: &answered.answers[..t],
                    target: prepared.target(i, t),
                },
                prepared,
            )
            .with_context(|| {
                format!(
                    "result {}, item {}, turn {}",
                    rid.short(),
                    Id(row.item).short(),
                    t + 1
                )
            })?;
            if let Some(acc) = sample.get("acc").and_then(Value::as_f64) {
                correct.push(acc);
            }
            lines.push_str(&serde_json::to_string(&sample)?);
            lines.push('\n');
            samples += 1;
        }
    }
    let name = task(entry);
    let results = results(reg, entry, r, &name, samples, &correct)?;
    Ok(Files {
        samples: (format!("samples_{name}.jsonl"), lines),
        results: (
            format!("results_{name}.json"),
            serde_json::to_string_pretty(&results)? + "\n",
        ),
    })
}

/// One scored turn of a result, as `sample` needs it.
struct Sample<'a> {
    doc_id: usize,
    doc: &'a Value,
    item: Id,
    turn: usize,
    /// The turn as the result stores it.
    stored: &'a Turn,
    answer: Label,
    earlier: &'a [Answer],
    target: Option<Label>,
}

fn sample(
    reg: &Store,
    rid: Id,
    norm: Normalisation,
    s: Sample,
    prepared: &dyn Prepared,
) -> Result<Value> {
    let Request::Score { prompt, labels, .. } = prepared.request(s.doc_id, s.turn, s.earlier)?
    else {
        bail!("the benchmark asks this turn as a generation, but the result stores a label");
    };
    let keys = s
        .stored
        .scored_keys(labels.len(), norm.fillers().len())
        .with_context(|| {
            format!(
                "{} score keys for {} labels under `{}`",
                s.stored.keys.len(),
                labels.len(),
                norm.as_str()
            )
        })?;
    let own = scores(reg, rid, keys.labels)?;
    let content_free = keys
        .per_filler()
        .map(|filler| scores(reg, rid, filler))
        .collect::<Result<Vec<_>>>()?;
    let stored_prompt = reg
        .get::<PromptRecord>(&Id(own[0].prompt))?
        .with_context(|| format!("prompt {} is missing", Id(own[0].prompt).short()))?;
    ensure!(
        stored_prompt.text == prompt
            && own.iter().all(|o| o.prompt == own[0].prompt)
            && own
                .iter()
                .zip(&labels)
                .all(|(o, (text, _))| &o.label == text),
        "the stored scores are not of the prompt and labels the benchmark renders for this turn"
    );
    let values = normalise::values(&own, &content_free, norm)?;
    let predicted = normalise::best(&values);
    ensure!(
        labels[predicted].1 == s.answer,
        "the scores give {:?} under `{}`, the result stores {:?}",
        labels[predicted].1,
        norm.as_str(),
        s.answer
    );
    let target = s
        .target
        .map(|gold| {
            labels
                .iter()
                .position(|(_, l)| *l == gold)
                .with_context(|| format!("the gold label {gold:?} is not among the turn's labels"))
        })
        .transpose()?;
    let logliks: Vec<f64> = own.iter().map(ScoreRecord::sum).collect();
    let doc_text = serde_json::to_string_pretty(s.doc)?;
    let target_text = target.map_or_else(|| "None".to_string(), |t| t.to_string());
    let mut out = json!({
        "doc_id": s.doc_id,
        "doc": s.doc,
        "target": target,
        "arguments": labels.iter().map(|(text, _)| json!([prompt, text])).collect::<Vec<_>>(),
        // lm-eval's (log-likelihood, is_greedy) per choice; is_greedy needs the argmax token at
        // every label position, which deltalogic does not store: null.
        "resps": logliks.iter().map(|l| json!([[l, null]])).collect::<Vec<_>>(),
        "filtered_resps": logliks.iter().map(|l| json!([l, null])).collect::<Vec<_>>(),
        "filter": "none",
        "metrics": if target.is_some() { json!(["acc"]) } else { json!([]) },
        "doc_hash": hash_string(&doc_text),
        "prompt_hash": hash_string(&prompt),
        "target_hash": hash_string(&target_text),
        "deltalogic": {
            "item": s.item.hex(),
            "turn": s.turn + 1,
            "normalisation": norm.as_str(),
            "values": values,
            "prediction": predicted,
            "answer": s.answer.as_str(),
            "gold": s.target.map(Label::as_str),
            "score_keys": keys.labels.iter().map(|k| Id(*k).hex()).collect::<Vec<_>>(),
            "content_free_keys": keys.content_free.iter().map(|k| Id(*k).hex()).collect::<Vec<_>>(),
        },
    });
    if let Some(t) = target {
        out["acc"] = json!(if t == predicted { 1.0 } else { 0.0 });
    }
    Ok(out)
}

/// lm-eval's `results_*.json` for one task: `acc` with lm-eval's standard error (sample
/// standard deviation over √n), the benchmark's own metrics, and the configuration.
fn results(
    reg: &Store,
    entry: &Entry,
    r: &ResultRecord,
    name: &str,
    samples: usize,
    correct: &[f64],
) -> Result<Value> {
    let model = Id(r.model);
    let record = reg
        .get::<ModelRecord>(&model)?
        .with_context(|| format!("model {} is missing", model.short()))?;
    let mut task = json!({ "alias": name });
    if !correct.is_empty() {
        let n = correct.len() as f64;
        let mean = correct.iter().sum::<f64>() / n;
        let var = correct.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        task["acc,none"] = json!(mean);
        task["acc_stderr,none"] = json!((var / n).sqrt());
    }
    Ok(json!({
        "results": { name: task },
        "configs": { name: {
            "task": name,
            "output_type": "multiple_choice",
            "benchmark": entry.benchmark,
            "set": entry.set,
            "set_id": Id(r.set).hex(),
            "template": entry.template,
            "template_id": Id(r.template).hex(),
            "normalisation": entry.normalisation,
            "num_fewshot": 0,
            "metric_list": [{ "metric": "acc", "aggregation": "mean", "higher_is_better": true }],
        }},
        "versions": { name: env!("CARGO_PKG_VERSION") },
        "n-shot": { name: 0 },
        "higher_is_better": { name: { "acc": true } },
        "n-samples": { name: { "original": entry.evaluation.n, "effective": samples } },
        "config": {
            "model": "deltalogic",
            "model_name": entry.model,
            "model_args": format!(
                "fingerprint={},{}={}",
                model.hex(),
                if crate::eval::served::is_served(&record) { "served" } else { "file" },
                record.path
            ),
            "model_fingerprint": model.hex(),
            "backend": record.backend,
            "scorer_version": record.scorer_version,
            "tool_version": env!("CARGO_PKG_VERSION"),
            "result_id": entry.result_id,
        },
        "deltalogic": { name: entry.evaluation.metrics },
    }))
}
