//! The DeltaLogic set builder: for each (source, edit type) cell, walk the candidate items in a
//! seeded order, propose edits, keep the first whose effect the solvers prove, count the rest.

use super::episode::{verify, EditType, Episode};
use super::{folio, theory};
use crate::datasets::{BaseItem, Origin};
use crate::logic::generator::{self, GenConfig};
use crate::logic::{Label, World};
use crate::logic::{Premise, Semantics};
use crate::rng::Rng;
use crate::store::{canonical, Id, Names, Record, Store, StoredSet, StoredSpec};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Bumped when the builder's algorithm changes, so that specs (and set ids) change with it.
const BUILDER_VERSION: u32 = 1;
/// Candidate edits tried per item before moving to the next item.
const TRIES_PER_ITEM: usize = 40;
/// Fresh theories generated per world for `--from generated`.
const GENERATED_THEORIES: u64 = 80;
/// A DeltaLogic set holds this many episodes unless `--per-type` says otherwise.
const DEFAULT_TOTAL: usize = 100;

/// Where the premises come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PremiseSource {
    /// Ingested FOLIO, ProofWriter (and, with --extended, RuleTaker) items.
    Ingested,
    /// Fresh theories from the project's seeded generator: needs nothing ingested.
    Generated,
}

/// Everything that determines a build; its canonical JSON is hashed into the set.
#[derive(Clone, Debug, Serialize)]
pub struct BuildSpec {
    pub seed: u64,
    pub from: PremiseSource,
    /// Episodes per (source, edit type) cell; None = 100 split over the cells.
    pub per_type: Option<usize>,
    /// Add every cell the engine can make soundly, beyond the paper's mix.
    pub extended: bool,
}

#[derive(Clone, Copy, Debug, Serialize)]
struct Cell {
    source: &'static str,
    semantics: Semantics,
    edit_type: EditType,
}

impl BuildSpec {
    fn cells(&self) -> Vec<Cell> {
        use EditType::*;
        use Semantics::*;
        let c = |source, semantics, edit_type| Cell {
            source,
            semantics,
            edit_type,
        };
        let (paper, more) = match self.from {
            PremiseSource::Ingested => (
                vec![
                    c("folio", FirstOrder, SupportInsertion),
                    c("folio", FirstOrder, DefeatingFact),
                    c("folio", FirstOrder, IrrelevantAddition),
                    c("proofwriter", OpenWorld, SupportRemoval),
                    c("proofwriter", OpenWorld, IrrelevantAddition),
                ],
                vec![
                    c("folio", FirstOrder, SupportRemoval),
                    c("proofwriter", OpenWorld, SupportInsertion),
                    c("ruletaker", ClosedWorld, SupportInsertion),
                    c("ruletaker", ClosedWorld, DefeatingFact),
                    c("ruletaker", ClosedWorld, SupportRemoval),
                    c("ruletaker", ClosedWorld, IrrelevantAddition),
                ],
            ),
            PremiseSource::Generated => (
                vec![
                    c("generated", OpenWorld, SupportInsertion),
                    c("generated", ClosedWorld, DefeatingFact),
                    c("generated", OpenWorld, SupportRemoval),
                    c("generated", OpenWorld, IrrelevantAddition),
                ],
                vec![
                    c("generated", ClosedWorld, SupportInsertion),
                    c("generated", ClosedWorld, SupportRemoval),
                    c("generated", ClosedWorld, IrrelevantAddition),
                ],
            ),
        };
        if self.extended {
            paper.into_iter().chain(more).collect()
        } else {
            paper
        }
    }

    fn quota(&self, cells: usize) -> usize {
        self.per_type.unwrap_or(DEFAULT_TOTAL / cells.max(1))
    }

    fn canonical_json(&self) -> String {
        #[derive(Serialize)]
        struct Versioned<'a> {
            benchmark: &'static str,
            builder_version: u32,
            generator: &'static str,
            spec: &'a BuildSpec,
            cells: Vec<Cell>,
            quota: usize,
        }
        let cells = self.cells();
        let quota = self.quota(cells.len());
        let v = Versioned {
            benchmark: "deltalogic",
            builder_version: BUILDER_VERSION,
            generator: generator::VERSION,
            spec: self,
            cells,
            quota,
        };
        String::from_utf8(canonical(&v)).expect("JSON is UTF-8")
    }
}

/// Whether an item's starting label admits the edit type at all (not a rejection if not).
fn eligible(t: EditType, s: Semantics, y0: Label) -> bool {
    match (t, s) {
        (EditType::IrrelevantAddition, _) => true,
        (EditType::DefeatingFact, Semantics::OpenWorld) => false,
        (EditType::SupportInsertion, Semantics::ClosedWorld) => y0 == Label::False,
        // FOLIO: Uncertain problems take a sibling conclusion, decided ones a held-back premise.
        (EditType::SupportInsertion, Semantics::FirstOrder) => true,
        (_, Semantics::ClosedWorld) => y0 == Label::True,
        (EditType::SupportInsertion, _) => y0 == Label::Uncertain,
        _ => y0 != Label::Uncertain,
    }
}

