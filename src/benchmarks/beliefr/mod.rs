//! `deltalogic build beliefr`: Belief-R base items (see `crate::datasets` for the join of the two
//! CSV files) become questions.
//!
//! - Every step-t row is one question (tag `step=t`): the two premises, the query, options
//!   (a) q, (b) not q, (c) may or may not. Rows that several step-t+1 rows revise are one
//!   question, however many pairs name them.
//! - Every step-t+1 row is one question (tag `step=t+1`) over its three premises, linked to its
//!   step-t question by `revises`. Step t+1 is a fresh prompt, not a continued dialogue, as in
//!   the Belief-R code (`inference.py` prompts each file's rows on their own).
//!
//! Gold answers are the dataset's (majority human judgement): a → True (q), b → False (not q),
//! c → Uncertain (may or may not), under [`Semantics::Commonsense`]; the solver never sees them.

pub mod metrics;
pub mod prompts;

use super::question::{self, store_set, Choice, Question, Questions, Stored};
use super::view::Counted;
use super::{
    parse_args, unknown_template, Answered, Benchmark, Built, Column, Evaluation, Group, Models,
    Panel, Prepared,
};
use crate::datasets::BaseItem;
use crate::logic::{Label, Semantics};
use crate::store::{canonical, Id, Record, Store, StoredSet};
use anyhow::{bail, Result};
use metrics::BeliefRMetrics;
use prompts::LabelForm;
use serde::Serialize;
use std::collections::BTreeMap;

pub const BENCHMARK: &str = "belief-r";
/// The `Origin::dataset` of ingested Belief-R items.
const DATASET: &str = "belief-r";
/// Bumped when the questions made from the same items change, so that specs change with them.
const BUILDER_VERSION: u32 = 1;

/// Tag keys and values of Belief-R questions.
pub const STEP: &str = "step";
pub const STEP_T: &str = "t";
pub const STEP_T1: &str = "t+1";
pub const MODUS: &str = "modus";
pub const EFFECT: &str = "effect";
pub const AGREEMENT: &str = "agreement";
pub const REVISION: &str = "revision";
pub const UPDATE: &str = "update";
pub const MAINTAIN: &str = "maintain";

/// What `build beliefr` made.
#[derive(Clone, Debug, Serialize)]
pub struct BuildOutcome {
    #[serde(flatten)]
    pub stored: Stored,
    /// Ingested Belief-R items read: joined pairs plus step-t-only rows.
    pub items: usize,
    pub pairs: usize,
    pub step_t_only: usize,
    /// Distinct step-t questions (Basic@t).
    pub step_t: usize,
    /// Step-t questions that at least one step-t+1 question revises.
    pub step_t_revised: usize,
    /// Step-t+1 questions whose gold becomes (c) (belief update) or stays (belief maintain).
    pub update: usize,
    pub maintain: usize,
    /// Why no solver checked the gold answers.
    pub gold: &'static str,
}

/// The extra fields of one item, with errors naming the item.
struct Fields<'a> {
    item: &'a BaseItem,
}

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Result<&'a str> {
        let extra = &self.item.extra;
        match extra.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(i) => Ok(extra[i].1.as_str()),
            Err(_) => bail!("{}: no field `{key}`", self.place()),
        }
    }

    fn place(&self) -> String {
        let o = &self.item.origin;
        format!(
            "Belief-R item {} ({} {})",
            o.external_id, o.file, o.position
        )
    }

    fn answer(&self, key: &str) -> Result<Label> {
        match self.get(key)? {
            "a" => Ok(Label::True),
            "b" => Ok(Label::False),
            "c" => Ok(Label::Uncertain),
            other => bail!(
                "{}: field `{key}` is `{other}`, expected a, b or c",
                self.place()
            ),
        }
    }

    /// The options of step `t` or `t1`, in the order a, b, c.
    fn options(&self, step: &str) -> Result<Vec<Choice>> {
        [
            ("a", Label::True),
            ("b", Label::False),
            ("c", Label::Uncertain),
        ]
        .into_iter()
        .map(|(letter, label)| {
            Ok(Choice {
                label,
                text: self.get(&format!("{step}_{letter}"))?.to_string(),
            })
        })
        .collect()
    }
}

