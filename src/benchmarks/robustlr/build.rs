//! The RobustLR builder: for each set, walk the base items in a seeded order and keep the first
//! `per_set` that give a family; count why the others did not.

use super::perturb::{self, Base, Skip};
use super::{Family, SetName};
use crate::datasets::BaseItem;
use crate::logic::english;
use crate::rng::Rng;
use crate::store::Record;
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;

pub use crate::benchmarks::deltalogic::generated_items;

/// Where the base theories come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Ingested ProofWriter items (`deltalogic ingest proofwriter ...`).
    #[value(name = "proofwriter")]
    ProofWriter,
    /// The project's generated theories ([`generated_items`]).
    Generated,
}

impl Source {
    /// The `Origin::dataset` of the items this source uses.
    pub fn dataset(self) -> &'static str {
        match self {
            Source::ProofWriter => "proofwriter",
            Source::Generated => "generated",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BuildConfig {
    pub seed: u64,
    /// Families wanted per set.
    pub per_set: usize,
    pub from: Source,
}

/// What one set's build produced and why candidates were passed over.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SetReport {
    pub set: String,
    pub wanted: usize,
    pub families: usize,
    pub items: usize,
    /// Base items looked at.
    pub tried: usize,
    /// The solver refuses the base theory under the set's semantics.
    pub unsolvable: usize,
    /// No rule of the set's shape that the query's proof needs.
    pub no_needed_rule: usize,
    /// A perturbed theory the solver refuses (the family is dropped whole).
    pub variant_unsolvable: usize,
    /// group → label → items.
    pub labels: BTreeMap<String, BTreeMap<String, usize>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    pub source: Source,
    /// Items of the source whose premises and query parse.
    pub candidates: usize,
    /// Items of the source outside the grammar (never used).
    pub unparseable: usize,
    pub sets: Vec<SetReport>,
}

/// Builds every set from the `config.from` items among `items`. The same items and seed give
/// the same families in the same order: items are taken in id order and each set shuffles them
/// with its own seeded stream.
pub fn families(items: &[BaseItem], config: &BuildConfig) -> Result<(Vec<Family>, BuildReport)> {
    let dataset = config.from.dataset();
    let mut chosen: Vec<(crate::store::Id, &BaseItem)> = items
        .iter()
        .filter(|i| i.origin.dataset == dataset)
        .map(|i| (i.id(), i))
        .collect();
    if chosen.is_empty() {
        bail!("no {dataset} items to build RobustLR from (ingest or generate them first)");
    }
    chosen.sort_by_key(|(id, _)| *id);
    let mut unparseable = 0;
    let mut bases = Vec::new();
    for (id, item) in &chosen {
        let theory = super::parse_premises(&item.premises);
        let query = english::parse_query(&item.query);
        match (theory, query) {
            (Ok(theory), Ok(query)) => bases.push((
                *id,
                format!("{dataset}:{}", item.origin.external_id),
                Base {
                    texts: &item.premises,
                    theory,
                    query_text: &item.query,
                    query,
                },
            )),
            _ => unparseable += 1,
        }
    }
    let mut families = Vec::new();
    let mut reports = Vec::new();
    for set in SetName::ALL {
        let mut order: Vec<usize> = (0..bases.len()).collect();
        Rng::derive(config.seed, &format!("robustlr/{set}")).shuffle(&mut order);
        let mut report = SetReport {
            set: set.as_str().to_string(),
            wanted: config.per_set,
            ..SetReport::default()
        };
        for k in order {
            if report.families == config.per_set {
                break;
            }
            let (id, theory, base) = &bases[k];
            report.tried += 1;
            let mut rng = Rng::derive(config.seed, &format!("robustlr/{set}/{}", id.hex()));
            match perturb::family(base, set, &mut rng) {
                Ok(items) => {
                    for item in &items {
                        *report
                            .labels
                            .entry(item.group.clone())
                            .or_default()
                            .entry(item.label.as_str().to_string())
                            .or_default() += 1;
                    }
                    report.families += 1;
                    report.items += items.len();
                    families.push(Family {
                        theory: theory.clone(),
                        set,
                        items,
                    });
                }
                Err(Skip::Unsolvable) => report.unsolvable += 1,
                Err(Skip::NoNeededRule) => report.no_needed_rule += 1,
                Err(Skip::VariantUnsolvable) => report.variant_unsolvable += 1,
            }
        }
        reports.push(report);
    }
    let report = BuildReport {
        source: config.from,
        candidates: bases.len(),
        unparseable,
        sets: reports,
    };
    Ok((families, report))
}
