//! `deltalogic build robustlr`: RobustLR families (`crate::robustlr`) become True/False questions,
//! one per item, tagged with their set, group and family; and `deltalogic build glore`: the
//! ingested GLoRE RobustLR items become plain labelled questions.
//!
//! Gold answers of `robustlr` questions are the solver's labels, re-derived by
//! [`super::verify`]: contrast sets under [`Semantics::ClosedWorld`], equivalence sets under
//! [`Semantics::Classical`]. GLoRE gold answers are the dataset's own: the grammar reads none of
//! its theories whole (see `docs/robustlr.md`), so no solver checks them.

use super::{store_set, Choice, Question, Stored};
use crate::datasets::BaseItem;
use crate::episodes::Semantics;
use crate::logic::Label;
use crate::registry::{canonical, Id, Record, Registry};
use crate::robustlr::{self, BuildConfig, BuildReport, Family, Source};
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;

pub const BENCHMARK: &str = "robustlr";
pub const GLORE_BENCHMARK: &str = "glore-robustlr";
/// The `Origin::dataset` of ingested GLoRE items.
const GLORE_DATASET: &str = "robustlr-glore";
/// Bumped when the questions made from the same families change, so that specs change with them.
const BUILDER_VERSION: u32 = 1;

/// Tag keys: the RobustLR set (`C-CS`, ...), the item's group (`BASE`, `CONJ`, ...), the family
/// (the base item's `dataset:external id`) and the item's place in it (`0`: the base item).
pub const SET: &str = "set";
pub const GROUP: &str = "group";
pub const FAMILY: &str = "family";
pub const POSITION: &str = "position";

/// What `build robustlr` made.
#[derive(Clone, Debug, Serialize)]
pub struct BuildOutcome {
    #[serde(flatten)]
    pub stored: Stored,
    pub report: BuildReport,
}

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

fn semantics(s: robustlr::Semantics) -> Semantics {
    match s {
        robustlr::Semantics::ClosedWorld => Semantics::ClosedWorld,
        robustlr::Semantics::Classical => Semantics::Classical,
    }
}

/// True and False (and Uncertain when `uncertain`), in the order the prompt names them.
fn options(uncertain: bool) -> Vec<Choice> {
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
                semantics: semantics(item.semantics),
                premises: item.premises.clone(),
                query: item.query.clone(),
                options: options(false),
                gold: item.label,
                revises: None,
                tags: vec![
                    (SET.to_string(), f.set.as_str().to_string()),
                    (GROUP.to_string(), item.group.clone()),
                    (FAMILY.to_string(), f.theory.clone()),
                    (POSITION.to_string(), i.to_string()),
                ],
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
pub fn build(reg: &Registry, config: &BuildConfig, name: &str) -> Result<BuildOutcome> {
    let items: Vec<BaseItem> = match config.from {
        Source::Generated => robustlr::generated_items(config.seed),
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
                    "no ProofWriter items in {}: run `deltalogic ingest proofwriter \
                     ../shared/datasets/proofwriter/logic-lm` first, or build --from generated",
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
    let (families, report) = robustlr::build(&items, config)?;
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

/// Stores every ingested GLoRE RobustLR item as a question with the dataset's gold answer, as set
/// `name`. Options are True/False, plus Uncertain when some item's answer is Neutral.
pub fn build_glore(reg: &Registry, name: &str) -> Result<GloreOutcome> {
    let items: Vec<(Id, BaseItem)> = reg
        .all::<BaseItem>()?
        .into_iter()
        .filter(|(_, i)| i.origin.dataset == GLORE_DATASET)
        .collect();
    if items.is_empty() {
        bail!(
            "no GLoRE RobustLR items in {}: run `deltalogic ingest robustlr-glore \
             ../shared/datasets/robustlr/glore_subset` first",
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
                benchmark: GLORE_BENCHMARK.to_string(),
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
        benchmark: GLORE_BENCHMARK,
        builder_version: BUILDER_VERSION,
    };
    let spec_json = String::from_utf8(canonical(&spec)).expect("JSON is UTF-8");
    let stored = store_set(reg, GLORE_BENCHMARK, spec_json, &qs, name)?;
    Ok(GloreOutcome {
        stored,
        labels,
        gold: super::DATASET_GOLD_NOT_CHECKED,
    })
}