fn question(
    item: &BaseItem,
    premises: Vec<String>,
    options: Vec<Choice>,
    gold: Label,
    tags: Vec<(&str, String)>,
    base_item: Id,
) -> Question {
    let mut q = Question {
        benchmark: BENCHMARK.to_string(),
        semantics: Semantics::Commonsense,
        premises,
        query: item.query.clone(),
        options,
        gold,
        revises: None,
        tags: tags.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        base_item: base_item.0,
    };
    q.sort_tags();
    q
}

/// The step-t question of an item (both kinds of item hold their step-t row).
fn step_t(f: &Fields, id: Id) -> Result<Question> {
    let tags = vec![
        (STEP, STEP_T.to_string()),
        (MODUS, f.get("modus")?.to_string()),
        (EFFECT, f.get("types_of_relation")?.to_string()),
        ("atomic_idx", f.get("atomic_idx")?.to_string()),
        ("dataset_id", f.get("t_dataset_id")?.to_string()),
    ];
    Ok(question(
        f.item,
        f.item.premises.clone(),
        f.options("t")?,
        f.answer("t_ground_truth")?,
        tags,
        id,
    ))
}

/// The step-t+1 question of a joined pair, revising `before`.
fn step_t1(f: &Fields, id: Id, before: &Question) -> Result<Question> {
    let dataset_id = f.get("t1_dataset_id")?;
    let agreement = match dataset_id.rsplit_once('-') {
        Some((_, kind @ ("strong" | "weak"))) => kind,
        _ => bail!(
            "{}: t1_dataset_id `{dataset_id}` does not end in -strong or -weak",
            f.place()
        ),
    };
    let gold = f.answer("t1_ground_truth")?;
    // BU: the third premise defeats the conclusion; BM: it is an alternative and gold stays.
    let revision = if gold == Label::Uncertain {
        UPDATE
    } else if gold == before.gold {
        MAINTAIN
    } else {
        bail!(
            "{}: step t+1 answer {gold} is neither (c) nor the step-t answer {}",
            f.place(),
            before.gold
        );
    };
    // Step t+1 states the step-t premises again (13 rows in other words), then adds one.
    let mut premises: Vec<String> = match f.get("t1_restated_premises") {
        Ok(restated) => restated.lines().map(str::to_string).collect(),
        Err(_) => f.item.premises.clone(),
    };
    premises.push(f.get("t1_premise")?.to_string());
    let tags = vec![
        (STEP, STEP_T1.to_string()),
        (MODUS, f.get("modus")?.to_string()),
        (EFFECT, f.get("types_of_relation")?.to_string()),
        ("atomic_idx", f.get("atomic_idx")?.to_string()),
        ("dataset_id", dataset_id.to_string()),
        (AGREEMENT, agreement.to_string()),
        ("agreement_lv", f.get("agreement_lv")?.to_string()),
        (REVISION, revision.to_string()),
    ];
    let mut q = question(f.item, premises, f.options("t1")?, gold, tags, id);
    q.revises = Some(before.id().0);
    Ok(q)
}

/// A seeded sample of a Belief-R set, small enough for a real model to score in minutes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sample {
    /// Step-t+1 questions kept per (revision, modus) cell, with the step-t questions they revise.
    pub per_cell: usize,
    pub seed: u64,
}

