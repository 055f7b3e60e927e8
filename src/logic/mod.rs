//! The logic engine: the ProofWriter/RuleTaker English grammar and its open- and closed-world
//! solvers, and the FOLIO first-order checker, and the premises the benchmarks store with the label
//! the solvers give a query over them ([`solve`]). Every gold label in deltalogic comes from here.

pub mod english;
pub mod fol;
pub mod folio;
pub mod generator;
pub mod premise;
mod semantics;
pub mod solver;
pub mod verbs;

pub use premise::{solve, Premise};
pub use semantics::Semantics;

use serde::{Deserialize, Serialize};
use std::fmt;

/// A gold or predicted answer. Datasets that say `Unknown` are normalised to `Uncertain`.
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
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub enum Label {
    True,
    False,
    Uncertain,
}

impl Label {
    pub const ALL: [Label; 3] = [Label::True, Label::False, Label::Uncertain];

    pub fn as_str(self) -> &'static str {
        match self {
            Label::True => "True",
            Label::False => "False",
            Label::Uncertain => "Uncertain",
        }
    }

    /// Accepts the spellings found in the datasets (`Unknown` and `Uncertain` are the same label).
    pub fn parse(s: &str) -> Option<Label> {
        match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(Label::True),
            "false" => Some(Label::False),
            "uncertain" | "unknown" => Some(Label::Uncertain),
            _ => None,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which semantics a theory is read under.
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
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub enum World {
    /// Classical negation: a statement is True, False, or Uncertain (neither provable).
    Open,
    /// Negation as failure (stratified): what cannot be proved is false; labels are True/False.
    Closed,
}

impl World {
    pub fn as_str(self) -> &'static str {
        match self {
            World::Open => "open",
            World::Closed => "closed",
        }
    }
}
