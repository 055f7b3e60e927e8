//! A benchmark set as an lm-evaluation-harness 0.4 task folder (`export lm-eval-task`): a task
//! YAML, its docs as JSONL and a `utils.py`, so that `lm_eval --include_path DIR --tasks NAME`
//! asks any of lm-eval's backends the requests deltalogic asks, byte for byte, and computes the
//! benchmark's paired metrics with the task's own aggregation.
//!
//! A doc is one scored turn of one item. A later turn's prompt shows the model its own earlier
//! answers (DeltaLogic's second question continues the dialogue after the first answer), which
//! lm-eval cannot feed back: its requests are all made before the model runs. So each later turn
//! is written once for every combination of earlier answers (for DeltaLogic, one doc for the
//! original premises and three for the edited ones, after `True`, `False` or `Uncertain`), and
//! the aggregation follows the model's own answers through them: the answer at turn 1 picks the
//! turn-2 doc whose prompt shows that answer, as deltalogic's runner would have asked it. The
//! requests a deltalogic result makes are thus among the task's, with the same prompt and
//! continuation texts; the others cost lm-eval three extra labels per item and are never read.
//!
//! The answer of a doc is the label with the highest value under the task's normalisation
//! (`sum`, `per-char` or `byte`: the ones lm-eval's log-likelihoods and the choice texts give),
//! ties to the earlier label, as `eval::normalise::best`. The metrics are those of a two-turn
//! benchmark's `Evaluation` (initial and revision accuracy, their gap, inertia, over-flip,
//! abstention) or a one-turn benchmark's accuracy, overall and per facet of the items
//! (`Benchmark::views`: DeltaLogic's edit type and source), with the conditioning sets of
//! `benchmarks::deltalogic::metrics`. lm-eval gives the point values; intervals stay
//! deltalogic's.

use super::lm_eval::file_safe;
use crate::benchmarks::deltalogic::metrics::Metrics;
use crate::benchmarks::view::ItemView;
use crate::benchmarks::{Answer, Prepared, Request};
use crate::eval::Normalisation;
use crate::logic::Label;
use crate::store::{Id, Record};
use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use std::path::Path;

/// The aggregation code every task folder carries; the task's own constants are written above
/// it.
const UTILS: &str = include_str!("lm_eval_task/utils.py");

/// A later turn is written once per combination of earlier answers: a benchmark with many turns
/// would multiply its docs past use.
const MAX_DOCS_PER_ITEM: usize = 64;

/// The files of one task folder.
pub struct TaskFolder {
    /// lm-eval's task name (`--tasks`).
    pub name: String,
    pub yaml: String,
    /// The docs, one JSON object a line.
    pub data: String,
    pub utils: String,
    pub docs: usize,
    /// The metric names its `results[task]` will hold.
    pub metrics: Vec<String>,
}

/// What the task is made of.
pub struct Source<'a> {
    pub benchmark: &'a str,
    pub set: &'a str,
    pub set_id: Id,
    pub template: &'a str,
    pub prepared: &'a dyn Prepared,
    /// The set's item views, in the set's order (their facets group the metrics).
    pub views: &'a [ItemView],
    pub norm: Normalisation,
}

/// The metrics of a one-turn item; a two-turn item's are DeltaLogic's paired ones
/// ([`Metrics::KEYS`]), which `utils.py` computes under the same names.
const SINGLE: [&str; 1] = ["accuracy"];

/// The task's name (lm-eval's `--tasks`, and the YAML and data files' stem).
pub fn name(source: &Source) -> String {
    file_safe(&format!(
        "deltalogic_{}_{}_{}",
        source.set,
        source.template,
        source.norm.as_str()
    ))
}

