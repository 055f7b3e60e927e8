//! The GLoRE subset of RobustLR (`ingest robustlr-glore`, `build glore`): Yes/No items asked as
//! True/False(/Uncertain) questions with the dataset's gold answers. The grammar reads none of its
//! theories whole (see `docs/robustlr.md`), so no solver checks them; the metric is accuracy.

use super::options;
use crate::benchmarks::question::{self, store_set, Question, Stored, DATASET_GOLD_NOT_CHECKED};
use crate::benchmarks::view::Counted;
use crate::benchmarks::{parse_args, Answered, Benchmark, Built, Evaluation};
use crate::datasets::BaseItem;
use crate::logic::{Label, Semantics};
use crate::store::{canonical, Id, Store};
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;

pub const BENCHMARK: &str = "glore-robustlr";
/// The `Origin::dataset` of ingested GLoRE items.
const DATASET: &str = "robustlr-glore";
/// Bumped when the questions made from the same items change, so that specs change with them.
const BUILDER_VERSION: u32 = 1;

/// What `build glore` made.
#[derive(Clone, Debug, Serialize)]
pub struct GloreOutcome {
    #[serde(flatten)]
    pub stored: Stored,
    /// Gold answers per label.
    pub labels: BTreeMap<String, usize>,
    /// Why no solver checked the gold answers.
    pub gold: &'static str,
}

/// Stores every ingested GLoRE RobustLR item as a question with the dataset's gold answer, as set
/// `name`. Options are True/False, plus Uncertain when some item's answer is Neutral.
pub fn build(reg: &Store, name: &str) -> Result<GloreOutcome> {
    let items: Vec<(Id, BaseItem)> = reg
        .all::<BaseItem>()?
        .into_iter()
        .filter(|(_, i)| i.origin.dataset == DATASET)
        .collect();
    if items.is_empty() {
        bail!(
            "no GLoRE RobustLR items in {}: run `deltalogic ingest robustlr-glore` first",
            reg.path().display()
        );
    }
    let golds = items
        .iter()
        .map(|(_, i)| {
            i.dataset_label.ok_or_else(|| {
                let o = &i.origin;
                anyhow::anyhow!("GLoRE item {} {} has no answer", o.file, o.position)
            })
        })
        .collect::<Result<Vec<Label>>>()?;
    let uncertain = golds.contains(&Label::Uncertain);
    let mut labels = BTreeMap::new();
    let qs: Vec<Question> = items
        .iter()
        .zip(&golds)
        .map(|((id, item), &gold)| {
            *labels.entry(gold.as_str().to_string()).or_default() += 1;
            Question {
                benchmark: BENCHMARK.to_string(),
                semantics: Semantics::DatasetGold,
                premises: item.premises.clone(),
                query: item.query.clone(),
                options: options(uncertain),
                gold,
                revises: None,
                tags: Vec::new(),
                base_item: id.0,
            }
        })
        .collect();
    #[derive(Serialize)]
    struct Spec {
        benchmark: &'static str,
        builder_version: u32,
    }
    let spec = Spec {
        benchmark: BENCHMARK,
        builder_version: BUILDER_VERSION,
    };
    let spec_json = String::from_utf8(canonical(&spec)).expect("JSON is UTF-8");
    let stored = store_set(reg, BENCHMARK, spec_json, &qs, name)?;
    Ok(GloreOutcome {
        stored,
        labels,
        gold: DATASET_GOLD_NOT_CHECKED,
    })
}

pub struct Glore;

/// `deltalogic build glore`: the ingested GLoRE RobustLR items (`ingest robustlr-glore`) as
/// questions with the dataset's gold answers; no solver checks them.
#[derive(clap::Parser, Debug)]
struct BuildArgs {
    /// Name of the set.
    #[arg(long, default_value = "glore-robustlr")]
    name: String,
}

impl Benchmark for Glore {
    fn name(&self) -> &'static str {
        BENCHMARK
    }

    fn command(&self) -> &'static str {
        "glore"
    }

    fn options(&self) -> clap::Command {
        <BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let a: BuildArgs = parse_args(options)?;
        let out = build(store, &a.name)?;
        let labels: Vec<String> = out.labels.iter().map(|(l, n)| format!("{n} {l}")).collect();
        Built::new(
            &out,
            format!(
                "gold answers: {}\ngold answers not checked by the solver: {}\n{}",
                labels.join(", "),
                out.gold,
                out.stored.text()
            ),
        )
    }

    fn title(&self) -> &'static str {
        "GLoRE RobustLR"
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        let rows = question::rows(store, answered)?;
        question::accuracy_evaluation(
            &rows,
            &question::GROUP_TAGS,
            seed,
            "Gold answers are the dataset's own.",
        )
    }

    fn counted(&self, store: &Store, answered: &[Answered]) -> Result<Option<Counted>> {
        let rows = question::rows(store, answered)?;
        Ok(Some(question::accuracy_counted(
            &rows,
            &question::GROUP_TAGS,
        )))
    }
}