/// Makes the questions of every ingested Belief-R item (or of a sample of the pairs) and stores
/// them as set `name`.
pub fn build(reg: &Store, name: &str, sample: Option<Sample>) -> Result<BuildOutcome> {
    let items: Vec<(Id, BaseItem)> = reg
        .all::<BaseItem>()?
        .into_iter()
        .filter(|(_, i)| i.origin.dataset == DATASET)
        .collect();
    if items.is_empty() {
        bail!(
            "no Belief-R items in {}: run `deltalogic ingest belief-r` first",
            reg.path().display()
        );
    }
    let mut step_t_questions: BTreeMap<Id, Question> = BTreeMap::new();
    let mut revised: BTreeMap<Id, usize> = BTreeMap::new();
    let mut later = Vec::new();
    let (mut pairs, mut only, mut update, mut maintain) = (0, 0, 0, 0);
    for (id, item) in &items {
        let f = Fields { item };
        let before = step_t(&f, *id)?;
        let before_id = before.id();
        // A pair item's external id starts `t1:`, a step-t-only item's `t:`.
        if item.origin.external_id.starts_with("t1:") {
            pairs += 1;
            let after = step_t1(&f, *id, &before)?;
            match after.tag(REVISION) {
                Some(UPDATE) => update += 1,
                _ => maintain += 1,
            }
            *revised.entry(before_id).or_default() += 1;
            later.push(after);
        } else {
            only += 1;
        }
        step_t_questions.entry(before_id).or_insert(before);
    }
    if let Some(sample) = sample {
        later = sampled(later, sample);
        let kept: std::collections::BTreeSet<[u8; 32]> =
            later.iter().filter_map(|q| q.revises).collect();
        step_t_questions.retain(|id, _| kept.contains(&id.0));
        revised.retain(|id, _| kept.contains(&id.0));
        (pairs, only) = (later.len(), 0);
        update = later
            .iter()
            .filter(|q| q.tag(REVISION) == Some(UPDATE))
            .count();
        maintain = later.len() - update;
    }
    let step_t = step_t_questions.len();
    let step_t_revised = revised.len();
    let mut questions: Vec<Question> = step_t_questions.into_values().collect();
    questions.extend(later);
    #[derive(Serialize)]
    struct Spec {
        benchmark: &'static str,
        builder_version: u32,
        semantics: Semantics,
        #[serde(skip_serializing_if = "Option::is_none")]
        sample: Option<Sample>,
    }
    let spec = Spec {
        benchmark: BENCHMARK,
        builder_version: BUILDER_VERSION,
        semantics: Semantics::Commonsense,
        sample,
    };
    let spec_json = String::from_utf8(canonical(&spec)).expect("JSON is UTF-8");
    let stored = store_set(reg, BENCHMARK, spec_json, &questions, name)?;
    Ok(BuildOutcome {
        stored,
        items: items.len(),
        pairs,
        step_t_only: only,
        step_t,
        step_t_revised,
        update,
        maintain,
        gold: question::COMMONSENSE_NOT_CHECKED,
    })
}

/// `per_cell` step-t+1 questions of each (revision, modus) cell, drawn in id order after a
/// seeded shuffle: the same store and seed give the same sample.
fn sampled(mut later: Vec<Question>, sample: Sample) -> Vec<Question> {
    later.sort_by_key(|q| q.id());
    crate::rng::Rng::derive(sample.seed, "belief-r sample").shuffle(&mut later);
    let mut taken: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut out: Vec<Question> = later
        .into_iter()
        .filter(|q| {
            let cell = (
                q.tag(REVISION).unwrap_or_default().to_string(),
                q.tag(MODUS).unwrap_or_default().to_string(),
            );
            let n = taken.entry(cell).or_default();
            *n += 1;
            *n <= sample.per_cell
        })
        .collect();
    out.sort_by_key(|q| q.id());
    out
}

pub struct BeliefR;

const COLUMNS: [Column; 9] = [
    Column {
        key: "acc_t",
        title: "Acc@t",
        headline: true,
    },
    Column {
        key: "bu_acc",
        title: "BU-Acc",
        headline: true,
    },
    Column {
        key: "bm_acc",
        title: "BM-Acc",
        headline: true,
    },
    Column {
        key: "breu",
        title: "BREU",
        headline: true,
    },
    Column {
        key: "bu_acc_all",
        title: "BU-Acc (all)",
        headline: false,
    },
    Column {
        key: "bm_acc_all",
        title: "BM-Acc (all)",
        headline: false,
    },
    Column {
        key: "breu_all",
        title: "BREU (all)",
        headline: false,
    },
    Column {
        key: "inertia",
        title: "Inertia",
        headline: true,
    },
    Column {
        key: "over_flip",
        title: "Over-flip",
        headline: true,
    },
];

