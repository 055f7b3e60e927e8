//! A premise as the benchmarks store it (its text and, for FOLIO, its first-order form) and the
//! label the solvers give a query over premises: what DeltaLogic's episodes and every single
//! question's gold answer are checked by.

use super::fol::{self, Formula};
use super::folio::{self as checker, Decision};
use super::{english, solver, Label, Semantics, World};
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

/// A premise as text plus, for FOLIO, its first-order form.
#[derive(
    Clone,
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
)]
pub struct Premise {
    pub text: String,
    pub fol: Option<String>,
}

/// The label the solvers give a query under premises (open/closed world, first order or
/// classical).
pub fn solve(premises: &[Premise], query: &Premise, semantics: Semantics) -> Result<Label> {
    match semantics {
        Semantics::FirstOrder => {
            match checker::decide(&formulas(premises)?, &formula(query).context("query")?) {
                Decision::Proved(l) => Ok(l),
                Decision::Undecided(why) => bail!("the checker cannot decide: {why}"),
            }
        }
        Semantics::OpenWorld | Semantics::ClosedWorld => {
            let (theory, q) = (statements(premises)?, query_literal(query)?);
            Ok(solver::solve(&theory, &q, world_of(semantics))?)
        }
        // Classical entailment (see [`solver::solve_classical`]).
        Semantics::Classical => {
            let (theory, q) = (statements(premises)?, query_literal(query)?);
            Ok(solver::solve_classical(&theory, &q)?)
        }
        Semantics::Commonsense => {
            bail!("commonsense gold answers are human judgements: no solver defines them")
        }
        Semantics::DatasetGold => {
            bail!("dataset-gold answers are the dataset's labels: no solver here defines them")
        }
    }
}

/// The solvers' mode of a semantics: closed world for `ClosedWorld`, open otherwise.
pub fn world_of(semantics: Semantics) -> World {
    match semantics {
        Semantics::ClosedWorld => World::Closed,
        _ => World::Open,
    }
}

/// The premises in the English grammar, each refusal naming its premise.
pub fn statements(premises: &[Premise]) -> Result<Vec<english::Statement>> {
    premises
        .iter()
        .enumerate()
        .map(|(i, p)| {
            english::parse_statement(&p.text).with_context(|| format!("premise {}", i + 1))
        })
        .collect()
}

fn query_literal(query: &Premise) -> Result<english::Literal> {
    english::parse_query(&query.text).context("query")
}

/// The premises' first-order forms, each refusal naming its premise.
pub fn formulas(premises: &[Premise]) -> Result<Vec<Formula>> {
    premises
        .iter()
        .enumerate()
        .map(|(i, p)| formula(p).with_context(|| format!("premise {}", i + 1)))
        .collect()
}

/// A premise's first-order form; a premise without one is refused.
pub fn formula(p: &Premise) -> Result<Formula> {
    let src = p
        .fol
        .as_deref()
        .ok_or_else(|| anyhow!("no FOL for `{}`", p.text))?;
    Ok(fol::parse_formula(src)?)
}
