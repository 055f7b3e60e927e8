//! RobustLR (Sanyal et al., EMNLP 2022): logical contrast and equivalence sets built from
//! ProofWriter-style theories, asked as True/False questions (one per item, tagged with its
//! [`Membership`]: set, family, place and group), scored by the paper's weighted F1 and consistency. The GLoRE subset of
//! RobustLR lives beside it ([`glore`]).
//!
//! Gold answers of `robustlr` questions are the solver's labels, re-derived by
//! [`question::verify`]: contrast sets under [`Semantics::ClosedWorld`], equivalence sets under
//! [`Semantics::Classical`].

mod build;
mod family;
pub mod glore;
pub mod metrics;
mod perturb;

pub use build::{families, generated_items, BuildConfig, BuildReport, SetReport, Source};
pub use family::*;
pub use metrics::{weighted_f1, RobustMetrics, Scored, SetMetrics};

use super::question::{self, store_set, Choice, Question, Stored};
use super::view::Counted;
use super::{parse_args, Answered, Benchmark, Built, Column, Evaluation, Group, Panel};
use crate::datasets::BaseItem;
use crate::logic::Label;
use crate::store::{canonical, Id, Record, Store};
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;

pub const BENCHMARK: &str = "robustlr";
/// Bumped when the questions made from the same families change, so that specs change with them.
const BUILDER_VERSION: u32 = 1;

/// What `build robustlr` made.
#[derive(Clone, Debug, Serialize)]
pub struct BuildOutcome {
    #[serde(flatten)]
    pub stored: Stored,
    pub report: BuildReport,
}

/// True and False (and Uncertain when `uncertain`), in the order the prompt names them.
pub(crate) fn options(uncertain: bool) -> Vec<Choice> {
    let mut labels = vec![Label::True, Label::False];
    if uncertain {
        labels.push(Label::Uncertain);
    }
    labels
        .into_iter()
        .map(|label| Choice {
            label,
            text: label.as_str().to_string(),
        })
        .collect()
}

/// One question per item of every family. `base_items` maps a family's `theory` to the id of
/// the base item it came from.
pub fn questions(families: &[Family], base_items: &BTreeMap<String, Id>) -> Result<Vec<Question>> {
    let mut out = Vec::new();
    for f in families {
        let base = base_items.get(&f.theory).copied().unwrap_or(Id([0; 32]));
        for (i, item) in f.items.iter().enumerate() {
            // RobustLR's label space is True/False; the builder keeps only decided bases and
            // equivalences keep the label, so an Uncertain gold is a builder bug.
            if item.label == Label::Uncertain {
                bail!(
                    "{} {} item {i} ({}) is Uncertain: RobustLR questions are True/False",
                    f.set,
                    f.theory,
                    item.group
                );
            }
            let mut q = Question {
                benchmark: BENCHMARK.to_string(),
                semantics: item.semantics,
                premises: item.premises.clone(),
                query: item.query.clone(),
                options: options(false),
                gold: item.label,
                revises: None,
                tags: Membership {
                    set: f.set,
                    family: f.theory.clone(),
                    position: i,
                    group: item.group.clone(),
                }
                .tags(),
                base_item: base.0,
            };
            q.sort_tags();
            out.push(q);
        }
    }
    Ok(out)
}

/// Builds the RobustLR families from ingested ProofWriter items or generated theories and stores
/// their questions as set `name`.
pub fn build(reg: &Store, config: &BuildConfig, name: &str) -> Result<BuildOutcome> {
    let items: Vec<BaseItem> = match config.from {
        Source::Generated => generated_items(config.seed),
        Source::ProofWriter => {
            let dataset = config.from.dataset();
            let items: Vec<BaseItem> = reg
                .all::<BaseItem>()?
                .into_iter()
                .map(|(_, i)| i)
                .filter(|i| i.origin.dataset == dataset)
                .collect();
            if items.is_empty() {
                bail!(
                    "no ProofWriter items in {}: run `deltalogic ingest proofwriter` first, or \
                     build --from generated",
                    reg.path().display()
                );
            }
            items
        }
    };
    let base_items: BTreeMap<String, Id> = items
        .iter()
        .map(|i| {
            let o = &i.origin;
            (format!("{}:{}", o.dataset, o.external_id), i.id())
        })
        .collect();
    let (families, report) = build::families(&items, config)?;
    let qs = questions(&families, &base_items)?;
    #[derive(Serialize)]
    struct Spec<'a> {
        benchmark: &'static str,
        builder_version: u32,
        config: &'a BuildConfig,
    }
    let spec = Spec {
        benchmark: BENCHMARK,
        builder_version: BUILDER_VERSION,
        config,
    };
    let spec_json = String::from_utf8(canonical(&spec)).expect("JSON is UTF-8");
    let stored = store_set(reg, BENCHMARK, spec_json, &qs, name)?;
    Ok(BuildOutcome { stored, report })
}

