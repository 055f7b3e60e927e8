//! The records the store itself defines: ingested files, base items, build specs, sets and
//! results. (A benchmark's own records, such as DeltaLogic's episodes, are defined and declared in
//! its folder, the runner's in `crate::eval::records`.)

use super::kind::{Declared, Kind};
use super::{canonical, Id, Record};
use crate::datasets::BaseItem;
use crate::logic::Label;
use serde::Serialize;

/// The store's own kinds: ingested files, base items, build specs, sets and results.
pub const KINDS: &[Declared] = &[
    Declared::of::<SourceFile>(),
    Declared::of::<BaseItem>(),
    Declared::of::<StoredSpec>(),
    Declared::of::<StoredSet>(),
    Declared::of::<ResultRecord>(),
];

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
    const KIND: Kind = Kind {
        table: "sources",
        context: "deltalogic 2026-11-21 source file v1",
        noun: "source file",
    };
    fn content(&self) -> Vec<u8> {
        canonical(&(&self.format, &self.blake3))
    }
    fn references(&self) -> Vec<(Kind, Id)> {
        self.items
            .iter()
            .map(|i| (BaseItem::KIND, Id(*i)))
            .collect()
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
    const KIND: Kind = Kind {
        table: "items",
        context: "deltalogic 2026-11-21 base item v1",
        noun: "item",
    };
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
    const KIND: Kind = Kind {
        table: "specs",
        context: "deltalogic 2026-11-21 build spec v1",
        noun: "build spec",
    };
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
    /// Every benchmark's sets; the context keeps the words of when every set held episodes.
    const KIND: Kind = Kind {
        table: "sets",
        context: "deltalogic 2026-11-21 episode set v1",
        noun: "set",
    };
    fn content(&self) -> Vec<u8> {
        let ids: Vec<String> = self.member_ids().map(|i| i.hex()).collect();
        canonical(&(&self.benchmark, Id(self.spec).hex(), ids))
    }
    /// Its spec. Its members are of its benchmark's kind (`Benchmark::items`), which the store
    /// does not know.
    fn references(&self) -> Vec<(Kind, Id)> {
        vec![(StoredSpec::KIND, Id(self.spec))]
    }
}

/// One turn of an item in a result: the model's answer and the keys it came from. Stored as one
/// list (the layout result ids are derived from); built and read through [`Turn::scored`],
/// [`Turn::generated`], [`Turn::scored_keys`] and [`Turn::generation`], never by position.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Turn {
    pub answer: TurnAnswer,
    /// Every key the answer read: a scored turn's [`ScoredKeys`] in order, or the one
    /// generation of a generated turn.
    pub keys: Vec<[u8; 32]>,
}

/// A scored turn's keys by what they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScoredKeys<'a> {
    /// The labels' scores, in the order of the turn's labels.
    pub labels: &'a [[u8; 32]],
    /// The same labels' scores after each content-free prompt of the normalisation, filler by
    /// filler, each in the order of the turn's labels (none when the normalisation has none).
    pub content_free: &'a [[u8; 32]],
}

impl ScoredKeys<'_> {
    /// The content-free scores of each filler.
    pub fn per_filler(&self) -> impl Iterator<Item = &[[u8; 32]]> {
        self.content_free.chunks(self.labels.len().max(1))
    }
}

impl Turn {
    /// A scored turn: the label chosen, its labels' score keys and the content-free ones.
    pub fn scored(answer: Label, labels: &[Id], content_free: &[Vec<Id>]) -> Turn {
        Turn {
            answer: answer.into(),
            keys: labels
                .iter()
                .chain(content_free.iter().flatten())
                .map(|k| k.0)
                .collect(),
        }
    }

    /// A generated turn: the generation it is.
    pub fn generated(generation: Id) -> Turn {
        Turn {
            answer: TurnAnswer::Generated,
            keys: vec![generation.0],
        }
    }

    /// The keys of a scored turn of `labels` labels under a normalisation with `fillers`
    /// content-free prompts; `None` for a generated turn or keys that do not divide so.
    pub fn scored_keys(&self, labels: usize, fillers: usize) -> Option<ScoredKeys<'_>> {
        if self.answer.label().is_none() || self.keys.len() != labels * (1 + fillers) {
            return None;
        }
        let (labels, content_free) = self.keys.split_at(labels);
        Some(ScoredKeys {
            labels,
            content_free,
        })
    }

    /// The generation a generated turn is; `None` for a scored turn or a malformed one.
    pub fn generation(&self) -> Option<Id> {
        match (self.answer, &self.keys[..]) {
            (TurnAnswer::Generated, [key]) => Some(Id(*key)),
            _ => None,
        }
    }
}

/// A turn's answer as stored: a label, or `Generated`, whose text is the generation the turn's
/// one key names. The label variants come first and in `Label`'s order: rkyv archives an enum
/// of unit variants as its index, so results stored before generation existed read unchanged
/// (`tests`: `turn_answers_keep_the_label_layout`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub enum TurnAnswer {
    True,
    False,
    Uncertain,
    Generated,
}

