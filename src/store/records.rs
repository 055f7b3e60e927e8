//! The records the registry itself defines: ingested files, base items, build specs and sets.
//! (Episodes are defined by `crate::benchmarks::deltalogic`, which implements [`Record`] for them.)

use super::{canonical, Id, Kind, Record};
use crate::datasets::BaseItem;
use serde::Serialize;

/// One ingested file (or file group, for formats that read several files as one unit).
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct SourceFile {
    /// The dataset format it was read as.
    pub format: String,
    /// blake3 of the file bytes (of each file in turn, for a group), hex.
    pub blake3: String,
    /// Path as given on the command line (provenance only; not part of the id).
    pub path: String,
    /// Records read and stored.
    pub records: u64,
    /// Malformed records skipped under `--skip-bad`.
    pub skipped: u64,
    /// The base items it produced, in file order.
    pub items: Vec<[u8; 32]>,
}

impl Record for SourceFile {
    const KIND: Kind = Kind::SourceFile;
    fn content(&self) -> Vec<u8> {
        canonical(&(&self.format, &self.blake3))
    }
}

/// Everything of an item but where it was seen: two files holding the same question give one item.
#[derive(Serialize)]
struct ItemContent<'a> {
    dataset: &'a str,
    world: &'a Option<crate::logic::World>,
    premises: &'a [String],
    query: &'a str,
    dataset_label: &'a Option<crate::logic::Label>,
    formal: &'a Option<crate::datasets::Formal>,
    extra: &'a [(String, String)],
}

impl Record for BaseItem {
    const KIND: Kind = Kind::BaseItem;
    fn content(&self) -> Vec<u8> {
        canonical(&ItemContent {
            dataset: &self.origin.dataset,
            world: &self.world,
            premises: &self.premises,
            query: &self.query,
            dataset_label: &self.dataset_label,
            formal: &self.formal,
            extra: &self.extra,
        })
    }
}

/// The specification a set was built from, kept verbatim so a set can be rebuilt and audited.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct StoredSpec {
    /// Canonical JSON of the build parameters.
    pub json: String,
}

impl Record for StoredSpec {
    const KIND: Kind = Kind::BuildSpec;
    fn content(&self) -> Vec<u8> {
        self.json.as_bytes().to_vec()
    }
}

/// A named set: the benchmark it belongs to (which names the kind of its members), its sorted
/// member ids and the hash of the spec that built it.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct StoredSet {
    /// The benchmark whose builder made it (`deltalogic`, `belief-r`, `robustlr`, ...).
    pub benchmark: String,
    pub spec: [u8; 32],
    pub members: Vec<[u8; 32]>,
}

impl StoredSet {
    pub fn new(benchmark: &str, spec: Id, mut members: Vec<Id>) -> StoredSet {
        members.sort();
        members.dedup();
        StoredSet {
            benchmark: benchmark.to_string(),
            spec: spec.0,
            members: members.iter().map(|i| i.0).collect(),
        }
    }

    pub fn member_ids(&self) -> impl Iterator<Item = Id> + '_ {
        self.members.iter().map(|b| Id(*b))
    }
}

impl Record for StoredSet {
    const KIND: Kind = Kind::EpisodeSet;
    fn content(&self) -> Vec<u8> {
        let ids: Vec<String> = self.member_ids().map(|i| i.hex()).collect();
        canonical(&(&self.benchmark, Id(self.spec).hex(), ids))
    }
}
