//! Benchmarks as a type. A [`Benchmark`] builds its items into a named set of the store, turns
//! each item into one request per turn (a later turn may depend on the model's earlier answers,
//! as DeltaLogic's step 2 continues with the model's own step-1 label), and computes its metrics
//! from a result's answers. The evaluation runner (`crate::eval`) drives every benchmark the same
//! way; the report (`crate::report`) renders every benchmark's [`Evaluation`] the same way.
//!
//! Each benchmark lives in one folder holding its builder, prompts, record kind, metrics, figure
//! panel and findings. Adding one means adding a folder and one line to [`ALL`]: the command line,
//! its help and its errors list the benchmarks from there. A library user with a benchmark of its
//! own passes a [`Catalogue`] holding it wherever a set's benchmark is looked up (reports,
//! derivations, cache verification, merge and export); `tests/suite/proof_benchmark.rs` does.

pub mod beliefr;
pub mod clomo;
pub mod deduce;
pub mod deltalogic;
pub mod harmony;
pub mod prompts;
pub mod question;
pub mod robustlr;
pub mod r#static;
pub mod view;

use crate::logic::Label;
use crate::metrics::Metric;
use crate::store::{Declared, Id, Store, StoredSet};
use anyhow::{bail, Result};
use prompts::TemplateRecord;
use question::Question;
use serde::Serialize;
use view::{Counted, ItemView};

/// Every benchmark of the command line, by the name its sets carry.
pub static ALL: Catalogue<'static> = Catalogue::new(&[
    &deltalogic::DeltaLogic,
    &beliefr::BeliefR,
    &robustlr::RobustLr,
    &robustlr::glore::Glore,
    &r#static::Static,
    &deduce::Deduce,
    &clomo::Clomo,
]);

/// The one refusal of a template a benchmark does not have (its `title`, its `templates`),
/// naming those it has: what every built-in benchmark's `prepare` says.
pub fn unknown_template(title: &str, templates: &[&str], template: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{title} has no template `{template}` (known: {})",
        templates.join(", ")
    )
}

/// The benchmarks a store's sets may belong to, in registration order (the order of reports).
#[derive(Clone, Copy)]
pub struct Catalogue<'a> {
    benchmarks: &'a [&'a dyn Benchmark],
}

impl<'a> Catalogue<'a> {
    pub const fn new(benchmarks: &'a [&'a dyn Benchmark]) -> Catalogue<'a> {
        Catalogue { benchmarks }
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a dyn Benchmark> {
        self.benchmarks.iter().copied()
    }

    /// The benchmark whose sets carry `name`.
    pub fn named(&self, name: &str) -> Result<&'a dyn Benchmark> {
        match self.iter().find(|b| b.name() == name) {
            Some(b) => Ok(b),
            None => bail!(
                "unknown benchmark `{name}` (known: {})",
                self.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// Where `name` comes in registration order (reports list benchmarks so).
    pub fn rank(&self, name: &str) -> Option<usize> {
        self.iter().position(|b| b.name() == name)
    }

    /// The benchmark `deltalogic build <command>` builds.
    pub fn by_command(&self, command: &str) -> Result<&'a dyn Benchmark> {
        match self.iter().find(|b| b.command() == command) {
            Some(b) => Ok(b),
            None => bail!(
                "no benchmark `{command}` to build (known: {})",
                self.commands()
            ),
        }
    }

    /// The words after `deltalogic build`, in registration order: `deltalogic, beliefr, …`.
    pub fn commands(&self) -> String {
        let words: Vec<&str> = self.iter().map(|b| b.command()).collect();
        words.join(", ")
    }

    /// The record kinds of these benchmarks: templates, and each benchmark's items (a kind
    /// several share, such as [`Question`], once).
    pub fn kinds(&self) -> Vec<Declared> {
        let mut out = vec![Declared::of::<TemplateRecord>()];
        for items in self.iter().map(|b| b.items()) {
            if !out.iter().any(|d| d.kind == items.kind) {
                out.push(items);
            }
        }
        out
    }
}

/// The command line of `deltalogic build <command>`: the benchmark's options under its word,
/// about its title when its options say nothing.
pub fn build_command(b: &(impl Benchmark + ?Sized)) -> clap::Command {
    let options = b.options().name(b.command());
    // Options documented as "`deltalogic build x`: what it builds" say only what it builds.
    let about = options.get_about().map(|a| a.to_string());
    let prefix = format!("`deltalogic build {}`: ", b.command());
    match about {
        Some(a) => {
            let about = a.strip_prefix(&prefix).unwrap_or(&a).to_string();
            options.about(about)
        }
        None => options.about(b.title()),
    }
}