impl From<Label> for TurnAnswer {
    fn from(l: Label) -> TurnAnswer {
        match l {
            Label::True => TurnAnswer::True,
            Label::False => TurnAnswer::False,
            Label::Uncertain => TurnAnswer::Uncertain,
        }
    }
}

impl TurnAnswer {
    /// The label, or `None` for a generated turn.
    pub fn label(self) -> Option<Label> {
        match self {
            TurnAnswer::True => Some(Label::True),
            TurnAnswer::False => Some(Label::False),
            TurnAnswer::Uncertain => Some(Label::Uncertain),
            TurnAnswer::Generated => None,
        }
    }
}

/// One item's part of a result: every turn, in order.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct ResultRow {
    pub item: [u8; 32],
    pub turns: Vec<Turn>,
}

/// A result of any benchmark (the runner writes them, `crate::eval`). Its id covers everything
/// it says: model, set, template, normalisation and every row as stored — each item, each turn's
/// answer and the keys it was read from, in order — so two results that differ in any answer
/// have different ids (schema 3; see [`ResultRecord::legacy_id`] for the ids of schema 2). The
/// set names the benchmark. What the id cannot say — that the answers follow from the scores the
/// keys name — `crate::eval::derive` checks.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct ResultRecord {
    pub model: [u8; 32],
    pub set: [u8; 32],
    pub template: [u8; 32],
    pub normalisation: String,
    pub rows: Vec<ResultRow>,
}

impl ResultRecord {
    /// Every score key the result read, row by row and turn by turn.
    pub fn keys(&self) -> impl Iterator<Item = Id> + '_ {
        self.rows
            .iter()
            .flat_map(|r| r.turns.iter().flat_map(|t| t.keys.iter().map(|k| Id(*k))))
    }
}

/// The key-derivation context of result ids since schema 3 (they cover the answers).
/// The context of result ids in schemas 1 and 2 (inputs and the set of keys read, no answers).
const LEGACY_RESULT_CONTEXT: &str = "deltalogic 2026-11-21 result v1";

impl ResultRecord {
    /// The id schemas 1 and 2 gave this result: its inputs and the set of score keys it read
    /// (order did not matter), but not its answers. A store of schema 2 keys its results so;
    /// its migration re-keys them under [`Record::id`].
    pub fn legacy_id(&self) -> Id {
        let mut keys: Vec<String> = self.keys().map(|k| k.hex()).collect();
        keys.sort();
        Id(blake3::derive_key(
            LEGACY_RESULT_CONTEXT,
            &canonical(&(
                Id(self.model).hex(),
                Id(self.set).hex(),
                Id(self.template).hex(),
                &self.normalisation,
                keys,
            )),
        ))
    }
}

/// A row as a result id hashes it: the item and each turn's answer and keys, in order.
#[derive(Serialize)]
struct RowContent {
    item: String,
    turns: Vec<(TurnAnswer, Vec<String>)>,
}

impl Record for ResultRecord {
    /// Ids since schema 3, which cover the answers.
    const KIND: Kind = Kind {
        table: "results",
        context: "deltalogic 2026-11-30 result v2",
        noun: "result",
    };
    /// A store of schema 2 keys its results by their [`ResultRecord::legacy_id`].
    fn keyed_by(&self, key: &Id, schema: u32) -> bool {
        self.id() == *key || (schema < 3 && self.legacy_id() == *key)
    }
    /// Its set. Its model, template, scores and generations are the runner's records, which
    /// `crate::eval::share` adds.
    fn references(&self) -> Vec<(Kind, Id)> {
        vec![(StoredSet::KIND, Id(self.set))]
    }
    fn content(&self) -> Vec<u8> {
        let rows: Vec<RowContent> = self
            .rows
            .iter()
            .map(|r| RowContent {
                item: Id(r.item).hex(),
                turns: r
                    .turns
                    .iter()
                    .map(|t| (t.answer, t.keys.iter().map(|k| Id(*k).hex()).collect()))
                    .collect(),
            })
            .collect();
        canonical(&(
            Id(self.model).hex(),
            Id(self.set).hex(),
            Id(self.template).hex(),
            &self.normalisation,
            rows,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_answers_keep_the_label_layout() {
        for l in Label::ALL {
            let old = rkyv::to_bytes::<rkyv::rancor::Error>(&l).unwrap();
            let new = rkyv::to_bytes::<rkyv::rancor::Error>(&TurnAnswer::from(l)).unwrap();
            assert_eq!(old.as_slice(), new.as_slice(), "{l:?}");
            let back = rkyv::from_bytes::<TurnAnswer, rkyv::rancor::Error>(&old).unwrap();
            assert_eq!(back.label(), Some(l));
        }
    }
}
