//! Single questions: premises, a query, a closed list of answer options and the gold option. They
//! serve benchmarks without an edit (RobustLR families, GLoRE items, Belief-R step t) and, linked
//! by [`Question::revises`], benchmarks whose second step is a fresh question over more premises
//! (Belief-R step t+1 revises its step-t question).
//!
//! Stored under `Kind::Question`; a named set of any benchmark but `deltalogic` holds question
//! ids (see `StoredSet::holds_questions`). A builder for another benchmark makes `Question`s,
//! tags them, and calls [`store_set`]: scoring, results, audit, report and cache need nothing
//! more.

pub mod beliefr;
pub mod robustlr;

use crate::episodes::{Premise, Semantics};
use crate::logic::Label;
use crate::registry::{canonical, Id, Kind, Names, Record, Registry, StoredSet, StoredSpec};
use anyhow::{bail, Context, Result};
use serde::Serialize;

/// One answer option: the label it stands for and its text as the dataset words it.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Choice {
    pub label: Label,
    pub text: String,
}

fn hex_opt<S: serde::Serializer>(id: &Option<[u8; 32]>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(id) => s.serialize_some(&Id(*id).hex()),
        None => s.serialize_none(),
    }
}

/// One question. Its id hashes everything but the base item it came from.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Question {
    /// The benchmark it belongs to (`belief-r`, `robustlr`, ...): picks its metrics.
    pub benchmark: String,
    /// How its gold answer is defined; [`Semantics::Commonsense`] gold is never solver-checked.
    pub semantics: Semantics,
    pub premises: Vec<String>,
    pub query: String,
    /// The options in the order the prompt lists them; labels are distinct.
    pub options: Vec<Choice>,
    pub gold: Label,
    /// The question this one revises: the same query asked before the last premises arrived.
    #[serde(serialize_with = "hex_opt")]
    pub revises: Option<[u8; 32]>,
    /// Subset tags (`step`, `modus`, `set`, `group`, `family`, ...), sorted by key, keys unique.
    pub tags: Vec<(String, String)>,
    /// The base item it was made from (provenance: not part of the id; zero when none).
    #[serde(skip)]
    pub base_item: [u8; 32],
}

impl Question {
    /// Checks the invariants every consumer relies on; `what` names the question in errors.
    pub fn check(&self, what: &str) -> Result<()> {
        if self.options.len() < 2 {
            bail!("{what}: a question needs at least two options");
        }
        for (i, o) in self.options.iter().enumerate() {
            if self.options[..i].iter().any(|p| p.label == o.label) {
                bail!("{what}: option label {} appears twice", o.label);
            }
        }
        if self.option_index(self.gold).is_none() {
            bail!("{what}: the gold answer {} is not an option", self.gold);
        }
        if !self.tags.windows(2).all(|w| w[0].0 < w[1].0) {
            bail!("{what}: tags must be sorted by key, each key once");
        }
        Ok(())
    }

    /// Sorts tags by key (the canonical order the id hashes).
    pub fn sort_tags(&mut self) {
        self.tags.sort();
    }

    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.tags[i].1.as_str())
    }

    /// Where an option with this label sits in [`Question::options`].
    pub fn option_index(&self, label: Label) -> Option<usize> {
        self.options.iter().position(|o| o.label == label)
    }

    pub fn base_item(&self) -> Id {
        Id(self.base_item)
    }
}

impl Record for Question {
    const KIND: Kind = Kind::Question;
    fn content(&self) -> Vec<u8> {
        canonical(self)
    }
}

/// Why a question's gold answer was or was not re-derived.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict", content = "why")]
pub enum Verdict {
    /// The solver gives the stored gold answer.
    Solved,
    /// No solver applies; the reason says what the gold answer is instead.
    NotChecked(&'static str),
}

pub const COMMONSENSE_NOT_CHECKED: &str = "commonsense gold answers are majority human judgements \
     (Belief-R), not logical consequences of the premises: no solver re-derives them";

pub const DATASET_GOLD_NOT_CHECKED: &str = "gold answers are the dataset's own labels (GLoRE \
     RobustLR: the grammar reads none of its theories whole, with their kinship phrasing and \
     conclusion-first rules): no solver re-derives them";

/// Re-derives a question's gold answer with the solvers where its semantics has one (closed and
/// open world, first order, classical entailment).
pub fn verify(q: &Question) -> Result<Verdict> {
    match q.semantics {
        Semantics::Commonsense => return Ok(Verdict::NotChecked(COMMONSENSE_NOT_CHECKED)),
        Semantics::DatasetGold => return Ok(Verdict::NotChecked(DATASET_GOLD_NOT_CHECKED)),
        _ => {}
    }
    let premise = |text: &String| Premise {
        text: text.clone(),
        fol: None,
    };
    let premises: Vec<Premise> = q.premises.iter().map(premise).collect();
    let label = crate::episodes::solve(&premises, &premise(&q.query), q.semantics)?;
    if label != q.gold {
        bail!("stored gold {} but the solver says {label}", q.gold);
    }
    Ok(Verdict::Solved)
}

/// A set's id, the set, and its questions in id order.
pub type LoadedSet = (Id, StoredSet, Vec<(Id, Question)>);

/// The questions of a named set, in id order, with the set.
pub fn load_set(reg: &Registry, name: &str) -> Result<LoadedSet> {
    let Some((set_id, set)) = reg.set_by_name(name)? else {
        bail!(
            "no set named `{name}` in {} (see `deltalogic stats`)",
            reg.path().display()
        );
    };
    if !set.holds_questions() {
        bail!("set `{name}` holds DeltaLogic episodes, not questions");
    }
    let questions = set
        .episode_ids()
        .map(|id| match reg.get::<Question>(&id)? {
            Some(q) => Ok((id, q)),
            None => bail!("set `{name}` names a missing question {}", id.short()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((set_id, set, questions))
}

/// What storing a question set did.
#[derive(Clone, Debug, Serialize)]
pub struct Stored {
    pub name: String,
    pub set: Id,
    pub spec: Id,
    pub questions: usize,
    pub new_questions: usize,
}

/// Stores questions (checked first) and a set of them under `name`, in one transaction. The set's
/// benchmark is the questions' own; every question must belong to it.
pub fn store_set(
    reg: &Registry,
    benchmark: &str,
    spec_json: String,
    questions: &[Question],
    name: &str,
) -> Result<Stored> {
    if benchmark == crate::registry::EPISODE_BENCHMARK {
        bail!("`{benchmark}` sets hold episodes, not questions");
    }
    if questions.is_empty() {
        bail!("no questions to store in set `{name}`");
    }
    for q in questions {
        let what = format!("question {} ({})", q.id().short(), q.query);
        q.check(&what)?;
        if q.benchmark != benchmark {
            bail!("{what} belongs to {}, not {benchmark}", q.benchmark);
        }
    }
    reg.write(|w| {
        let (spec, _) = w.put(&StoredSpec { json: spec_json })?;
        let mut ids = Vec::with_capacity(questions.len());
        let mut new = 0;
        for q in questions {
            let (id, fresh) = w.put(q)?;
            ids.push(id);
            new += usize::from(fresh);
        }
        let set = StoredSet::new(benchmark, spec, ids);
        let n = set.episodes.len();
        let (set_id, _) = w.put(&set)?;
        w.name(Names::Sets, name, set_id)?;
        Ok(Stored {
            name: name.to_string(),
            set: set_id,
            spec,
            questions: n,
            new_questions: new,
        })
    })
    .with_context(|| format!("storing set `{name}`"))
}
