//! The one semantics enum: how an item's gold label is defined.

use serde::Serialize;

/// How a gold label is defined: which solver derives it, or why none does. Episodes and
/// questions carry it; the solvers' own mode is [`super::World`] (open or closed world).
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
)]
#[serde(rename_all = "kebab-case")]
pub enum Semantics {
    OpenWorld,
    ClosedWorld,
    FirstOrder,
    /// Gold answers are human commonsense judgements (Belief-R), not logical consequence: no
    /// solver checks them. Only questions carry it; no episode is built under it.
    Commonsense,
    /// Classical entailment over the grounded theory (SAT: True, False or Uncertain), for
    /// RobustLR's equivalence sets, whose contrapositive rules forward chaining cannot use. Only
    /// questions carry it.
    Classical,
    /// Gold answers are a dataset's own labels, which no solver here re-derives (GLoRE RobustLR,
    /// whose theories the grammar does not read). Only questions carry it.
    DatasetGold,
}

impl Semantics {
    pub fn as_str(self) -> &'static str {
        match self {
            Semantics::OpenWorld => "open-world",
            Semantics::ClosedWorld => "closed-world",
            Semantics::FirstOrder => "first-order",
            Semantics::Commonsense => "commonsense",
            Semantics::Classical => "classical",
            Semantics::DatasetGold => "dataset-gold",
        }
    }
}