fn group(by: &str, value: &str, m: &BeliefRMetrics) -> Group {
    Group::of(by, value, m.entries().map(|(_, x)| x))
}

/// `deltalogic build beliefr`: every step-t row (Basic@t) and every step-t+1 row, linked to its
/// step-t question. Gold answers are the dataset's human judgements; no solver checks them.
#[derive(clap::Parser, Debug)]
struct BuildArgs {
    /// Name of the set.
    #[arg(long, default_value = "belief-r")]
    name: String,
    /// Keep only this many step-t+1 questions per (belief update/maintain, modus) cell, with the
    /// step-t questions they revise: a sample a real model scores in minutes.
    #[arg(long, value_parser = crate::bounds::count(1, crate::bounds::MAX_SIZE))]
    per_cell: Option<usize>,
    /// Seed of the sample.
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::seed())]
    seed: u64,
}

impl BuildOutcome {
    pub fn text(&self) -> String {
        format!(
            "{} Belief-R items read; the set holds {} joined pairs and {} step-t-only rows\n\
             questions: {} step t ({} revised), {} step t+1 ({} belief update, {} belief maintain)\n\
             gold answers not checked by the solver: {}\n{}",
            self.items,
            self.pairs,
            self.step_t_only,
            self.step_t,
            self.step_t_revised,
            self.pairs,
            self.update,
            self.maintain,
            self.gold,
            self.stored.text()
        )
    }
}

impl Benchmark for BeliefR {
    fn name(&self) -> &'static str {
        BENCHMARK
    }

    fn command(&self) -> &'static str {
        "beliefr"
    }

    fn options(&self) -> clap::Command {
        <BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let a: BuildArgs = parse_args(options)?;
        let sample = a.per_cell.map(|per_cell| Sample {
            per_cell,
            seed: a.seed,
        });
        let out = build(store, &a.name, sample)?;
        Built::new(&out, out.text())
    }

    fn title(&self) -> &'static str {
        "Belief-R"
    }

    fn templates(&self) -> &'static [&'static str] {
        &prompts::CHOICE_TEMPLATE_NAMES
    }

    fn prepare(
        &self,
        store: &Store,
        set: &StoredSet,
        template: &str,
        _: &Models,
    ) -> Result<Box<dyn Prepared>> {
        let form = match template {
            "beliefr-letters" => LabelForm::Letters,
            "beliefr-text" => LabelForm::Text,
            _ => return Err(unknown_template(self.title(), self.templates(), template)),
        };
        Ok(Box::new(Questions::new(
            store,
            set,
            Box::new(prompts::beliefr(form)),
        )?))
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        let rows = question::rows(store, answered)?;
        let b = metrics::beliefr(&rows, seed, super::RESAMPLES)?;
        let mut groups = vec![group("overall", "all", &b.overall)];
        for (by, map) in [
            ("modus", &b.by_modus),
            ("effect", &b.by_effect),
            ("agreement", &b.by_agreement),
        ] {
            groups.extend(map.iter().map(|(k, m)| group(by, k, m)));
        }
        Ok(Evaluation {
            n: rows.len(),
            columns: &COLUMNS,
            groups,
            metrics: serde_json::to_value(&b)?,
            note: "Acc@t over step-t questions (Basic@t). BU-Acc, BM-Acc, BREU = (BU-Acc + BM-Acc) / 2, \
                   inertia and over-flip over step-t+1 questions whose step-t question was answered \
                   correctly; (all): over every step-t+1 question. Gold answers are human judgements.",
            panel: Panel::HEADLINE,
            findings: &[],
        })
    }

    fn counted(&self, store: &Store, answered: &[Answered]) -> Result<Option<Counted>> {
        let groups = metrics::counted(&question::rows(store, answered)?)?;
        Ok(Some(Counted::every(groups)))
    }
}
