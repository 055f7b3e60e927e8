//! RobustLR families. A [`Family`] is one base theory and query with its perturbations (base item first). Contrast
//! sets edit one rule that the query's proof needs (conjunction, disjunction, negation) and the
//! label may change; equivalence sets rewrite rules into logically equivalent forms
//! (contrapositive, the two distributive laws) and the label must not change. Every label is
//! computed by the solver from the item's own premises; see `docs/robustlr.md`.

use crate::logic::english::{self, Literal, Statement};
use crate::logic::{solver, Label, Semantics, World};
use anyhow::{Context, Result};
use serde::Serialize;
use std::fmt;

/// The six RobustLR sets: three logical contrast sets and three logical equivalence sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum SetName {
    CCs,
    DCs,
    NCs,
    CEs,
    D1Es,
    D2Es,
}

impl SetName {
    pub const ALL: [SetName; 6] = [
        SetName::CCs,
        SetName::DCs,
        SetName::NCs,
        SetName::CEs,
        SetName::D1Es,
        SetName::D2Es,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SetName::CCs => "C-CS",
            SetName::DCs => "D-CS",
            SetName::NCs => "N-CS",
            SetName::CEs => "C-ES",
            SetName::D1Es => "D1-ES",
            SetName::D2Es => "D2-ES",
        }
    }

    pub fn parse(s: &str) -> Option<SetName> {
        SetName::ALL
            .into_iter()
            .find(|n| n.as_str().eq_ignore_ascii_case(s))
    }

    /// Contrast sets are read in the closed world, as the paper's theories are (True/False);
    /// equivalence sets classically, because negation as failure does not contrapose and so
    /// would make a contrapositive rule change the label (see `docs/robustlr.md`).
    pub fn semantics(self) -> Semantics {
        match self {
            SetName::CCs | SetName::DCs | SetName::NCs => Semantics::ClosedWorld,
            SetName::CEs | SetName::D1Es | SetName::D2Es => Semantics::Classical,
        }
    }

    pub fn is_equivalence(self) -> bool {
        self.semantics() == Semantics::Classical
    }
}

impl fmt::Display for SetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The solver's label of `query` under a RobustLR set's semantics (closed world or classical).
/// Closed world: a theory whose negative statements contradict what it derives is refused, since
/// negation as failure would silently ignore them.
pub fn label(semantics: Semantics, theory: &[Statement], query: &Literal) -> Result<Label> {
    match semantics {
        Semantics::ClosedWorld => {
            if let Some(l) = solver::closed_world_conflict(theory)? {
                anyhow::bail!("the theory states \"{l}\" but derives its negation");
            }
            Ok(solver::solve(theory, query, World::Closed)?)
        }
        Semantics::Classical => Ok(solver::solve_classical(theory, query)?),
        other => anyhow::bail!(
            "RobustLR items are labelled closed-world or classical, not {}",
            other.as_str()
        ),
    }
}

/// One question: premises in English, the query, and the solver's label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    /// `BASE`, `CONJ`, `CONJ+NEG`, `DISJ`, `DISJ+NEG`, `NEG`, `CONTRAPOSITIVE`,
    /// `DISTRIBUTIVE-1`, `DISTRIBUTIVE-2`.
    pub group: String,
    pub premises: Vec<String>,
    pub query: String,
    pub label: Label,
    pub semantics: Semantics,
}

impl Item {
    /// Parses the premises and query and solves them again: the label as the item's own text
    /// gives it.
    pub fn relabel(&self) -> Result<Label> {
        let theory = parse_premises(&self.premises)?;
        let query = english::parse_query(&self.query).context("query")?;
        label(self.semantics, &theory, &query)
    }
}

/// A base item and its perturbations under one set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Family {
    /// The base item's provenance: `dataset:external id`.
    pub theory: String,
    pub set: SetName,
    /// The base item first.
    pub items: Vec<Item>,
}

/// Where a question sits among the families: its set, its family (the base item's provenance,
/// `dataset:external id`), its place in the family (0: the base item) and its group. Stored as
/// the question's tags, which its id hashes, so the tags keep their keys and text; they are
/// written and read only here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    pub set: SetName,
    pub family: String,
    pub position: usize,
    pub group: String,
}

impl Membership {
    const SET: &str = "set";
    const GROUP: &str = "group";
    const FAMILY: &str = "family";
    const POSITION: &str = "position";

    /// The question tags that say it.
    pub fn tags(&self) -> Vec<(String, String)> {
        vec![
            (Self::SET.to_string(), self.set.as_str().to_string()),
            (Self::GROUP.to_string(), self.group.clone()),
            (Self::FAMILY.to_string(), self.family.clone()),
            (Self::POSITION.to_string(), self.position.to_string()),
        ]
    }

    /// Read back from a question's tags (`tag` gives the value of a key).
    pub fn read<'a>(tag: impl Fn(&str) -> Option<&'a str>) -> Result<Membership> {
        let get = |key: &str| tag(key).with_context(|| format!("no `{key}` tag"));
        let set = get(Self::SET)?;
        Ok(Membership {
            set: SetName::parse(set).with_context(|| format!("unknown RobustLR set `{set}`"))?,
            family: get(Self::FAMILY)?.to_string(),
            position: get(Self::POSITION)?
                .parse()
                .with_context(|| format!("the `{}` tag", Self::POSITION))?,
            group: get(Self::GROUP)?.to_string(),
        })
    }
}

pub(crate) fn parse_premises(premises: &[String]) -> Result<Vec<Statement>> {
    premises
        .iter()
        .enumerate()
        .map(|(i, p)| english::parse_statement(p).with_context(|| format!("premise {}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_membership_is_stored_as_the_tags_question_ids_hash() {
        let m = Membership {
            set: SetName::D1Es,
            family: "proofwriter:AttNoneg-OWA-D3-1".into(),
            position: 2,
            group: "DISTRIBUTIVE-1".into(),
        };
        let tags = m.tags();
        let pairs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        assert_eq!(
            pairs,
            [
                ("set", "D1-ES"),
                ("group", "DISTRIBUTIVE-1"),
                ("family", "proofwriter:AttNoneg-OWA-D3-1"),
                ("position", "2"),
            ]
        );
        let tag = |key: &str| tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        assert_eq!(Membership::read(tag).unwrap(), m);
        let without_family = |key: &str| tag(key).filter(|_| key != "family");
        let e = format!("{:#}", Membership::read(without_family).unwrap_err());
        assert!(e.contains("no `family` tag"), "{e}");
    }
}
