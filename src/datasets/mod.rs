//! Readers for the benchmark files: each turns a file into base items, or says exactly which
//! record and field is wrong.

use crate::logic::{Label, World};
use serde::{Deserialize, Serialize};

/// Where an item came from: the dataset, the file (as given on the command line, made relative
/// to the ingest root) and the position inside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Origin {
    /// Dataset name: `folio`, `proofwriter`, `ruletaker`, `belief-r`, `clomo`, `generated`.
    pub dataset: String,
    /// The file, relative to the ingested root.
    pub file: String,
    /// A human-readable position: `line 12`, `record 3, question 5`, `row 40`.
    pub position: String,
    /// The dataset's own id of the item, where it has one.
    pub external_id: String,
}

/// A formal form shipped with an item (FOLIO's FOL annotations).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Formal {
    pub premises: Vec<String>,
    /// Absent in FOLIO train, which has no conclusion-FOL.
    pub conclusion: Option<String>,
}

/// One question over one premise set, as the dataset states it. `gold` is the dataset's own label
/// (normalised): it is never used as a gold label downstream, only compared against the solvers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct BaseItem {
    pub origin: Origin,
    /// The semantics the dataset uses, where it has one (ProofWriter open, RuleTaker closed).
    pub world: Option<World>,
    pub premises: Vec<String>,
    pub query: String,
    pub dataset_label: Option<Label>,
    pub formal: Option<Formal>,
    /// Dataset-specific fields kept verbatim (Belief-R options and step t+1, CLoMo fields), sorted
    /// by key so the canonical encoding is stable.
    pub extra: Vec<(String, String)>,
}