/// What one cell of the build produced.
#[derive(Clone, Debug, Serialize)]
pub struct CellReport {
    pub source: String,
    pub semantics: Semantics,
    pub edit_type: EditType,
    pub wanted: usize,
    pub made: usize,
    /// Items looked at whose label admits the edit type.
    pub eligible_items: usize,
    /// Candidate edits tried whose effect did not hold.
    pub rejected: usize,
    /// Items the solvers could not use (unparseable, or undecided by the FOLIO checker).
    pub unusable_items: usize,
}

#[derive(Debug, Serialize)]
pub struct BuildOutcome {
    pub name: String,
    pub set: Id,
    pub spec: Id,
    pub episodes: usize,
    pub new_episodes: usize,
    pub generated_items: usize,
    pub cells: Vec<CellReport>,
}

/// Builds a set and stores it (with its episodes and any generated items) in one transaction.
pub fn build(reg: &Store, spec: &BuildSpec, name: &str) -> Result<BuildOutcome> {
    let generated = match spec.from {
        PremiseSource::Generated => generated_items(spec.seed),
        PremiseSource::Ingested => Vec::new(),
    };
    let mut items: Vec<(Id, BaseItem)> = match spec.from {
        PremiseSource::Generated => generated.iter().map(|i| (i.id(), i.clone())).collect(),
        PremiseSource::Ingested => reg.all::<BaseItem>()?,
    };
    items.sort_by_key(|(id, _)| *id);
    let cells = spec.cells();
    let quota = spec.quota(cells.len());
    let mut pools = Pools::new(&items);
    let mut episodes = Vec::new();
    let mut reports = Vec::new();
    for cell in &cells {
        let (eps, report) = pools.fill(cell, quota, spec.seed)?;
        episodes.extend(eps);
        reports.push(report);
    }
    if episodes.is_empty() {
        bail!(
            "no episode could be built from {} items: ingest FOLIO and ProofWriter first, or use --from generated",
            items.len()
        );
    }
    let spec_json = spec.canonical_json();
    reg.write(|w| {
        for item in &generated {
            w.put(item)?;
        }
        let (spec_id, _) = w.put(&StoredSpec { json: spec_json })?;
        let mut ids = Vec::new();
        let mut new = 0;
        for ep in &episodes {
            let (id, fresh) = w.put(ep)?;
            ids.push(id);
            new += usize::from(fresh);
        }
        let set = StoredSet::new(super::BENCHMARK, spec_id, ids);
        let n = set.members.len();
        let (set_id, _) = w.put(&set)?;
        w.name(Names::Sets, name, set_id)?;
        Ok(BuildOutcome {
            name: name.to_string(),
            set: set_id,
            spec: spec_id,
            episodes: n,
            new_episodes: new,
            generated_items: generated.len(),
            cells: reports,
        })
    })
}

/// Parsed cases, made lazily and kept across cells.
struct Pools<'a> {
    items: &'a [(Id, BaseItem)],
    theories: BTreeMap<Id, Option<theory::Case>>,
    folio: BTreeMap<Id, Option<folio::Case>>,
    /// FOLIO conclusions (with FOL) per premise set: the sibling insertions.
    siblings: BTreeMap<Vec<String>, Vec<Premise>>,
    /// FOLIO premises of every story: the source of irrelevant additions.
    foreign: Vec<Premise>,
}

