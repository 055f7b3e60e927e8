//! DeltaLogic episodes: `(P, q, y0, P', y1, t)`. P' is never stored: it is P with one edit
//! applied, so "P' differs from P by exactly one premise" holds by construction and is checked
//! when an edit is made ([`Edit::apply`]).

use crate::datasets::BaseItem;
use crate::logic::{solve, Label, Premise, Semantics};
use crate::store::{canonical, Id, Kind, Record};
use anyhow::{bail, Result};
use serde::Serialize;
use std::fmt;

/// The four edit types, each with one exact semantic effect (see the README's *Edit types and
/// their exact effects*, and [`effect_holds`]).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum EditType {
    /// A premise is inserted that completes a derivation: Uncertain → True/False (open world,
    /// FOLIO) or False → True (closed world).
    SupportInsertion,
    /// A fact defeats the support of q: closed world, it blocks a negation-as-failure condition
    /// in every proof (True → False); FOLIO, it replaces a premise every proof needs.
    DefeatingFact,
    /// A premise used by every proof of q is removed: True/False → Uncertain (open world, FOLIO)
    /// or True → False (closed world).
    SupportRemoval,
    /// A premise is inserted whose effect on q is nil: the label is unchanged.
    IrrelevantAddition,
}

impl EditType {
    pub const ALL: [EditType; 4] = [
        EditType::SupportInsertion,
        EditType::DefeatingFact,
        EditType::SupportRemoval,
        EditType::IrrelevantAddition,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EditType::SupportInsertion => "support-insertion",
            EditType::DefeatingFact => "defeating-fact",
            EditType::SupportRemoval => "support-removal",
            EditType::IrrelevantAddition => "irrelevant-addition",
        }
    }
}

impl fmt::Display for EditType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One minimal change to a premise list. Insertions append: new evidence arrives last.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[serde(rename_all = "kebab-case", tag = "op")]
pub enum Edit {
    Insert { premise: Premise },
    Remove { at: u32 },
    Replace { at: u32, premise: Premise },
}

impl Edit {
    /// P' from P. Fails unless the edit changes exactly one premise.
    pub fn apply(&self, premises: &[Premise]) -> Result<Vec<Premise>> {
        let mut out = premises.to_vec();
        match self {
            Edit::Insert { premise } => {
                if premises.iter().any(|p| p.text == premise.text) {
                    bail!("inserted premise is already present: {}", premise.text);
                }
                out.push(premise.clone());
            }
            Edit::Remove { at } => {
                if *at as usize >= out.len() {
                    bail!("removal at {at} is past the {} premises", out.len());
                }
                out.remove(*at as usize);
            }
            Edit::Replace { at, premise } => {
                let Some(slot) = out.get_mut(*at as usize) else {
                    bail!(
                        "replacement at {at} is past the {} premises",
                        premises.len()
                    );
                };
                if slot.text == premise.text || premises.iter().any(|p| p.text == premise.text) {
                    bail!("replacement premise is already present: {}", premise.text);
                }
                *slot = premise.clone();
            }
        }
        Ok(out)
    }

    pub fn describe(&self, premises: &[Premise]) -> String {
        match self {
            Edit::Insert { premise } => format!("insert: {}", premise.text),
            Edit::Remove { at } => {
                format!(
                    "remove #{}: {}",
                    at + 1,
                    premises.get(*at as usize).map_or("?", |p| &p.text)
                )
            }
            Edit::Replace { at, premise } => format!(
                "replace #{}: {} → {}",
                at + 1,
                premises.get(*at as usize).map_or("?", |p| &p.text),
                premise.text
            ),
        }
    }
}

/// An edit whose effect the solvers proved, with the premises it applies to (usually the item's;
/// for a held-back support insertion, the item's minus the held-back premise).
pub(super) struct Found {
    pub premises: Vec<Premise>,
    pub y0: Label,
    pub edit: Edit,
    pub y1: Label,
}

