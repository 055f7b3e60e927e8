//! Reports: the stored results a selection keeps, each evaluated by its benchmark, rendered as
//! Markdown tables, one long CSV, JSON, an SVG figure, or one explorable HTML file; and the
//! exports for other tools: lm-evaluation-harness's files, Parquet/CSV tables and a Hugging Face
//! dataset folder. Nothing here computes a score: a report reads results and the items they name.

mod csv;
pub mod dataset_card;
pub mod frames;
mod html;
mod html_data;
mod json;
pub mod lm_eval;
pub mod lm_eval_task;
mod markdown;
pub mod robustness;
mod svg;
pub mod table;
mod turns;

pub use html::html;
pub use markdown::{cell, markdown};
pub use svg::svg;

use crate::benchmarks::prompts::TemplateRecord;
use crate::benchmarks::{Catalogue, Evaluation};
use crate::eval::evaluated::Kept;
use crate::eval::{ModelRecord, ResultRecord};
use crate::store::{Id, Names, Store, StoredSet};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// Seed of every bootstrap interval in reports: fixed so a report is the same every time.
pub const BOOTSTRAP_SEED: u64 = 20261121;

/// The metrics of one model on one set under one template and label normalisation.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub benchmark: String,
    #[serde(skip)]
    pub title: &'static str,
    pub model: String,
    pub set: String,
    pub template: String,
    pub normalisation: String,
    pub result_id: String,
    #[serde(flatten)]
    pub evaluation: Evaluation,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Csv,
    Json,
    /// One self-contained file, written beside the store (it reads items and scores: [`html`]).
    Html,
}

/// The report in a text format (the HTML file reads the store too: [`html`]).
pub fn render(entries: &[Entry], format: Format) -> Result<String> {
    Ok(match format {
        Format::Md => markdown(entries),
        Format::Csv => csv::long(entries),
        Format::Json => json::document(entries)?,
        Format::Html => anyhow::bail!("the HTML report reads the store: use report::html"),
    })
}

/// Display names of ids: the names pointing at them, else the short id.
fn namer(reg: &Store, names: Names) -> Result<BTreeMap<Id, String>> {
    let mut out: BTreeMap<Id, String> = BTreeMap::new();
    for (name, id) in reg.names(names)? {
        out.entry(id)
            .and_modify(|n| *n = format!("{n}, {name}"))
            .or_insert(name);
    }
    Ok(out)
}

/// Which results a report shows: the named models and sets (all models when none are named;
/// without sets, only sets that a name points at now, so a rebuilt name hides the old set).
struct Selection {
    model_names: BTreeMap<Id, String>,
    /// Served models, marked as such wherever a report names them.
    served: std::collections::BTreeSet<Id>,
    set_names: BTreeMap<Id, String>,
    models: Option<Vec<Id>>,
    sets: Option<Vec<Id>>,
}

impl Selection {
    fn new(reg: &Store, models: &[String], sets: &[String]) -> Result<Selection> {
        let resolve = |names: &[String], table: Names| -> Result<Option<Vec<Id>>> {
            if names.is_empty() {
                return Ok(None);
            }
            names
                .iter()
                .map(|n| {
                    reg.lookup(table, n)?
                        .with_context(|| format!("no {} named `{n}`", table.noun()))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some)
        };
        Ok(Selection {
            model_names: namer(reg, Names::Models)?,
            served: reg
                .all::<ModelRecord>()?
                .into_iter()
                .filter(|(_, m)| crate::eval::served::is_served(m))
                .map(|(id, _)| id)
                .collect(),
            set_names: namer(reg, Names::Sets)?,
            models: resolve(models, Names::Models)?,
            sets: resolve(sets, Names::Sets)?,
        })
    }

    fn keeps(&self, model: Id, set: Id) -> bool {
        let keep_model = self.models.as_ref().is_none_or(|m| m.contains(&model));
        let keep_set = match &self.sets {
            Some(s) => s.contains(&set),
            None => self.set_names.contains_key(&set),
        };
        keep_model && keep_set
    }

    fn model(&self, id: Id) -> String {
        let name = self
            .model_names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| id.short());
        if self.served.contains(&id) {
            format!("{name} (served)")
        } else {
            name
        }
    }

    fn set(&self, id: Id) -> String {
        self.set_names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| id.short())
    }
}

fn template_name(reg: &Store, id: [u8; 32]) -> Result<String> {
    Ok(reg
        .get::<TemplateRecord>(&Id(id))?
        .map_or_else(|| Id(id).short(), |t| t.name))
}

/// Every stored result whose model and set are among the named ones (all models when none are
/// named; without sets, only sets that a name points at now), evaluated by its benchmark (one of
/// `benchmarks`), in the order benchmark, set, model, template, normalisation. Evaluations are
/// read back from the store where it keeps them, and kept there when it is open for writing
/// (`eval::evaluated`).
pub fn entries(
    reg: &Store,
    benchmarks: Catalogue,
    models: &[String],
    sets: &[String],
) -> Result<Vec<Entry>> {
    let sel = Selection::new(reg, models, sets)?;
    let mut kept = Kept::new(reg);
    let mut out = Vec::new();
    for (rid, r) in reg.all::<ResultRecord>()? {
        let (model, set) = (Id(r.model), Id(r.set));
        if !sel.keeps(model, set) {
            continue;
        }
        let stored = reg.get::<StoredSet>(&set)?.with_context(|| {
            format!("result {} names a missing set {}", rid.short(), set.short())
        })?;
        let benchmark = benchmarks.named(&stored.benchmark)?;
        let evaluation = kept
            .get(benchmark, rid, &r, BOOTSTRAP_SEED)
            .with_context(|| format!("result {}", rid.short()))?;
        out.push(Entry {
            benchmark: benchmark.name().to_string(),
            title: benchmark.title(),
            model: sel.model(model),
            set: sel.set(set),
            template: template_name(reg, r.template)?,
            normalisation: r.normalisation.clone(),
            result_id: rid.hex(),
            evaluation,
        });
    }
    kept.keep()?;
    // Benchmarks in registration order, then by their settings; normalisations in their own
    // order (the paper's mean first).
    let rank = |name: &str| benchmarks.rank(name);
    out.sort_by(|a, b| {
        (
            rank(&a.benchmark),
            &a.set,
            &a.model,
            &a.template,
            robustness::order(&a.normalisation),
        )
            .cmp(&(
                rank(&b.benchmark),
                &b.set,
                &b.model,
                &b.template,
                robustness::order(&b.normalisation),
            ))
    });
    Ok(out)
}

/// The entries of each benchmark, in report order.
fn by_benchmark(entries: &[Entry]) -> Vec<&[Entry]> {
    entries
        .chunk_by(|a, b| a.benchmark == b.benchmark)
        .collect()
}

/// The settings besides the model that tell a benchmark's entries apart, with their titles.
type Setting = (&'static str, fn(&Entry) -> &str);
const SETTINGS: [Setting; 3] = [
    ("Set", |r| &r.set),
    ("Template", |r| &r.template),
    ("Normalisation", |r| &r.normalisation),
];

/// The settings that vary among entries: only these get a column (or a label line), so a
/// one-set comparison reads like the paper's table.
fn varying(entries: &[Entry]) -> Vec<Setting> {
    SETTINGS
        .into_iter()
        .filter(|(_, get)| entries.iter().any(|r| get(r) != get(&entries[0])))
        .collect()
}
