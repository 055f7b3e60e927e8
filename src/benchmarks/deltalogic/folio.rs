//! Edits on FOLIO problems, judged by the first-order checker. New premises need natural
//! language, so they come from the data itself: sibling conclusions of the same premise set
//! (with their FOL) and premises of other stories.

use super::episode::{effect_holds, first_found, Edit, EditType, Found};
use crate::logic::fol::Formula;
use crate::logic::folio::{self as checker, Decision};
use crate::logic::premise::{formula, formulas, Premise};
use crate::logic::Label;
use crate::logic::Semantics;
use crate::rng::Rng;
use std::collections::BTreeSet;

fn decide(premises: &[Formula], query: &Formula) -> Option<Label> {
    match checker::decide(premises, query) {
        Decision::Proved(l) => Some(l),
        Decision::Undecided(_) => None,
    }
}

/// The identifiers (predicates, constants) a formula mentions; one-letter names are variables.
pub fn symbols(fol: &str) -> BTreeSet<String> {
    fol.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.chars().count() > 1)
        .map(str::to_string)
        .collect()
}

/// A FOLIO problem the checker decides.
pub struct Case {
    premises: Vec<Premise>,
    formulas: Vec<Formula>,
    pub query: Premise,
    query_formula: Formula,
    pub y0: Label,
}

impl Case {
    /// None when the item cannot be judged: no conclusion FOL, NL and FOL premises that do not
    /// pair up, or a label the checker cannot decide.
    pub fn new(premises: &[String], fols: &[String], query: &str, query_fol: &str) -> Option<Case> {
        if premises.len() != fols.len() {
            return None;
        }
        let premises: Vec<Premise> = premises
            .iter()
            .zip(fols)
            .map(|(t, f)| Premise {
                text: t.clone(),
                fol: Some(f.clone()),
            })
            .collect();
        let query = Premise {
            text: query.to_string(),
            fol: Some(query_fol.to_string()),
        };
        let formulas = formulas(&premises).ok()?;
        let query_formula = formula(&query).ok()?;
        let y0 = decide(&formulas, &query_formula)?;
        Some(Case {
            premises,
            formulas,
            query,
            query_formula,
            y0,
        })
    }

    /// The first candidate edit of type `t` whose effect the checker proves, and how many were
    /// tried. `siblings` are other conclusions over the same premises; `foreign` premises of
    /// other stories.
    pub fn edit(
        &self,
        t: EditType,
        siblings: &[Premise],
        foreign: &[Premise],
        rng: &mut Rng,
        limit: usize,
    ) -> (Option<Found>, usize) {
        if t == EditType::SupportInsertion && self.y0 != Label::Uncertain {
            return self.held_back_support(rng, limit);
        }
        let fresh = |p: &&Premise| {
            p.fol != self.query.fol && !self.premises.iter().any(|q| q.text == p.text)
        };
        let mut candidates: Vec<Edit> = match t {
            EditType::SupportInsertion => siblings
                .iter()
                .filter(fresh)
                .map(|p| Edit::Insert { premise: p.clone() })
                .collect(),
            EditType::DefeatingFact => (0..self.premises.len() as u32)
                .flat_map(|at| {
                    siblings.iter().filter(fresh).map(move |p| Edit::Replace {
                        at,
                        premise: p.clone(),
                    })
                })
                .collect(),
            EditType::SupportRemoval => (0..self.premises.len() as u32)
                .map(|at| Edit::Remove { at })
                .collect(),
            EditType::IrrelevantAddition => {
                let mine: BTreeSet<String> = self
                    .premises
                    .iter()
                    .chain([&self.query])
                    .flat_map(|p| symbols(p.fol.as_deref().unwrap_or("")))
                    .collect();
                foreign
                    .iter()
                    .filter(|p| symbols(p.fol.as_deref().unwrap_or("")).is_disjoint(&mine))
                    .filter(fresh)
                    .map(|p| Edit::Insert { premise: p.clone() })
                    .collect()
            }
        };
        rng.shuffle(&mut candidates);
        let relabel = |e: &Edit| self.relabel(e);
        let accept = |edit: &Edit, y1: Label| {
            if !effect_holds(t, Semantics::FirstOrder, self.y0, y1) {
                return false;
            }
            // A defeater contradicts the premises it enters (P ⊨ ¬c), and the premise it
            // replaces is support: without it alone q loses its label.
            match (t, edit) {
                (EditType::DefeatingFact, Edit::Replace { at, premise }) => {
                    self.contradicts(premise)
                        && self.relabel(&Edit::Remove { at: *at }) != Some(self.y0)
                }
                _ => true,
            }
        };
        first_found(candidates, limit, &self.premises, self.y0, relabel, accept)
    }

    /// Support insertion for a decided problem: hold back one premise without which q is
    /// Uncertain, and insert it back. The episode starts from the premises without it.
    fn held_back_support(&self, rng: &mut Rng, limit: usize) -> (Option<Found>, usize) {
        let mut order: Vec<usize> = (0..self.premises.len()).collect();
        rng.shuffle(&mut order);
        let mut tried = 0;
        for at in order.into_iter().take(limit) {
            tried += 1;
            let held = Edit::Remove { at: at as u32 };
            if self.relabel(&held) != Some(Label::Uncertain) {
                continue;
            }
            let mut premises = self.premises.clone();
            let premise = premises.remove(at);
            let found = Found {
                premises,
                y0: Label::Uncertain,
                edit: Edit::Insert { premise },
                y1: self.y0,
            };
            return (Some(found), tried);
        }
        (None, tried)
    }

    /// Whether the checker proves `premise` inconsistent with all the premises.
    fn contradicts(&self, premise: &Premise) -> bool {
        let Ok(f) = formula(premise) else {
            return false;
        };
        let mut all = self.formulas.clone();
        all.push(f);
        checker::consistent(&all) == Some(false)
    }

    fn relabel(&self, edit: &Edit) -> Option<Label> {
        let after = edit.apply(&self.premises).ok()?;
        let formulas = match edit {
            Edit::Remove { at } => {
                let mut f = self.formulas.clone();
                f.remove(*at as usize);
                f
            }
            _ => formulas(&after).ok()?,
        };
        decide(&formulas, &self.query_formula)
    }
}