/// `source` as a task folder whose data file will be at `data_path` (absolute: lm-eval's
/// `datasets.load_dataset("json", data_files=…)` reads it from wherever lm-eval runs).
pub fn folder(source: &Source, data_path: &Path) -> Result<TaskFolder> {
    let Source {
        prepared, views, ..
    } = source;
    ensure!(
        source.norm.lm_eval_metric().is_some(),
        "an lm-eval task answers under `sum`, `per-char` or `byte` (lm-eval's acc, acc_norm, \
         acc_bytes): `{}` needs what lm-eval's log-likelihoods do not give",
        source.norm.as_str()
    );
    let turns = prepared.turns();
    ensure!(
        (1..=2).contains(&turns),
        "{}: {turns} turns per item; an lm-eval task of deltalogic's metrics has one or two",
        source.benchmark
    );
    ensure!(
        views.len() == prepared.items().len(),
        "{} views for {} items",
        views.len(),
        prepared.items().len()
    );
    let mut data = String::new();
    let mut docs = 0;
    for (i, id) in prepared.items().iter().enumerate() {
        // The earlier answers each doc of the next turn follows.
        let mut paths: Vec<Vec<Label>> = vec![Vec::new()];
        let place = || format!("item {i} ({})", id.short());
        let mut written = 0;
        for t in 0..turns {
            let mut next = Vec::new();
            for earlier in &paths {
                let answers: Vec<Answer> = earlier.iter().map(|&l| Answer::Label(l)).collect();
                let request = prepared
                    .request(i, t, &answers)
                    .with_context(|| format!("{}, turn {}", place(), t + 1))?;
                let Request::Score { prompt, labels, .. } = request else {
                    bail!(
                        "{}, turn {}: a generated turn; lm-eval's multiple-choice docs are \
                         scored turns",
                        place(),
                        t + 1
                    );
                };
                let gold = prepared.target(i, t).with_context(|| {
                    format!(
                        "{}, turn {}: no gold label for lm-eval's target",
                        place(),
                        t + 1
                    )
                })?;
                let target = labels
                    .iter()
                    .position(|(_, l)| *l == gold)
                    .with_context(|| format!("{}: the gold {gold} is not a label", place()))?;
                let doc = json!({
                    "item": id.hex(),
                    "item_index": i,
                    "turn": t + 1,
                    "earlier": earlier.iter().map(|l| l.as_str()).collect::<Vec<_>>(),
                    "prompt": prompt,
                    "choices": labels.iter().map(|(text, _)| text).collect::<Vec<_>>(),
                    "labels": labels.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>(),
                    "gold": target,
                    "facets": views[i].facets.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<String, Value>>(),
                });
                data.push_str(&serde_json::to_string(&doc)?);
                data.push('\n');
                written += 1;
                next.extend(labels.iter().map(|(_, l)| {
                    let mut path = earlier.clone();
                    path.push(*l);
                    path
                }));
            }
            paths = next;
        }
        ensure!(
            written <= MAX_DOCS_PER_ITEM,
            "{}: {written} docs, more than {MAX_DOCS_PER_ITEM}",
            place()
        );
        docs += written;
    }
    ensure!(docs > 0, "set `{}` has no items", source.set);

    let name = name(source);
    let metrics: &[&str] = if turns == 2 { &Metrics::KEYS } else { &SINGLE };
    // Every facet value present, in the views' order of keys and sorted values.
    let mut groups: Vec<(String, String)> = Vec::new();
    for v in views.iter() {
        for (k, value) in &v.facets {
            if !groups.contains(&(k.clone(), value.clone())) {
                groups.push((k.clone(), value.clone()));
            }
        }
    }
    groups.sort_by(|a, b| {
        let key = |k: &String| {
            views
                .iter()
                .flat_map(|v| v.facets.iter())
                .position(|(x, _)| x == k)
        };
        key(&a.0).cmp(&key(&b.0)).then(a.1.cmp(&b.1))
    });
    let mut names: Vec<(String, &str, Value)> = Vec::new();
    for m in metrics {
        names.push((m.to_string(), m, Value::Null));
    }
    for (k, value) in &groups {
        for m in metrics {
            names.push((
                format!("{m}__{}__{}", ident(k), ident(value)),
                m,
                json!([k, value]),
            ));
        }
    }
    let mut yaml = format!(
        "# lm-evaluation-harness 0.4 task written by deltalogic {version} (`deltalogic export \
         lm-eval-task`):\n# benchmark {benchmark}, set {set} ({set_id}), template {template}, \
         answers under {norm}.\n# Run: lm_eval --include_path DIR --tasks {name} --model hf \
         --model_args pretrained=…\ntask: {name}\ndataset_path: json\ndataset_kwargs:\n  \
         data_files:\n    test: {data}\ntest_split: test\noutput_type: multiple_choice\n\
         doc_to_text: prompt\ndoc_to_choice: choices\ndoc_to_target: gold\n\
         # The choices are whole continuations (\" True\", leading space included).\n\
         target_delimiter: \"\"\nnum_fewshot: 0\nprocess_results: !function utils.process_results\n\
         metric_list:\n",
        version = env!("CARGO_PKG_VERSION"),
        benchmark = source.benchmark,
        set = source.set,
        set_id = source.set_id.hex(),
        template = source.template,
        norm = source.norm.as_str(),
        data = Value::String(data_path.display().to_string()),
    );
    for (n, m, _) in &names {
        let higher = matches!(*m, "initial_accuracy" | "revision_accuracy" | "accuracy");
        yaml.push_str(&format!(
            "  - metric: {n}\n    aggregation: !function utils.{n}\n    higher_is_better: {higher}\n"
        ));
    }
    yaml.push_str(&format!(
        "metadata:\n  version: {}\n",
        Value::String(source.prepared.template().id().short())
    ));
    // The constants as JSON text that Python's `json` reads back (no Python literal to escape).
    let metrics = serde_json::to_string(
        &names
            .iter()
            .map(|(n, m, g)| json!([n, m, g]))
            .collect::<Vec<_>>(),
    )?;
    let utils = format!(
        "# Written by deltalogic {version} for the task {name}.\nimport json\n\n\
         NORMALISATION = {norm}\nTURNS = {turns}\nMETRICS = json.loads({metrics})\n\n{UTILS}",
        version = env!("CARGO_PKG_VERSION"),
        norm = Value::String(source.norm.as_str().into()),
        metrics = Value::String(metrics),
    );
    Ok(TaskFolder {
        name,
        yaml,
        data,
        utils,
        docs,
        metrics: names.into_iter().map(|(n, _, _)| n).collect(),
    })
}

/// `text` as part of a Python identifier (lm-eval's `!function utils.NAME`).
fn ident(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