pub struct RobustLr;

const COLUMNS: [Column; 2] = [
    Column {
        key: "weighted_f1",
        title: "Weighted F1",
        headline: true,
    },
    Column {
        key: "consistency",
        title: "Consistency",
        headline: true,
    },
];

/// `deltalogic build robustlr`: contrast and equivalence families (six sets) as True/False
/// questions; every gold answer is the solver's (closed world for contrast sets, classical for
/// equivalence sets).
#[derive(clap::Parser, Debug)]
struct BuildArgs {
    /// Base theories: ingested ProofWriter items or fresh generated theories.
    #[arg(long, value_enum, default_value_t = Source::ProofWriter)]
    from: Source,
    /// Seed of every random choice; the same inputs and seed give the same questions.
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::seed())]
    seed: u64,
    /// Families per set (kept small so that a real model scores the set in minutes).
    #[arg(long, default_value_t = 10, value_parser = crate::bounds::count(1, crate::bounds::MAX_SIZE))]
    per_set: usize,
    /// Name of the set.
    #[arg(long, default_value = "robustlr")]
    name: String,
}

impl BuildOutcome {
    pub fn text(&self) -> String {
        let r = &self.report;
        let mut s = format!(
            "{} {} items in the grammar ({} outside it)\n{:<6} {:>8} {:>6} {:>6} {:>11} {:>14} {:>16}\n",
            r.candidates,
            r.source.dataset(),
            r.unparseable,
            "set",
            "families",
            "items",
            "tried",
            "unsolvable",
            "no needed rule",
            "variant refused"
        );
        for set in &r.sets {
            s += &format!(
                "{:<6} {:>8} {:>6} {:>6} {:>11} {:>14} {:>16}\n",
                set.set,
                format!("{}/{}", set.families, set.wanted),
                set.items,
                set.tried,
                set.unsolvable,
                set.no_needed_rule,
                set.variant_unsolvable
            );
        }
        s += "gold answers: the solver's (closed world: contrast sets; classical: equivalence sets)\n";
        s += &self.stored.text();
        s
    }
}

impl Benchmark for RobustLr {
    fn name(&self) -> &'static str {
        BENCHMARK
    }

    fn options(&self) -> clap::Command {
        <BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let a: BuildArgs = parse_args(options)?;
        let config = BuildConfig {
            seed: a.seed,
            per_set: a.per_set,
            from: a.from,
        };
        let out = build(store, &config, &a.name)?;
        Built::new(&out, out.text())
    }

    fn title(&self) -> &'static str {
        "RobustLR"
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        let rows = question::rows(store, answered)?;
        let m = metrics::from_rows(&rows, seed, super::RESAMPLES)?;
        let row = |by: String,
                   value: &str,
                   f1: &crate::metrics::Metric,
                   consistency: Option<&crate::metrics::Metric>| Group {
            by,
            value: value.to_string(),
            metrics: vec![Some(f1.clone()), consistency.cloned()],
        };
        let mut groups = vec![row(
            "overall".into(),
            "all",
            &m.overall,
            Some(&m.consistency),
        )];
        for (set, s) in &m.by_set {
            groups.push(row("set".into(), set, &s.weighted_f1, Some(&s.consistency)));
            for (split, map) in [("group", &s.by_group), ("label", &s.by_label)] {
                groups.extend(
                    map.iter()
                        .map(|(g, f1)| row(format!("{set} {split}"), g, f1, None)),
                );
            }
        }
        Ok(Evaluation {
            n: rows.len(),
            columns: &COLUMNS,
            groups,
            metrics: serde_json::to_value(&m)?,
            note: "Weighted F1 (scikit-learn's, per label weighted by its gold support) of each \
                   family's items, averaged over families; per group and per gold label over the \
                   family's items in it. Consistency: the share of a family's perturbed items whose \
                   answer differs from the base item's exactly when the gold answer does. n counts \
                   families; intervals resample families. Gold answers are the solver's.",
            panel: Panel::HEADLINE,
            findings: &[],
        })
    }

    fn counted(&self, store: &Store, answered: &[Answered]) -> Result<Option<Counted>> {
        let rows = question::rows(store, answered)?;
        Ok(Some(Counted(metrics::counted(&rows)?)))
    }
}
