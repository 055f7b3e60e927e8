//! Edits on theories in the ProofWriter/RuleTaker grammar (ProofWriter, RuleTaker, generated).
//! Every candidate is checked by re-solving; the solver is the only judge of an edit's effect.

use super::episode::{effect_holds, first_found, Edit, EditType, Found};
use crate::logic::english::{self, Atom, Literal, Statement, Term};
use crate::logic::premise::{statements, Premise};
use crate::logic::Semantics;
use crate::logic::{solver, Label, World};
use crate::rng::Rng;
use anyhow::{Context, Result};
use std::collections::BTreeSet;

/// A parsed theory with one query, ready for edits.
pub struct Case {
    premises: Vec<Premise>,
    theory: Vec<Statement>,
    query: Literal,
    world: World,
    pub y0: Label,
}

impl Case {
    pub fn new(premises: &[String], query: &str, world: World) -> Result<Case> {
        let premises: Vec<Premise> = premises
            .iter()
            .map(|t| Premise {
                text: t.clone(),
                fol: None,
            })
            .collect();
        let theory = statements(&premises)?;
        let query = english::parse_query(query).context("query")?;
        let y0 = solver::solve(&theory, &query, world)?;
        Ok(Case {
            premises,
            theory,
            query,
            world,
            y0,
        })
    }

    pub fn positive(&self) -> bool {
        self.query.positive
    }

    pub fn query(&self) -> Premise {
        Premise {
            text: self.query.to_english(),
            fol: None,
        }
    }

    /// Candidate edits of one type, in a seeded order, each with the label it gives; only those
    /// whose effect holds are returned, with the number tried in total.
    pub fn edits(&self, t: EditType, rng: &mut Rng, limit: usize) -> (Option<Found>, usize) {
        let mut candidates = match t {
            EditType::SupportRemoval => (0..self.premises.len() as u32)
                .map(|at| Edit::Remove { at })
                .collect(),
            EditType::SupportInsertion | EditType::IrrelevantAddition => {
                self.fact_insertions(|_| true)
            }
            EditType::DefeatingFact => {
                let naf = self.naf_conditions();
                self.fact_insertions(|l| {
                    l.positive && naf.contains(&(l.atom.pred.clone(), l.atom.args.len()))
                })
            }
        };
        rng.shuffle(&mut candidates);
        let semantics = match self.world {
            World::Open => Semantics::OpenWorld,
            World::Closed => Semantics::ClosedWorld,
        };
        let accept = |_: &Edit, y1: Label| effect_holds(t, semantics, self.y0, y1);
        first_found(
            candidates,
            limit,
            &self.premises,
            self.y0,
            |e| self.relabel(e),
            accept,
        )
    }

    /// The label after an edit, or None if the edited theory has no answer (contradictory in the
    /// open world, not stratified in the closed world).
    fn relabel(&self, edit: &Edit) -> Option<Label> {
        let after = edit.apply(&self.premises).ok()?;
        let theory = statements(&after).ok()?;
        solver::solve(&theory, &self.query, self.world).ok()
    }

    /// Ground facts over the theory's own entities and predicates that are not premises already
    /// and are not the query or its negation (inserting those would not *complete* a derivation).
    fn fact_insertions(&self, keep: impl Fn(&Literal) -> bool) -> Vec<Edit> {
        let sig = english::signature(&self.theory);
        let consts: Vec<Term> = sig
            .constants
            .iter()
            .map(|c| Term::Const(c.clone()))
            .collect();
        let preds = sig
            .attributes
            .iter()
            .map(|a| (a, 1))
            .chain(sig.relations.iter().map(|r| (r, 2)));
        let present: BTreeSet<String> = self.premises.iter().map(|p| p.text.clone()).collect();
        let polarities: &[bool] = match self.world {
            World::Open => &[true, false],
            // Closed world: a negated fact adds nothing under negation as failure.
            World::Closed => &[true],
        };
        let mut out = Vec::new();
        for (pred, arity) in preds {
            for args in tuples(&consts, arity) {
                for &positive in polarities {
                    let lit = Literal {
                        atom: Atom {
                            pred: pred.clone(),
                            args: args.clone(),
                        },
                        positive,
                    };
                    if lit.atom == self.query.atom || !keep(&lit) {
                        continue;
                    }
                    let text = Statement::Fact(lit).to_english();
                    if !present.contains(&text) {
                        out.push(Edit::Insert {
                            premise: Premise { text, fol: None },
                        });
                    }
                }
            }
        }
        out
    }

    /// Predicates that occur negated in a rule body: under negation as failure, these are the
    /// conditions a defeating fact can block.
    fn naf_conditions(&self) -> BTreeSet<(String, usize)> {
        self.theory
            .iter()
            .filter_map(|s| match s {
                Statement::Rule(r) => Some(r.body.iter()),
                Statement::Fact(_) => None,
            })
            .flatten()
            .filter(|l| !l.positive)
            .map(|l| (l.atom.pred.clone(), l.atom.args.len()))
            .collect()
    }
}

fn tuples(consts: &[Term], arity: usize) -> Vec<Vec<Term>> {
    (0..arity).fold(vec![Vec::new()], |acc, _| {
        acc.into_iter()
            .flat_map(|prefix| {
                consts.iter().map(move |c| {
                    let mut t = prefix.clone();
                    t.push(c.clone());
                    t
                })
            })
            .collect()
    })
}