/// One request of one turn of an item. Every kind of request the runner serves is a variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The log-likelihood of each label after the prompt; the answer is the label whose
    /// normalised score is highest (ties to the earlier label).
    Score {
        by: Role,
        prompt: String,
        /// Each label's text and the answer it stands for, in the order the scores are stored.
        labels: Vec<(String, Label)>,
    },
    /// Greedy decoding after the prompt; the answer is the generated text.
    Generate {
        by: Role,
        prompt: String,
        decoding: Decoding,
    },
}

/// How a generation is decoded: greedily (the most likely token at each step, ties to the
/// lowest id), at most `max_tokens` tokens, ending early at the model's end-of-generation tokens
/// or when the text holds one of `stop` (the text is cut just before it).
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
pub struct Decoding {
    pub max_tokens: u32,
    pub stop: Vec<String>,
}

/// Which model answers a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The model under test.
    Subject,
    /// The judge of benchmarks whose later turns judge the model's output (`--judge`; by
    /// default the model under test itself).
    Judge,
}

/// A turn's answer: the label a score request chose, or the text a generation produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Label(Label),
    Text(String),
}

impl Answer {
    /// The label of a scored turn; an error for a generated one (a benchmark reading a turn as
    /// the wrong kind is a bug in its requests, reported rather than guessed around).
    pub fn label(&self) -> Result<Label> {
        match self {
            Answer::Label(l) => Ok(*l),
            Answer::Text(_) => bail!("a generated turn where a label was expected"),
        }
    }

    /// The text of a generated turn; an error for a scored one.
    pub fn text(&self) -> Result<&str> {
        match self {
            Answer::Text(t) => Ok(t),
            Answer::Label(_) => bail!("a scored turn where generated text was expected"),
        }
    }
}

/// The models of a run, as a benchmark's prompts may need them.
pub struct Models<'a> {
    /// The model under test.
    pub subject: &'a dyn ModelInfo,
    /// The judge's fingerprint (the subject's own when no judge was given). A benchmark whose
    /// requests go to the judge names it in its template record, so results of different
    /// judges never share an id.
    pub judge: Id,
}

/// What a benchmark needs of the model to render prompts.
pub trait ModelInfo {
    /// The model's own chat template (jinja source), for templates written as chat turns.
    fn chat_template(&self) -> Result<String>;
}

/// A set's items made ready for one template: the runner asks for one request per item and
/// turn, turn by turn.
pub trait Prepared {
    /// The template as stored with every result (its id is part of the result's id).
    fn template(&self) -> TemplateRecord;
    /// The items, in the set's order (id order).
    fn items(&self) -> &[Id];
    /// Turns per item.
    fn turns(&self) -> usize;
    /// The request of item `item` at turn `turn`, given its answers at the earlier turns.
    fn request(&self, item: usize, turn: usize, earlier: &[Answer]) -> Result<Request>;
    /// The request of item `item` at turn `turn` with the item's content (premises, question,
    /// argument) and any earlier generated text replaced by `filler`, and everything else kept
    /// (the template, the answer options, the earlier labels): the content-free prompt that the
    /// `pmi` and `calibrated` normalisations compare each label's score with (see
    /// `eval::normalise`). `None` for a generated turn, which has no label to normalise.
    fn content_free(
        &self,
        item: usize,
        turn: usize,
        earlier: &[Answer],
        filler: &str,
    ) -> Result<Option<Request>>;
    /// The label a correct answer gives at turn `turn` of item `item`: the gold the benchmark's
    /// metrics compare answers with (`export samples` gives it per scored turn). `None` for a
    /// turn without a gold label: a generation, a judge's verdict.
    fn target(&self, item: usize, turn: usize) -> Option<Label>;
}

/// One item of a result: the model's answer at each turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered {
    pub item: Id,
    pub answers: Vec<Answer>,
}

impl Answered {
    /// The answers of an item all of whose turns were scored.
    pub fn labels(&self) -> Result<Vec<Label>> {
        self.answers.iter().map(Answer::label).collect()
    }
}

