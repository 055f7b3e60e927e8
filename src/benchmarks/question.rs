//! Single questions: premises, a query, a closed list of answer options and the gold option. They
//! serve benchmarks without an edit (RobustLR families, GLoRE items, Belief-R step t) and, linked
//! by [`Question::revises`], benchmarks whose second step is a fresh question over more premises
//! (Belief-R step t+1 revises its step-t question). Their `plain-question` template
//! ([`plain_question`]) asks one in DeltaLogic's wording.
//!
//! Stored as its own record kind ([`Question::KIND`]). A benchmark of single questions makes `Question`s, tags them,
//! stores them with [`store_set`], asks them through [`Questions`] with one of its templates,
//! and computes its metrics from [`QuestionRow`]s ([`rows`]); [`accuracy`] serves benchmarks
//! without metrics of their own.

use super::prompts::{
    label_index, record_of, turn_text, TemplateRecord, Wording, ANSWER_CUE, PLAIN_LABELS, WORDING,
};
use super::view::{Block, Count, Counted, ItemView};
use super::{
    members, Answer, Answered, Column, Evaluation, Group, Panel, Prepared, Request, Role, RESAMPLES,
};
use crate::datasets::BaseItem;
use crate::logic::Semantics;
use crate::logic::{solve, Label, Premise};
use crate::metrics::{estimate, Metric, Outcome};
use crate::store::{canonical, Id, Kind, Names, Record, Store, StoredSet, StoredSpec};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

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
    const KIND: Kind = Kind {
        table: "questions",
        context: "deltalogic 2026-11-21 question v1",
        noun: "question",
    };
    /// Its base item: provenance, outside its id.
    fn references(&self) -> Vec<(Kind, Id)> {
        vec![(BaseItem::KIND, self.base_item())]
    }
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
    let label = solve(&premises, &premise(&q.query), q.semantics)?;
    if label != q.gold {
        bail!("stored gold {} but the solver says {label}", q.gold);
    }
    Ok(Verdict::Solved)
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

impl Stored {
    /// The set line of a build's summary.
    pub fn text(&self) -> String {
        format!(
            "set `{}` = {} ({} questions, {} new; spec {})\n",
            self.name,
            self.set.short(),
            self.questions,
            self.new_questions,
            self.spec.short()
        )
    }
}