/// Tries up to `limit` candidates in order; the first whose new label `accept`s is found.
/// Returns it (if any) and the number tried.
pub(super) fn first_found(
    candidates: Vec<Edit>,
    limit: usize,
    premises: &[Premise],
    y0: Label,
    relabel: impl Fn(&Edit) -> Option<Label>,
    accept: impl Fn(&Edit, Label) -> bool,
) -> (Option<Found>, usize) {
    let mut tried = 0;
    for edit in candidates.into_iter().take(limit) {
        tried += 1;
        match relabel(&edit) {
            Some(y1) if accept(&edit, y1) => {
                return (
                    Some(Found {
                        premises: premises.to_vec(),
                        y0,
                        edit,
                        y1,
                    }),
                    tried,
                );
            }
            _ => {}
        }
    }
    (None, tried)
}

/// One DeltaLogic episode. Labels were computed by the solvers when it was built and are
/// re-checked by [`verify`].
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Episode {
    /// The dataset the premises came from (`folio`, `proofwriter`, `ruletaker`, `generated`).
    pub source: String,
    pub semantics: Semantics,
    pub premises: Vec<Premise>,
    pub query: Premise,
    pub y0: Label,
    pub edit_type: EditType,
    pub edit: Edit,
    pub y1: Label,
    /// The base item it was made from (provenance: not part of the id).
    #[serde(skip)]
    pub base_item: [u8; 32],
}

impl Episode {
    pub fn premises_after(&self) -> Result<Vec<Premise>> {
        self.edit.apply(&self.premises)
    }

    pub fn base_item(&self) -> Id {
        Id(self.base_item)
    }
}

impl Record for Episode {
    const KIND: Kind = Kind {
        table: "episodes",
        context: "deltalogic 2026-11-21 episode v1",
        noun: "episode",
    };
    /// Its base item: provenance, outside its id.
    fn references(&self) -> Vec<(Kind, Id)> {
        vec![(BaseItem::KIND, self.base_item())]
    }
    fn content(&self) -> Vec<u8> {
        canonical(self)
    }
}

/// Whether a label change is exactly the documented effect of an edit type.
pub fn effect_holds(t: EditType, s: Semantics, y0: Label, y1: Label) -> bool {
    use Label::*;
    let decided = |l: Label| l != Uncertain;
    match (t, s) {
        (EditType::SupportInsertion, Semantics::ClosedWorld) => y0 == False && y1 == True,
        (EditType::SupportInsertion, _) => y0 == Uncertain && decided(y1),
        (EditType::DefeatingFact, Semantics::ClosedWorld) => y0 == True && y1 == False,
        (EditType::DefeatingFact, Semantics::FirstOrder) => decided(y0) && y1 != y0,
        // Open-world reasoning is monotonic: an added fact can never defeat a derivation.
        (EditType::DefeatingFact, Semantics::OpenWorld) => false,
        // No solver defines commonsense or dataset-gold labels, so no edit effect can be proved.
        (EditType::DefeatingFact, Semantics::Commonsense | Semantics::DatasetGold) => false,
        // Classical entailment is monotonic too (and no episode is built under it).
        (EditType::DefeatingFact, Semantics::Classical) => false,
        (EditType::SupportRemoval, Semantics::ClosedWorld) => y0 == True && y1 == False,
        (EditType::SupportRemoval, _) => decided(y0) && y1 == Uncertain,
        (EditType::IrrelevantAddition, _) => y1 == y0,
    }
}

/// Recomputes both labels of an episode from its premises with the solvers; an episode whose
/// stored labels or edit effect do not hold is an error.
pub fn verify(ep: &Episode) -> Result<()> {
    let after = ep.premises_after()?;
    let (y0, y1) = (
        solve(&ep.premises, &ep.query, ep.semantics)?,
        solve(&after, &ep.query, ep.semantics)?,
    );
    if (y0, y1) != (ep.y0, ep.y1) {
        bail!(
            "episode labels do not hold: stored {} → {}, solver says {y0} → {y1}",
            ep.y0,
            ep.y1
        );
    }
    if !effect_holds(ep.edit_type, ep.semantics, y0, y1) {
        bail!(
            "edit {} does not have its effect: {y0} → {y1}",
            ep.edit_type
        );
    }
    Ok(())
}