/// A benchmark: its items, prompts and metrics.
pub trait Benchmark: Sync {
    /// The name its sets carry (`StoredSet::benchmark`) and reports show.
    fn name(&self) -> &'static str;
    /// The word after `deltalogic build`.
    fn command(&self) -> &'static str {
        self.name()
    }
    /// How reports title it.
    fn title(&self) -> &'static str;
    /// Its templates by name; the first is the default. By default: `plain-question`, for a
    /// benchmark of True/False(/Uncertain) statement questions.
    fn templates(&self) -> &'static [&'static str] {
        &question::STATEMENT_TEMPLATES
    }
    /// Its build options (its `BuildArgs::command()`): the command line parses them, and prints
    /// their help, before it opens a store.
    fn options(&self) -> clap::Command;
    /// Builds a named set of this benchmark into the store from its parsed [`Self::options`]
    /// (see [`parse_args`]).
    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built>;
    /// Builds from the words after `deltalogic build <command>`, parsed as the command line
    /// parses them.
    fn build(&self, store: &Store, words: &[String]) -> Result<Built> {
        let name = format!("deltalogic build {}", self.command());
        let options = build_command(self)
            .bin_name(&name)
            .try_get_matches_from(std::iter::once(name.clone()).chain(words.iter().cloned()))?;
        self.build_parsed(store, &options)
    }
    /// The items of `set` ready to be asked with `template`. By default: the set's questions
    /// asked with `plain-question`.
    fn prepare(
        &self,
        store: &Store,
        set: &StoredSet,
        template: &str,
        _models: &Models,
    ) -> Result<Box<dyn Prepared>> {
        if !self.templates().contains(&template) {
            return Err(unknown_template(self.title(), self.templates(), template));
        }
        question::statement_questions(store, set, template)
    }
    /// The record kind of its sets' members (what they reference, such as their base items,
    /// each record says: `Record::references`). By default: [`Question`].
    fn items(&self) -> Declared {
        Declared::of::<Question>()
    }
    /// Its items as JSON objects, one per set member in the set's order, for `deltalogic export
    /// items` (a benchmark whose items others can re-check exports them whole).
    /// By default: the set's questions.
    fn export(&self, store: &Store, set: &StoredSet) -> Result<Vec<serde_json::Value>> {
        exported::<Question>(store, set)
    }
    /// Whether some of its requests go to a judge model (`score --judge` is refused otherwise).
    fn judged(&self) -> bool {
        false
    }
    /// The version of what [`Self::evaluate`] outputs: bump it whenever a change to the
    /// benchmark's evaluation changes any output, so that evaluations kept in a store under the
    /// older version are never read again (`eval::evaluated`; what every benchmark shares has
    /// `eval::evaluated::VERSION`).
    fn evaluator(&self) -> u32;
    /// The metrics of one result over the set's items, with seeded bootstrap intervals.
    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation>;
    /// How the HTML report shows each member of `set`, in the set's order. By default: the
    /// set's questions.
    fn views(&self, store: &Store, set: &StoredSet) -> Result<Vec<ItemView>> {
        question::views(store, set)
    }
    /// Which items each metric of [`Self::evaluate`]'s groups counts (its n), from the same
    /// answers; `None` when the benchmark does not say, and the report's numbers then open
    /// nothing. A benchmark that says must say it for every group and column `evaluate` gives.
    fn counted(&self, _store: &Store, _answered: &[Answered]) -> Result<Option<Counted>> {
        Ok(None)
    }
}

/// What a build made: a summary for `--json` and the same in words.
pub struct Built {
    pub summary: serde_json::Value,
    pub text: String,
}

impl Built {
    pub fn new(summary: &impl Serialize, text: String) -> Result<Built> {
        Ok(Built {
            summary: serde_json::to_value(summary)?,
            text,
        })
    }
}

/// A benchmark's build arguments from its parsed options.
pub fn parse_args<A: clap::FromArgMatches>(options: &clap::ArgMatches) -> Result<A> {
    Ok(A::from_arg_matches(options)?)
}

/// Resamples behind every bootstrap interval in reports.
pub const RESAMPLES: usize = 1000;

/// One column of a benchmark's tables.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Column {
    /// Stable key (CSV `metric`, JSON field).
    pub key: &'static str,
    pub title: &'static str,
    /// Shown in the side-by-side table of every benchmark's headline numbers.
    pub headline: bool,
}