/// Stores questions (checked first) and a set of them under `name`, in one transaction. The set's
/// benchmark is the questions' own; every question must belong to it.
pub fn store_set(
    reg: &Store,
    benchmark: &str,
    spec_json: String,
    questions: &[Question],
    name: &str,
) -> Result<Stored> {
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
        let n = set.members.len();
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

/// One scored question: its gold answer, the model's, what it revises, and its tags.
#[derive(Clone, Debug, Serialize)]
pub struct QuestionRow {
    /// The question id (hex).
    pub question: String,
    pub gold: Label,
    pub pred: Label,
    /// The id (hex) of the question this one revises.
    pub revises: Option<String>,
    pub tags: Vec<(String, String)>,
}

impl QuestionRow {
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) fn group_by<T: Clone>(
    rows: &[QuestionRow],
    values: &[T],
    key: &str,
) -> BTreeMap<String, Vec<T>> {
    let mut groups: BTreeMap<String, Vec<T>> = BTreeMap::new();
    for (r, v) in rows.iter().zip(values) {
        if let Some(g) = r.tag(key) {
            groups.entry(g.to_string()).or_default().push(v.clone());
        }
    }
    groups
}

/// Tags whose values split the accuracy of benchmarks without metrics of their own.
pub const GROUP_TAGS: [&str; 3] = ["set", "group", "step"];

#[derive(Clone, Debug, Serialize)]
pub struct AccuracyBreakdown {
    pub accuracy: Metric,
    /// Tag key → tag value → accuracy.
    pub by_tag: BTreeMap<String, BTreeMap<String, Metric>>,
}

/// Accuracy overall and per value of each tag in `tags`.
pub fn accuracy(
    rows: &[QuestionRow],
    tags: &[&str],
    seed: u64,
    resamples: usize,
) -> AccuracyBreakdown {
    let outcomes: Vec<Outcome<1>> = rows.iter().map(|r| [(true, r.pred == r.gold)]).collect();
    let acc = |o: &[Outcome<1>]| estimate(o, &[], seed, resamples).remove(0);
    let mut by_tag = BTreeMap::new();
    for &key in tags {
        let groups = group_by(rows, &outcomes, key);
        if !groups.is_empty() {
            let m = groups.into_iter().map(|(g, o)| (g, acc(&o))).collect();
            by_tag.insert(key.to_string(), m);
        }
    }
    AccuracyBreakdown {
        accuracy: acc(&outcomes),
        by_tag,
    }
}

/// Which questions each group of [`accuracy_evaluation`] counts: all of the group's, in the
/// groups' order (overall, then each tag's values, tags in key order as `accuracy` keeps them).
pub fn accuracy_counted(rows: &[QuestionRow], tags: &[&str]) -> Counted {
    let positions: Vec<u32> = (0..rows.len() as u32).collect();
    let by_tag: BTreeMap<&str, BTreeMap<String, Vec<u32>>> = tags
        .iter()
        .map(|&key| (key, group_by(rows, &positions, key)))
        .filter(|(_, groups)| !groups.is_empty())
        .collect();
    let mut groups = vec![vec![Some(Count::Rows(positions.clone()))]];
    for values in by_tag.into_values() {
        groups.extend(values.into_values().map(|p| vec![Some(Count::Rows(p))]));
    }
    Counted(groups)
}

/// How the HTML report shows a set's questions: premises, query, options; the tags as facets.
pub fn views(store: &Store, set: &StoredSet) -> Result<Vec<ItemView>> {
    Ok(members::<Question>(store, set)?
        .into_iter()
        .map(|(_, q)| view(&q))
        .collect())
}

fn view(q: &Question) -> ItemView {
    let mut blocks = vec![
        Block::List {
            title: "Premises".into(),
            items: q.premises.clone(),
        },
        Block::Text {
            title: "Question".into(),
            text: q.query.clone(),
        },
        Block::List {
            title: "Options".into(),
            items: q
                .options
                .iter()
                .map(|o| format!("{} ({})", o.text, o.label))
                .collect(),
        },
    ];
    if let Some(before) = q.revises {
        blocks.push(Block::Text {
            title: "Revises".into(),
            text: Id(before).hex(),
        });
    }
    ItemView {
        facets: q.tags.clone(),
        gold: vec![q.gold],
        blocks,
    }
}

/// The rows of a result's answers: each question's gold answer beside the model's.
pub fn rows(store: &Store, answered: &[Answered]) -> Result<Vec<QuestionRow>> {
    let ids: Vec<Id> = answered.iter().map(|a| a.item).collect();
    answered
        .iter()
        .zip(store.get_many::<Question>(&ids)?)
        .map(|(a, q)| {
            let q =
                q.with_context(|| format!("a result names a missing question {}", a.item.short()))?;
            let [pred] = a.labels()?[..] else {
                bail!(
                    "question {} has {} answers, not 1",
                    a.item.short(),
                    a.answers.len()
                );
            };
            Ok(QuestionRow {
                question: a.item.hex(),
                gold: q.gold,
                pred,
                revises: q.revises.map(|b| Id(b).hex()),
                tags: q.tags,
            })
        })
        .collect()
}

/// A set's questions made ready for one template: one turn, a fresh prompt per question (Belief-R
/// step t+1 does not continue step t).
pub struct Questions {
    template: Box<dyn QuestionTemplate>,
    ids: Vec<Id>,
    questions: Vec<Question>,
}

impl Questions {
    pub fn new(
        store: &Store,
        set: &StoredSet,
        template: Box<dyn QuestionTemplate>,
    ) -> Result<Questions> {
        let (ids, questions) = members::<Question>(store, set)?.into_iter().unzip();
        Ok(Questions {
            template,
            ids,
            questions,
        })
    }
}

impl Prepared for Questions {
    fn template(&self) -> TemplateRecord {
        self.template.record()
    }

    fn items(&self) -> &[Id] {
        &self.ids
    }

    fn turns(&self) -> usize {
        1
    }

    fn request(&self, item: usize, turn: usize, earlier: &[Answer]) -> Result<Request> {
        self.ask(item, turn, earlier, &self.questions[item])
    }

    fn content_free(
        &self,
        item: usize,
        turn: usize,
        earlier: &[Answer],
        filler: &str,
    ) -> Result<Option<Request>> {
        let blank = Question {
            premises: vec![filler.to_string()],
            query: filler.to_string(),
            ..self.questions[item].clone()
        };
        self.ask(item, turn, earlier, &blank).map(Some)
    }

    fn target(&self, item: usize, turn: usize) -> Option<Label> {
        (turn == 0).then(|| self.questions[item].gold)
    }
}

impl Questions {
    /// Question `q` (item `item`'s, or its content-free form) with the template.
    fn ask(&self, item: usize, turn: usize, earlier: &[Answer], q: &Question) -> Result<Request> {
        if turn != 0 || !earlier.is_empty() {
            bail!("a question has one turn");
        }
        let what = || format!("question {}", self.ids[item].short());
        let prompt = self.template.prompt(q).with_context(what)?;
        let texts = self.template.labels(q).with_context(what)?;
        let labels = texts
            .into_iter()
            .zip(q.options.iter().map(|o| o.label))
            .collect();
        Ok(Request::Score {
            by: Role::Subject,
            prompt,
            labels,
        })
    }
}

/// A template that turns a single question into a prompt and the label texts of its options.
pub trait QuestionTemplate {
    fn record(&self) -> TemplateRecord;
    fn prompt(&self, q: &Question) -> Result<String>;
    /// The label texts of a question's options, in option order.
    fn labels(&self, q: &Question) -> Result<Vec<String>>;
}

/// DeltaLogic's plain wording for a single True/False(/Uncertain) question about a statement
/// (RobustLR): numbered premises, the world's rule, the question, `Label:`; labels ` True`,
/// ` False` (and ` Uncertain` when it is an option), as the `plain` template scores them. A
/// question with all three options gets exactly the `plain` step-1 prompt of the same premises
/// and statement, so the two share every score; a True/False question shares its prefix up to
/// the question line.
#[derive(Clone, Debug, Serialize)]
pub struct StatementTemplate {
    pub name: &'static str,
    pub version: u32,
    labels: [&'static str; 3],
    wording: Wording,
    /// The question line when the options are True and False only.
    binary_question: &'static str,
    answer_cue: &'static str,
}

pub const STATEMENT_TEMPLATE_NAME: &str = "plain-question";

pub fn plain_question() -> StatementTemplate {
    StatementTemplate {
        name: STATEMENT_TEMPLATE_NAME,
        version: 1,
        labels: PLAIN_LABELS,
        wording: WORDING,
        binary_question: "Question: Based only on the premises, is the following statement True or False?\nStatement: ",
        answer_cue: ANSWER_CUE,
    }
}

impl StatementTemplate {
    /// Whether the options are True, False (false) or True, False, Uncertain (true), in that
    /// order: the only lists the question line can name.
    fn three_way(q: &Question) -> Result<bool> {
        let labels: Vec<Label> = q.options.iter().map(|o| o.label).collect();
        match labels.as_slice() {
            [Label::True, Label::False] => Ok(false),
            [Label::True, Label::False, Label::Uncertain] => Ok(true),
            _ => bail!(
                "template `{}` asks True/False(/Uncertain) questions; question `{}` has options {labels:?}",
                STATEMENT_TEMPLATE_NAME,
                q.query
            ),
        }
    }
}

impl QuestionTemplate for StatementTemplate {
    fn record(&self) -> TemplateRecord {
        record_of(self.name, self)
    }

    fn prompt(&self, q: &Question) -> Result<String> {
        let three = Self::three_way(q)?;
        let w = &self.wording;
        // Without an Uncertain option the open-world rule (answer Uncertain when ...) would
        // name an answer that cannot be given; closed world keeps its rule either way.
        let rule = match q.semantics {
            Semantics::ClosedWorld => w.closed_world_rule,
            _ if three => w.open_world_rule,
            _ => "",
        };
        let question = if three {
            w.question
        } else {
            self.binary_question
        };
        let texts = q.premises.iter().map(String::as_str);
        let turn = turn_text(w.intro, texts, rule, question, &q.query);
        Ok(format!("{turn}{}", self.answer_cue))
    }

    fn labels(&self, q: &Question) -> Result<Vec<String>> {
        Self::three_way(q)?;
        Ok(q.options
            .iter()
            .map(|o| self.labels[label_index(o.label)].to_string())
            .collect())
    }
}

/// The one template of True/False question benchmarks: DeltaLogic's plain wording.
pub const STATEMENT_TEMPLATES: [&str; 1] = [STATEMENT_TEMPLATE_NAME];

/// The questions of a set asked with the `plain-question` template.
pub fn statement_questions(
    store: &Store,
    set: &StoredSet,
    template: &str,
) -> Result<Box<dyn Prepared>> {
    if template != STATEMENT_TEMPLATE_NAME {
        return Err(super::unknown_template(
            "single questions",
            &STATEMENT_TEMPLATES,
            template,
        ));
    }
    Ok(Box::new(Questions::new(
        store,
        set,
        Box::new(plain_question()),
    )?))
}

const ACCURACY: [Column; 1] = [Column {
    key: "accuracy",
    title: "Accuracy",
    headline: true,
}];

/// The evaluation of a benchmark whose metric is accuracy, overall and per value of each tag in
/// `tags`.
pub fn accuracy_evaluation(
    rows: &[QuestionRow],
    tags: &[&str],
    seed: u64,
    note: &'static str,
) -> Result<Evaluation> {
    let a = accuracy(rows, tags, seed, RESAMPLES);
    let mut groups = vec![Group {
        by: "overall".into(),
        value: "all".into(),
        metrics: vec![Some(a.accuracy.clone())],
    }];
    for (tag, values) in &a.by_tag {
        groups.extend(values.iter().map(|(v, m)| Group {
            by: tag.clone(),
            value: v.clone(),
            metrics: vec![Some(m.clone())],
        }));
    }
    Ok(Evaluation {
        n: rows.len(),
        columns: &ACCURACY,
        groups,
        metrics: serde_json::to_value(&a)?,
        note,
        panel: Panel::HEADLINE,
        findings: &[],
    })
}