impl<'a> Pools<'a> {
    fn new(items: &'a [(Id, BaseItem)]) -> Pools<'a> {
        let mut siblings: BTreeMap<Vec<String>, Vec<Premise>> = BTreeMap::new();
        let mut foreign = BTreeSet::new();
        for (_, item) in items.iter().filter(|(_, i)| i.origin.dataset == "folio") {
            let Some(formal) = &item.formal else { continue };
            if formal.premises.len() != item.premises.len() {
                continue;
            }
            for (t, f) in item.premises.iter().zip(&formal.premises) {
                foreign.insert(Premise {
                    text: t.clone(),
                    fol: Some(f.clone()),
                });
            }
            if let Some(c) = &formal.conclusion {
                let p = Premise {
                    text: item.query.clone(),
                    fol: Some(c.clone()),
                };
                let group = siblings.entry(item.premises.clone()).or_default();
                if !group.contains(&p) {
                    group.push(p);
                }
            }
        }
        Pools {
            items,
            theories: BTreeMap::new(),
            folio: BTreeMap::new(),
            siblings,
            foreign: foreign.into_iter().collect(),
        }
    }

    fn fill(&mut self, cell: &Cell, quota: usize, seed: u64) -> Result<(Vec<Episode>, CellReport)> {
        let key = format!(
            "cell/{}/{}/{}",
            cell.source,
            cell.semantics.as_str(),
            cell.edit_type
        );
        let mut rng = Rng::derive(seed, &key);
        let mut order: Vec<usize> = (0..self.items.len())
            .filter(|&i| {
                let it = &self.items[i].1;
                it.origin.dataset == cell.source && semantics_of(it) == Some(cell.semantics)
            })
            .collect();
        rng.shuffle(&mut order);
        let mut report = CellReport {
            source: cell.source.to_string(),
            semantics: cell.semantics,
            edit_type: cell.edit_type,
            wanted: quota,
            made: 0,
            eligible_items: 0,
            rejected: 0,
            unusable_items: 0,
        };
        let mut used_premise_sets = BTreeSet::new();
        let mut out = Vec::new();
        for i in order {
            if out.len() == quota {
                break;
            }
            let (id, item) = &self.items[i];
            // One episode per premise set per cell keeps a cell from being one theory's variations.
            if used_premise_sets.contains(&item.premises) {
                continue;
            }
            let Some(found) = self.try_item(*id, item, cell, &mut rng, &mut report) else {
                continue;
            };
            let ep = found.with_context(|| format!("item {}", id.short()))?;
            verify(&ep).with_context(|| {
                format!(
                    "built episode from item {} failed re-verification",
                    id.short()
                )
            })?;
            used_premise_sets.insert(item.premises.clone());
            out.push(ep);
        }
        report.made = out.len();
        Ok((out, report))
    }

    /// One item: None if it is unusable, ineligible or every candidate was rejected.
    fn try_item(
        &mut self,
        id: Id,
        item: &BaseItem,
        cell: &Cell,
        rng: &mut Rng,
        report: &mut CellReport,
    ) -> Option<Result<Episode>> {
        let (query, found) = if cell.semantics == Semantics::FirstOrder {
            let case = self.folio.entry(id).or_insert_with(|| folio_case(item));
            let Some(case) = case.as_ref() else {
                report.unusable_items += 1;
                return None;
            };
            if !eligible(cell.edit_type, cell.semantics, case.y0) {
                return None;
            }
            let siblings = self
                .siblings
                .get(&item.premises)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let (found, tried) =
                case.edit(cell.edit_type, siblings, &self.foreign, rng, TRIES_PER_ITEM);
            report.eligible_items += 1;
            report.rejected += tried - usize::from(found.is_some());
            (case.query.clone(), found)
        } else {
            let world = crate::logic::premise::world_of(cell.semantics);
            let case = self
                .theories
                .entry(id)
                .or_insert_with(|| theory::Case::new(&item.premises, &item.query, world).ok());
            let Some(case) = case.as_ref() else {
                report.unusable_items += 1;
                return None;
            };
            // Closed world: edits are defined for positive queries (a negated query is itself a
            // negation-as-failure condition).
            if !eligible(cell.edit_type, cell.semantics, case.y0)
                || (world == World::Closed && !case.positive())
            {
                return None;
            }
            let (found, tried) = case.edits(cell.edit_type, rng, TRIES_PER_ITEM);
            report.eligible_items += 1;
            report.rejected += tried - usize::from(found.is_some());
            (case.query(), found)
        };
        let found = found?;
        Some(Ok(Episode {
            source: item.origin.dataset.clone(),
            semantics: cell.semantics,
            premises: found.premises,
            query,
            y0: found.y0,
            edit_type: cell.edit_type,
            edit: found.edit,
            y1: found.y1,
            base_item: id.0,
        }))
    }
}

fn semantics_of(item: &BaseItem) -> Option<Semantics> {
    match (item.origin.dataset.as_str(), item.world) {
        ("folio", _) => Some(Semantics::FirstOrder),
        (_, Some(World::Open)) => Some(Semantics::OpenWorld),
        (_, Some(World::Closed)) => Some(Semantics::ClosedWorld),
        _ => None,
    }
}

fn folio_case(item: &BaseItem) -> Option<folio::Case> {
    let formal = item.formal.as_ref()?;
    folio::Case::new(
        &item.premises,
        &formal.premises,
        &item.query,
        formal.conclusion.as_deref()?,
    )
}

/// The fresh theories of `--from generated`, as base items (one per query).
/// The items of `--from generated`: fresh theories per world with their generated queries
/// (labels left to the solvers). RobustLR builds from the same theories.
pub fn generated_items(seed: u64) -> Vec<BaseItem> {
    let mut out = Vec::new();
    for world in [World::Open, World::Closed] {
        for k in 0..GENERATED_THEORIES {
            let depth = 1 + (k % 3) as usize;
            let cfg = GenConfig::new(world, depth);
            let theory_seed =
                Rng::derive(seed, &format!("theory/{}/{k}", world.as_str())).next_u64();
            let g = generator::generate(theory_seed, &cfg);
            let premises: Vec<String> = g.statements.iter().map(|s| s.to_english()).collect();
            for (j, (q, _label, qdepth)) in g.queries.iter().enumerate() {
                out.push(BaseItem {
                    origin: Origin {
                        dataset: "generated".into(),
                        file: format!("seed {seed}"),
                        position: format!("{} theory {k}, query {j}", world.as_str()),
                        external_id: format!("gen-{seed}-{}-{k}-{j}", world.as_str()),
                    },
                    world: Some(world),
                    premises: premises.clone(),
                    query: q.to_english(),
                    dataset_label: None,
                    formal: None,
                    extra: vec![
                        ("depth".into(), qdepth.to_string()),
                        ("generator".into(), generator::VERSION.into()),
                    ],
                });
            }
        }
    }
    out
}