/// One row of a benchmark's breakdown: a group of items and its metrics, one per column (`None`
/// where a column does not apply to this kind of group).
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    /// What the items are grouped by (`overall` for all of them).
    pub by: String,
    pub value: String,
    pub metrics: Vec<Option<Metric>>,
}

impl Group {
    /// A group in which every column has a metric, in column order.
    pub fn of<'m>(by: &str, value: &str, metrics: impl IntoIterator<Item = &'m Metric>) -> Group {
        Group {
            by: by.to_string(),
            value: value.to_string(),
            metrics: metrics.into_iter().cloned().map(Some).collect(),
        }
    }
}

/// A benchmark's metrics of one result, in a shape every output format renders alike.
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    /// Items evaluated.
    pub n: usize,
    #[serde(skip)]
    pub columns: &'static [Column],
    /// The first group is `overall`.
    #[serde(skip)]
    pub groups: Vec<Group>,
    /// The benchmark's own metric structure, as the JSON report gives it.
    pub metrics: serde_json::Value,
    /// What the numbers mean, printed under the benchmark's tables.
    #[serde(skip)]
    pub note: &'static str,
    /// What the report's figure plots of it.
    #[serde(skip)]
    pub panel: Panel,
    /// The per-model findings whose robustness to the label normalisation the report checks.
    #[serde(skip)]
    pub findings: &'static [Finding],
}

/// A benchmark's panel of the report's figure.
#[derive(Clone, Copy, Debug)]
pub struct Panel {
    /// The panel's title, ahead of what varies between its bar groups; `None`: the benchmark's
    /// title.
    pub title: Option<&'static str>,
    /// The bars of a group: column keys with their legend names; empty: the headline columns
    /// under their titles.
    pub bars: &'static [(&'static str, &'static str)],
}

impl Panel {
    /// The headline columns under the benchmark's title.
    pub const HEADLINE: Panel = Panel {
        title: None,
        bars: &[],
    };
}

/// A finding about one model that the report checks under every normalisation (a finding
/// whose verdict changes with the normalisation is about the scoring rule, not the model).
#[derive(Clone, Copy, Debug)]
pub struct Finding {
    /// What it says, as the report names it.
    pub what: &'static str,
    /// The column keys it reads, in the order `verdict` takes their overall values.
    pub reads: &'static [&'static str],
    /// The verdict, and the value it rests on, from those values.
    pub verdict: fn(&[f64]) -> (&'static str, f64),
}

impl Evaluation {
    /// The overall metric of a column.
    pub fn overall(&self, key: &str) -> Option<&Metric> {
        let i = self.columns.iter().position(|c| c.key == key)?;
        self.groups.first()?.metrics[i].as_ref()
    }
}

/// The members of `set` as JSON objects, each its record's fields after its `id`.
pub fn exported<R: crate::store::Record + Serialize>(
    store: &Store,
    set: &StoredSet,
) -> Result<Vec<serde_json::Value>>
where
    R::Archived: for<'a> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'a, rkyv::rancor::Error>>
        + rkyv::Deserialize<R, rkyv::rancor::Strategy<rkyv::de::Pool, rkyv::rancor::Error>>,
{
    members::<R>(store, set)?
        .into_iter()
        .map(|(id, r)| {
            let mut object = serde_json::Map::new();
            object.insert("id".into(), serde_json::Value::String(id.hex()));
            match serde_json::to_value(r)? {
                serde_json::Value::Object(fields) => object.extend(fields),
                other => bail!(
                    "{} {} is not a JSON object: {other}",
                    R::KIND.noun,
                    id.short()
                ),
            }
            Ok(serde_json::Value::Object(object))
        })
        .collect()
}

/// Loads every member of a set as the record kind `R`, in the set's order.
pub fn members<R: crate::store::Record>(store: &Store, set: &StoredSet) -> Result<Vec<(Id, R)>>
where
    R::Archived: for<'a> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'a, rkyv::rancor::Error>>
        + rkyv::Deserialize<R, rkyv::rancor::Strategy<rkyv::de::Pool, rkyv::rancor::Error>>,
{
    let ids: Vec<Id> = set.member_ids().collect();
    let found = store.get_many::<R>(&ids)?;
    ids.into_iter()
        .zip(found)
        .map(|(id, r)| match r {
            Some(r) => Ok((id, r)),
            None => bail!(
                "{}: the set names a missing {} {}",
                store.path().display(),
                R::KIND.noun,
                id.short()
            ),
        })
        .collect()
}
