//! The one evaluation runner: a benchmark's requests → cache lookups → the prefix tree → the
//! model → stored scores and generations → one result record. Every `(model, prompt prefix,
//! label)` score and every `(model, prompt, decoding)` generation is computed once, stored under
//! its key, and read back by every later run; a later turn's requests are made from the answers
//! the stored records give.

pub mod audit;
pub mod cache;
pub mod derive;
pub mod evaluated;
pub mod generate;
pub mod models;
pub mod normalise;
pub mod records;
pub mod served;
pub mod shard;
pub mod share;
pub mod tree;

pub use crate::store::{ResultRecord, ResultRow, Turn, TurnAnswer};
pub use records::{
    GenerationRecord, ModelRecord, Normalisation, PromptRecord, ScoreRecord, ServedRecord,
    StopReason,
};

use crate::benchmarks::{Answer, Answered, Benchmark, Decoding, ModelInfo, Models, Request, Role};
use crate::logic::Label;
use crate::store::{Id, Record, Store, StoredSet};
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What every use of a causal language model needs: states, tokens prefilled onto one, the name
/// of its numerics, and a check of its files. The prefix tree (`tree`) needs no more; it walks
/// branches on several threads at once, so a model is shared between them and its states move
/// across them.
pub trait Prefill: Sync {
    type State: Clone + Send + Sync;
    /// The backend name recorded with every score and generation.
    fn backend(&self) -> &str;
    fn empty_state(&self) -> Self::State;
    fn prefill(&self, state: &Self::State, tokens: &[u32]) -> Result<Self::State>;
    /// Checks that the files the model was loaded from are still those of its fingerprint:
    /// cheaply (their identity on disk) before every commit of its scores, and with `rehash`
    /// (their bytes hashed again) before the last. A model read from no registered file has
    /// nothing to check.
    fn check_files(&self, rehash: bool) -> Result<()> {
        let _ = rehash;
        Ok(())
    }
}

/// Constrained label scoring: each label's per-token log-probs after a context.
pub trait Scoring: Prefill {
    /// The context's tokens and each label's tokens, such that the context's tokens are a
    /// prefix of the tokens of context+label (an error otherwise, never shifted tokens).
    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)>;
    fn score_continuation(&self, state: &Self::State, tokens: &[u32]) -> Result<Vec<f32>>;
}

/// Greedy generation after a prompt.
pub trait Generation: Prefill {
    /// The tokens of a generation's prompt.
    fn tokenize(&self, text: &str) -> Result<Vec<u32>>;
    /// The logits of the token after `state` (which holds at least one token).
    fn next_logits(&self, state: &Self::State) -> Result<Vec<f32>>;
    /// `next_logits` after each of `states`: what one lockstep step of several generations asks
    /// (`generate::Lockstep`). One at a time unless the model does better; whatever it does,
    /// the bits are those of one at a time.
    fn next_logits_each(&self, states: &[&Self::State]) -> Result<Vec<Vec<f32>>> {
        states.iter().map(|s| self.next_logits(s)).collect()
    }
    /// Each of `states` extended by its one of `tokens` (the other half of a lockstep step), with
    /// the bits of `prefill` one at a time.
    fn step(&self, states: &[&Self::State], tokens: &[u32]) -> Result<Vec<Self::State>> {
        states
            .iter()
            .zip(tokens)
            .map(|(s, t)| self.prefill(s, std::slice::from_ref(t)))
            .collect()
    }
    /// The text of generated tokens.
    fn decode(&self, tokens: &[u32]) -> Result<String>;
    /// The tokens that end a generation, sorted.
    fn end_of_generation(&self) -> Vec<u32>;
}

/// A model the runner asks: a benchmark's turns may score labels or generate.
pub trait LanguageModel: Scoring + Generation {}

impl<M: Scoring + Generation> LanguageModel for M {}

/// What computes a model's scores and generations: our own engine on its files, or the server
/// of a served model.
pub enum Engine<M> {
    Local(M),
    Served(served::Served),
}

impl<M: LanguageModel> Engine<M> {
    /// One label's log-probs after a prompt, computed anew: how an audit or a merge checks a
    /// stored score.
    pub fn rescore(&self, prompt: &str, label: &str) -> Result<Vec<f32>> {
        match self {
            Engine::Local(m) => rescore(m, prompt, label),
            Engine::Served(s) => Ok(s.score(prompt, label)?.logprobs),
        }
    }

    /// A generation computed anew.
    pub fn regenerate(&self, prompt: &str, decoding: &Decoding) -> Result<generate::Generated> {
        match self {
            Engine::Local(m) => regenerate(m, prompt, decoding),
            Engine::Served(s) => s.regenerate(prompt, decoding),
        }
    }

    /// The largest |Δ log-prob| between a stored record and its recomputation that is not a
    /// difference: none for our engine, `served` for a server.
    pub fn tolerance(&self, served: f32) -> f32 {
        match self {
            Engine::Local(_) => SCORE_TOLERANCE,
            Engine::Served(_) => served,
        }
    }
}

/// Largest |difference| accepted between a stored log-prob and the same score recomputed from the
/// empty state (a merge's sample): none. The model's kernels fix every reduction order, so a
/// score's bits depend only on its prompt and label tokens, not on the prefix-tree path, the
/// thread count or the CPU's vector unit (`tests/suite/numerics.rs`).
pub const SCORE_TOLERANCE: f32 = 0.0;

/// Scores committed per write transaction: an interrupted run loses at most this many.
pub const BATCH: usize = 24;

/// What a run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScoreReport {
    pub items: usize,
    pub scores_needed: usize,
    pub scores_found_in_cache: usize,
    pub scores_computed: usize,
    pub generations_needed: usize,
    pub generations_found_in_cache: usize,
    pub generations_computed: usize,
    /// Tokens of the computed generations.
    pub generated_tokens: u64,
    pub forward_tokens: u64,
    /// Distinct tokens of the prefix tree of the computed requests: the lower bound.
    pub tree_tokens: u64,
    pub seconds: f64,
}

/// A request with the model that answers it and the keys its answer is read from.
enum Pending {
    Score {
        model: Id,
        prompt: String,
        prompt_id: Id,
        labels: Vec<String>,
        answers: Vec<Label>,
        keys: Vec<Id>,
    },
    Generate {
        model: Id,
        prompt: String,
        prompt_id: Id,
        decoding: Decoding,
        key: Id,
    },
}

impl Pending {
    fn new(subject: Id, judge: Id, request: Request) -> Result<Pending> {
        let by = |role| match role {
            Role::Subject => subject,
            Role::Judge => judge,
        };
        let prompt_id = |prompt: &str| {
            PromptRecord {
                text: prompt.to_string(),
            }
            .id()
        };
        Ok(match request {
            Request::Score {
                by: role,
                prompt,
                labels,
            } => {
                let (model, prompt_id) = (by(role), prompt_id(&prompt));
                let (labels, answers): (Vec<String>, Vec<Label>) = labels.into_iter().unzip();
                let keys = labels
                    .iter()
                    .map(|l| ScoreRecord::key(model, prompt_id, l))
                    .collect();
                Pending::Score {
                    model,
                    prompt,
                    prompt_id,
                    labels,
                    answers,
                    keys,
                }
            }
            Request::Generate {
                by: role,
                prompt,
                decoding,
            } => {
                generate::check(&decoding)?;
                let (model, prompt_id) = (by(role), prompt_id(&prompt));
                Pending::Generate {
                    model,
                    key: GenerationRecord::key(model, prompt_id, &decoding),
                    prompt,
                    prompt_id,
                    decoding,
                }
            }
        })
    }

    fn model(&self) -> Id {
        match self {
            Pending::Score { model, .. } | Pending::Generate { model, .. } => *model,
        }
    }

    fn prompt(&self) -> (&str, Id) {
        match self {
            Pending::Score {
                prompt, prompt_id, ..
            }
            | Pending::Generate {
                prompt, prompt_id, ..
            } => (prompt, *prompt_id),
        }
    }

    /// A generation request's prompt and decoding.
    fn generation(&self) -> (Id, &Decoding) {
        match self {
            Pending::Generate {
                prompt_id,
                decoding,
                ..
            } => (*prompt_id, decoding),
            Pending::Score { .. } => unreachable!("generation work comes from generation requests"),
        }
    }

    fn keys(&self) -> Vec<Id> {
        match self {
            Pending::Score { keys, .. } => keys.clone(),
            Pending::Generate { key, .. } => vec![*key],
        }
    }

    /// The slots (labels, or the one generation) whose records the store lacks.
    fn missing(&self, reg: &Store) -> Result<Vec<usize>> {
        Ok(match self {
            Pending::Score { keys, .. } => cached(reg, keys)?
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_none())
                .map(|(j, _)| j)
                .collect(),
            Pending::Generate { key, .. } => match reg.get::<GenerationRecord>(key)? {
                Some(_) => vec![],
                None => vec![0],
            },
        })
    }

    /// The turn the stored records give under `norm`, and its answer as the benchmark reads
    /// it. `content_free` are the requests of `norm.fillers()`'s content-free prompts (for a
    /// scored turn): their keys follow the labels' in the turn, filler by filler.
    fn answer(
        &self,
        reg: &Store,
        norm: Normalisation,
        content_free: &[&Pending],
    ) -> Result<(Turn, Answer)> {
        Ok(match self {
            Pending::Score { answers, keys, .. } => {
                let free = content_free
                    .iter()
                    .map(|p| must(reg, &p.keys()))
                    .collect::<Result<Vec<_>>>()?;
                let values = normalise::values(&must(reg, keys)?, &free, norm)?;
                let label = answers[normalise::best(&values)];
                let free_keys: Vec<Vec<Id>> = content_free.iter().map(|p| p.keys()).collect();
                (Turn::scored(label, keys, &free_keys), Answer::Label(label))
            }
            Pending::Generate { key, .. } => (
                Turn::generated(*key),
                Answer::Text(must_generation(reg, *key)?.text),
            ),
        })
    }
}

/// Computes the missing records of batches of requests, loading each model on first need.
struct Computer<'a, M, L: FnMut(Id) -> Result<Engine<M>>> {
    reg: &'a Store,
    models: BTreeMap<Id, Engine<M>>,
    load: L,
}

impl<'a, M: LanguageModel, L: FnMut(Id) -> Result<Engine<M>>> Computer<'a, M, L> {
    /// A computer for one run: the template is stored first, so every result it leads to names
    /// a template the store holds.
    fn start(
        reg: &'a Store,
        load: L,
        template: &crate::benchmarks::prompts::TemplateRecord,
    ) -> Result<Computer<'a, M, L>> {
        reg.write(|w| {
            w.put(template)?;
            Ok(())
        })?;
        Ok(Computer {
            reg,
            models: BTreeMap::new(),
            load,
        })
    }

    fn ensure(
        &mut self,
        reqs: &[Pending],
        report: &mut ScoreReport,
        progress: &mut dyn Progress,
    ) -> Result<()> {
        // Per model, the missing slots of each request; a key asked twice is computed once.
        let mut missing: BTreeMap<Id, Vec<(usize, Vec<usize>)>> = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for (i, r) in reqs.iter().enumerate() {
            let keys = r.keys();
            let (needed, cached) = match r {
                Pending::Score { .. } => {
                    (&mut report.scores_needed, &mut report.scores_found_in_cache)
                }
                Pending::Generate { .. } => (
                    &mut report.generations_needed,
                    &mut report.generations_found_in_cache,
                ),
            };
            let slots: Vec<usize> = r
                .missing(self.reg)?
                .into_iter()
                .filter(|&j| seen.insert(keys[j]))
                .collect();
            // A key asked twice in a batch is computed once, and found the second time.
            *needed += keys.len();
            *cached += keys.len() - slots.len();
            if !slots.is_empty() {
                missing.entry(r.model()).or_default().push((i, slots));
            }
        }
        for (model_id, slots) in missing {
            if !self.models.contains_key(&model_id) {
                let m = (self.load)(model_id)?;
                self.models.insert(model_id, m);
            }
            match &self.models[&model_id] {
                Engine::Local(m) => compute(self.reg, m, model_id, reqs, &slots, report, progress)?,
                Engine::Served(s) => {
                    served::compute(self.reg, s, model_id, reqs, &slots, report, progress)?
                }
            }
        }
        Ok(())
    }
}

/// One label's log-probs after a prompt, computed from the empty state: how an audit or a merge
/// checks a stored score.
pub fn rescore<M: Scoring>(model: &M, prompt: &str, label: &str) -> Result<Vec<f32>> {
    let (ctx, labels) = model.split_tokens(prompt, &[label.to_string()])?;
    let state = model.prefill(&model.empty_state(), &ctx)?;
    model.score_continuation(&state, &labels[0])
}

/// A generation computed from the empty state: how an audit or a merge checks a stored one.
pub fn regenerate<M: Generation>(
    model: &M,
    prompt: &str,
    decoding: &Decoding,
) -> Result<generate::Generated> {
    let state = model.prefill(&model.empty_state(), &prompt_tokens(model, prompt)?)?;
    generate::greedy(model, &state, decoding)
}

/// A generation prompt's tokens; an empty one conditions on nothing and is refused.
fn prompt_tokens<M: Generation>(model: &M, prompt: &str) -> Result<Vec<u32>> {
    let tokens = model.tokenize(prompt)?;
    if tokens.is_empty() {
        bail!("the prompt is empty: nothing to generate from");
    }
    Ok(tokens)
}

/// Reads stored scores; `None` for any missing.
fn cached(reg: &Store, keys: &[Id]) -> Result<Vec<Option<ScoreRecord>>> {
    keys.iter().map(|k| reg.get::<ScoreRecord>(k)).collect()
}

fn must(reg: &Store, keys: &[Id]) -> Result<Vec<ScoreRecord>> {
    cached(reg, keys)?
        .into_iter()
        .zip(keys)
        .map(|(s, k)| {
            s.ok_or_else(|| anyhow!("{}: score {} is missing", reg.path().display(), k.short()))
        })
        .collect()
}

fn must_generation(reg: &Store, key: Id) -> Result<GenerationRecord> {
    reg.get::<GenerationRecord>(&key)?.ok_or_else(|| {
        anyhow!(
            "{}: generation {} is missing",
            reg.path().display(),
            key.short()
        )
    })
}

/// An item of a stored result with each turn's answer as its benchmark reads it (a generated
/// turn's text from its generation record). A scored turn whose scores the store does not hold
/// all is refused: a result is shown only as far as its scores back it (whether its answers
/// follow from them, `derive` checks).
pub fn answered(reg: &Store, row: &ResultRow) -> Result<Answered> {
    let answers = row
        .turns
        .iter()
        .enumerate()
        .map(|(turn, t)| match (t.answer.label(), t.generation()) {
            (Some(label), _) => {
                // Every key a scored turn read, its labels' and the content-free ones alike.
                let keys: Vec<Id> = t.keys.iter().map(|k| Id(*k)).collect();
                if let Some(absent) = reg.missing(ScoreRecord::KIND, &keys)?.first() {
                    bail!(
                        "{}: item {}, turn {} reads score {}, which the store does not hold: \
                         the result cannot be backed by its scores (merge the cache file that \
                         has them, or score the set again)",
                        reg.path().display(),
                        Id(row.item).short(),
                        turn + 1,
                        absent.short()
                    );
                }
                Ok(Answer::Label(label))
            }
            (None, Some(key)) => Ok(Answer::Text(must_generation(reg, key)?.text)),
            (None, None) => bail!(
                "{}: a generated turn of item {} names {} records, not 1",
                reg.path().display(),
                Id(row.item).short(),
                t.keys.len()
            ),
        })
        .collect::<Result<_>>()?;
    Ok(Answered {
        item: Id(row.item),
        answers,
    })
}

/// Progress of a run (a terminal bar, or nothing).
pub trait Progress {
    fn start(&mut self, total: u64, cached: u64);
    fn advance(&mut self, done: u64, tokens: u64);
    fn finish(&mut self);
}

/// No progress output (tests, `--json`).
pub struct Quiet;

impl Progress for Quiet {
    fn start(&mut self, _: u64, _: u64) {}
    fn advance(&mut self, _: u64, _: u64) {}
    fn finish(&mut self) {}
}

/// What one slot of a request computes after its prompt's state.
enum Work {
    Score {
        req: usize,
        slot: usize,
        tokens: Vec<u32>,
    },
    Generate {
        req: usize,
    },
}

impl Work {
    /// The request the work answers.
    fn req(&self) -> usize {
        match self {
            Work::Score { req, .. } | Work::Generate { req } => *req,
        }
    }
}

/// What one piece of work gave, on its way from a lane of the tree to the calling thread: a
/// score, or the state of a generation's prompt, to start the generation from.
enum Reached<S> {
    Score(Box<ScoreRecord>),
    Prompt(S),
}

/// A computed record on its way to the batch.
enum Computed {
    Score(ScoreRecord),
    Generation(GenerationRecord),
}

/// Who computed a record, with what, how long it took and when: what every computed score and
/// generation records beside its values.
struct Computation<'a> {
    model: Id,
    backend: &'a str,
    micros: u64,
    at: u64,
}

impl<'a> Computation<'a> {
    /// A computation by `model` on `backend` started at `started`, dated `at` (Unix seconds).
    fn of(model: Id, backend: &'a str, started: Instant, at: u64) -> Computation<'a> {
        Computation {
            model,
            backend,
            micros: started.elapsed().as_micros() as u64,
            at,
        }
    }

    fn score(&self, prompt: Id, label: &str, tokens: Vec<u32>, logprobs: Vec<f32>) -> ScoreRecord {
        ScoreRecord {
            model: self.model.0,
            prompt: prompt.0,
            label: label.to_string(),
            tokens,
            logprobs,
            chars: label.chars().count() as u32,
            bytes: label.len() as u32,
            backend: self.backend.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            compute_micros: self.micros,
            computed_at: self.at,
        }
    }

    fn generation(
        &self,
        prompt: Id,
        decoding: &Decoding,
        g: generate::Generated,
    ) -> GenerationRecord {
        GenerationRecord {
            model: self.model.0,
            prompt: prompt.0,
            decoding: decoding.clone(),
            tokens: g.tokens,
            logprobs: g.logprobs,
            text: g.text,
            stop: g.stop,
            backend: self.backend.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            compute_micros: self.micros,
            computed_at: self.at,
        }
    }
}

/// Records computed and not yet committed.
#[derive(Default)]
struct Batch {
    prompts: BTreeMap<Id, String>,
    scores: Vec<ScoreRecord>,
    generations: Vec<GenerationRecord>,
}

impl Batch {
    fn len(&self) -> usize {
        self.scores.len() + self.generations.len()
    }

    fn flush(&mut self, reg: &Store) -> Result<()> {
        reg.write(|w| {
            for text in self.prompts.values() {
                w.put(&PromptRecord { text: text.clone() })?;
            }
            for s in &self.scores {
                w.put(s)?;
            }
            for g in &self.generations {
                w.put(g)?;
            }
            Ok(())
        })?;
        *self = Batch::default();
        Ok(())
    }
}

/// Refuses to commit a batch computed by a model whose files changed since it was loaded: its
/// scores may be of other weights, and would be stored under the old fingerprint. The batch is
/// dropped (earlier batches were committed before the change was made, each after the same
/// check).
fn unchanged<M: Prefill>(model: &M, batch: &Batch, rehash: bool) -> Result<()> {
    model.check_files(rehash).map_err(|e| {
        anyhow!(
            "{e:#}; the {} record(s) computed since the last commit were discarded (those \
             committed before were computed before the change). Register the new file with \
             `deltalogic model add` to score with it",
            batch.len()
        )
    })
}

/// Refuses a non-finite log-prob: it would be stored and read back as an answer.
fn finite(logprobs: &[f32], what: &str, prompt: Id) -> Result<()> {
    if let Some(bad) = logprobs.iter().find(|x| !x.is_finite()) {
        bail!(
            "the model gave the non-finite log-prob {bad} for {what} after prompt {}; nothing of \
             it was stored",
            prompt.short()
        );
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn compute<M: LanguageModel>(
    reg: &Store,
    model: &M,
    model_id: Id,
    reqs: &[Pending],
    missing: &[(usize, Vec<usize>)],
    report: &mut ScoreReport,
    progress: &mut dyn Progress,
) -> Result<()> {
    let mut jobs = Vec::new();
    let mut work = Vec::new();
    for (i, slots) in missing {
        let r = &reqs[*i];
        let mut job = tree::Job {
            context: Vec::new(),
            tags: Vec::new(),
        };
        match r {
            Pending::Score {
                prompt,
                prompt_id,
                labels,
                ..
            } => {
                let (context, label_tokens) = model
                    .split_tokens(prompt, labels)
                    .with_context(|| format!("prompt {}", prompt_id.short()))?;
                job.context = context;
                for &slot in slots {
                    job.tags.push(work.len());
                    work.push(Work::Score {
                        req: *i,
                        slot,
                        tokens: label_tokens[slot].clone(),
                    });
                }
            }
            Pending::Generate {
                prompt, prompt_id, ..
            } => {
                job.context = prompt_tokens(model, prompt)
                    .with_context(|| format!("prompt {}", prompt_id.short()))?;
                job.tags.push(work.len());
                work.push(Work::Generate { req: *i });
            }
        }
        jobs.push(job);
    }
    progress.start(
        work.len() as u64,
        (report.scores_found_in_cache + report.generations_found_in_cache) as u64,
    );
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut sink = Sink {
        reg,
        model,
        model_id,
        now,
        reqs,
        work: &work,
        batch: Batch::default(),
        report,
        progress,
        reported_tokens: 0,
        generated_forward: 0,
    };
    let mut lockstep = generate::Lockstep::new(model);
    let stats = tree::run(
        model,
        jobs,
        |tag, state| -> Result<(Reached<M::State>, u64)> {
            let t = Instant::now();
            Ok(match &work[tag] {
                Work::Score { req, slot, tokens } => {
                    let Pending::Score {
                        labels, prompt_id, ..
                    } = &reqs[*req]
                    else {
                        unreachable!("score work comes from score requests")
                    };
                    let label = &labels[*slot];
                    let logprobs = model.score_continuation(state, tokens)?;
                    finite(&logprobs, &format!("label {label:?}"), *prompt_id)?;
                    let by = Computation::of(model_id, model.backend(), t, now);
                    let score = by.score(*prompt_id, label, tokens.clone(), logprobs);
                    (Reached::Score(Box::new(score)), tokens.len() as u64)
                }
                // Generations run on the calling thread, stepped together (`Lockstep`).
                Work::Generate { .. } => (Reached::Prompt(state.clone()), 0),
            })
        },
        |tag, computed, forward| {
            match computed {
                Reached::Score(s) => sink.take(tag, Computed::Score(*s), forward),
                Reached::Prompt(state) => {
                    let (prompt_id, decoding) = reqs[work[tag].req()].generation();
                    let waiting = Waiting {
                        tag,
                        prompt: prompt_id,
                        started: Instant::now(),
                    };
                    lockstep.join(waiting, state, decoding)?;
                    // Full: step until a place is free. The lanes meanwhile wait with at most
                    // one prompt state each (`tree::run`), which bounds memory.
                    while lockstep.len() >= LOCKSTEP {
                        sink.step(&mut lockstep, forward)?;
                    }
                    Ok(())
                }
            }
        },
    )?;
    while !lockstep.is_empty() {
        sink.step(&mut lockstep, stats.forward_tokens)?;
    }
    unchanged(model, &sink.batch, true)?;
    sink.batch.flush(reg)?;
    sink.progress.finish();
    sink.report.forward_tokens += stats.forward_tokens + sink.generated_forward;
    sink.report.tree_tokens += stats.tree_tokens + sink.generated_forward;
    Ok(())
}

/// Generations stepped together, at most. A decode step reads every weight, so several cost
/// little more than one: Qwen2.5-Coder-1.5B Q4_K_M int8 on 2 cores generated 41, 104, 124, 172,
/// 198 and 211 tok/s in all with 1, 4, 8, 16, 24 and 32 together (`bench --parallel`). Each
/// generation holds its own prompt's keys and values (Qwen3-4B: 288 KiB a position), which is why
/// it stops at 16.
pub const LOCKSTEP: usize = 16;

/// A generation in the lockstep: its work's tag, its prompt and when it started.
struct Waiting {
    tag: usize,
    prompt: Id,
    started: Instant,
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "prompt {}", self.prompt.short())
    }
}

impl Waiting {
    /// The record of what the generation gave; its compute time is its wall time in the
    /// lockstep, shared with the generations stepped beside it.
    fn record(
        &self,
        model: Id,
        backend: &str,
        now: u64,
        decoding: &Decoding,
        g: generate::Generated,
    ) -> Result<Computed> {
        finite(&g.logprobs, "a generated token", self.prompt)?;
        let by = Computation::of(model, backend, self.started, now);
        Ok(Computed::Generation(by.generation(
            self.prompt,
            decoding,
            g,
        )))
    }
}

/// Where computed records go: counted, batched and committed.
struct Sink<'a, M> {
    reg: &'a Store,
    model: &'a M,
    model_id: Id,
    now: u64,
    reqs: &'a [Pending],
    work: &'a [Work],
    batch: Batch,
    report: &'a mut ScoreReport,
    progress: &'a mut dyn Progress,
    reported_tokens: u64,
    /// Forward tokens of the generations that ended, which the tree does not count.
    generated_forward: u64,
}

impl<'a, M: LanguageModel> Sink<'a, M> {
    /// One step of the lockstep; the generations that ended with it are taken. `tree_forward`
    /// counts the tokens the tree has run so far.
    fn step(
        &mut self,
        lockstep: &mut generate::Lockstep<'a, M, Waiting>,
        tree_forward: u64,
    ) -> Result<()> {
        for (w, g) in lockstep.step()? {
            self.generated_forward += g.forward_tokens;
            let (_, decoding) = self.reqs[self.work[w.tag].req()].generation();
            let record = w.record(self.model_id, self.model.backend(), self.now, decoding, g)?;
            self.take(w.tag, record, tree_forward)?;
        }
        Ok(())
    }

    /// Takes the record of work `tag`; `tree_forward` counts the tokens the tree has run so far.
    fn take(&mut self, tag: usize, record: Computed, tree_forward: u64) -> Result<()> {
        let forward = tree_forward + self.generated_forward;
        match record {
            Computed::Score(s) => {
                self.report.scores_computed += 1;
                self.batch.scores.push(s);
            }
            Computed::Generation(g) => {
                self.report.generations_computed += 1;
                self.report.generated_tokens += g.tokens.len() as u64;
                self.batch.generations.push(g);
            }
        }
        let (text, id) = self.reqs[self.work[tag].req()].prompt();
        self.batch
            .prompts
            .entry(id)
            .or_insert_with(|| text.to_string());
        self.progress.advance(1, forward - self.reported_tokens);
        self.reported_tokens = forward;
        if self.batch.len() >= BATCH {
            unchanged(self.model, &self.batch, false)?;
            self.batch.flush(self.reg)?;
        }
        Ok(())
    }
}

/// What a run did, and the result it stored.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub model: Id,
    pub set: Id,
    pub result: Id,
    #[serde(flatten)]
    pub report: ScoreReport,
}

/// What a run under several normalisations did, and the result it stored for each.
#[derive(Clone, Debug, Serialize)]
pub struct Outcomes {
    pub model: Id,
    pub set: Id,
    /// One result per normalisation, in report order.
    pub results: Vec<NormalisedResult>,
    #[serde(flatten)]
    pub report: ScoreReport,
}

#[derive(Clone, Debug, Serialize)]
pub struct NormalisedResult {
    pub normalisation: Normalisation,
    pub result: Id,
}

/// The models a run asks: the one under test with what its prompts need of it, and the judge
/// (`None`: the model under test judges itself).
pub struct Participants<'a> {
    pub subject: (Id, &'a dyn ModelInfo),
    pub judge: Option<Id>,
}

/// One evaluation, described once: the stored set and its benchmark, the models it asks, the
/// prompt template, the normalisations it answers under, and the part of the set it covers. The
/// CLI builds it from its flags; [`run`], [`run_each`] and [`shard::run`] all take it.
pub struct Run<'a> {
    pub benchmark: &'a dyn Benchmark,
    pub set: (Id, &'a StoredSet),
    pub models: Participants<'a>,
    /// The name of one of the benchmark's templates.
    pub template: &'a str,
    /// One result per normalisation, in this order.
    pub norms: Vec<Normalisation>,
    /// One part of the set (its scores and generations are stored, no result), or all of it.
    pub shard: Option<shard::Shard>,
}

/// Evaluates a set with a model under the run's one normalisation: the benchmark's requests turn
/// by turn, each turn computing only the scores and generations the cache lacks (`load(model
/// id)` is called only for a model with something to compute), each item's later turns made
/// from its answers at the earlier ones. Stores and returns the result.
pub fn run<M: LanguageModel>(
    reg: &Store,
    run: &Run,
    load: impl FnMut(Id) -> Result<Engine<M>>,
    progress: &mut dyn Progress,
) -> Result<Outcome> {
    if run.norms.len() != 1 {
        bail!(
            "one normalisation gives one result; {} were asked (evaluate them together with \
             run_each)",
            run.norms.len()
        );
    }
    let mut all = run_each(reg, run, load, progress)?;
    Ok(Outcome {
        model: all.model,
        set: all.set,
        result: all.results.remove(0).result,
        report: all.report,
    })
}

/// [`run`] under each of the run's normalisations at once: one result per normalisation. Where
/// normalisations pick different answers, later turns differ; requests they share are computed
/// once, in one prefix tree per turn.
pub fn run_each<M: LanguageModel>(
    reg: &Store,
    run: &Run,
    load: impl FnMut(Id) -> Result<Engine<M>>,
    progress: &mut dyn Progress,
) -> Result<Outcomes> {
    if let Some(shard) = run.shard {
        bail!("part {shard} of a set stores no result: score it with shard::run");
    }
    let (report, records) = answer(reg, run, load, progress)?;
    let ids = reg.write(|w| {
        records
            .iter()
            .map(|r| Ok(w.put(r)?.0))
            .collect::<Result<Vec<_>>>()
    })?;
    Ok(Outcomes {
        model: run.models.subject.0,
        set: run.set.0,
        results: run
            .norms
            .iter()
            .zip(ids)
            .map(|(&normalisation, result)| NormalisedResult {
                normalisation,
                result,
            })
            .collect(),
        report,
    })
}

/// The requests of one turn, shared between normalisations: an item's request under a later
/// normalisation that equals its request under an earlier one is asked once, and so is a
/// content-free request however many items and normalisations need it.
#[derive(Default)]
struct Asked {
    pending: Vec<Pending>,
    index: BTreeMap<(Option<usize>, Vec<Id>), usize>,
}

impl Asked {
    /// The index of `p`; `item` is `None` for a content-free request.
    fn add(&mut self, item: Option<usize>, p: Pending) -> usize {
        let slot = self.pending.len();
        let at = *self.index.entry((item, p.keys())).or_insert(slot);
        if at == slot {
            self.pending.push(p);
        }
        at
    }
}

/// The request of item `item` at turn `turn` given its earlier answers, and the content-free
/// requests `norm` compares a scored turn with, filler by filler (none for a generated turn):
/// what the runner asks and what a derivation checks (`derive`).
fn turn_requests(
    prepared: &dyn crate::benchmarks::Prepared,
    (item, turn, earlier): (usize, usize, &[Answer]),
    norm: Normalisation,
    (subject, judge): (Id, Id),
) -> Result<(Pending, Vec<Pending>)> {
    let request = Pending::new(subject, judge, prepared.request(item, turn, earlier)?)?;
    let fillers: &[&str] = match request {
        Pending::Score { .. } => norm.fillers(),
        Pending::Generate { .. } => &[],
    };
    let free = fillers
        .iter()
        .map(|filler| {
            let r = prepared
                .content_free(item, turn, earlier, filler)?
                .with_context(|| {
                    format!(
                        "no content-free form of this turn, which the `{}` normalisation needs",
                        norm.as_str()
                    )
                })?;
            Pending::new(subject, judge, r)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((request, free))
}

/// [`run_each`] over the whole set or the run's part of it: the report and one result record
/// per normalisation, not stored.
fn answer<M: LanguageModel>(
    reg: &Store,
    run: &Run,
    load: impl FnMut(Id) -> Result<Engine<M>>,
    progress: &mut dyn Progress,
) -> Result<(ScoreReport, Vec<ResultRecord>)> {
    let start = Instant::now();
    let Run {
        benchmark,
        set: (set_id, set),
        ref models,
        template,
        ref norms,
        shard,
    } = *run;
    let (model_id, info) = models.subject;
    if norms.is_empty() {
        bail!("no normalisation to evaluate under");
    }
    if models.judge.is_some() && !benchmark.judged() {
        bail!(
            "{} asks no judge: run it without --judge",
            benchmark.title()
        );
    }
    let judge = models.judge.unwrap_or(model_id);
    let prepared = benchmark.prepare(
        reg,
        set,
        template,
        &Models {
            subject: info,
            judge,
        },
    )?;
    let prepared = match shard {
        Some(shard) => shard::select(prepared, shard)?,
        None => prepared,
    };
    let items = prepared.items();
    let mut report = ScoreReport {
        items: items.len(),
        ..Default::default()
    };
    let template = prepared.template();
    let mut computer = Computer::start(reg, load, &template)?;
    let empty_rows: Vec<ResultRow> = items
        .iter()
        .map(|id| ResultRow {
            item: id.0,
            turns: Vec::new(),
        })
        .collect();
    let mut rows = vec![empty_rows; norms.len()];
    let mut answers: Vec<Vec<Vec<Answer>>> = vec![vec![Vec::new(); items.len()]; norms.len()];
    for turn in 0..prepared.turns() {
        let mut asked = Asked::default();
        // Per normalisation and item: its request, and its content-free requests by filler.
        let mut plan: Vec<Vec<(usize, Vec<usize>)>> = Vec::new();
        for (&norm, earlier_by_item) in norms.iter().zip(&answers) {
            let mut of_norm = Vec::new();
            for (i, earlier) in earlier_by_item.iter().enumerate() {
                let what = || format!("item {}, turn {}", items[i].short(), turn + 1);
                let (request, free) =
                    turn_requests(&*prepared, (i, turn, earlier), norm, (model_id, judge))
                        .with_context(|| format!("{}: {}", benchmark.title(), what()))?;
                let free = free
                    .into_iter()
                    .map(|p| asked.add(None, p))
                    .collect::<Vec<_>>();
                of_norm.push((asked.add(Some(i), request), free));
            }
            plan.push(of_norm);
        }
        computer.ensure(&asked.pending, &mut report, progress)?;
        for ((&norm, of_norm), (rows, answers)) in norms
            .iter()
            .zip(plan)
            .zip(rows.iter_mut().zip(&mut answers))
        {
            for ((request, free), (row, earlier)) in of_norm
                .into_iter()
                .zip(rows.iter_mut().zip(answers.iter_mut()))
            {
                let free: Vec<&Pending> = free.iter().map(|&j| &asked.pending[j]).collect();
                let (stored, answer) = asked.pending[request].answer(reg, norm, &free)?;
                row.turns.push(stored);
                earlier.push(answer);
            }
        }
    }
    let results = norms
        .iter()
        .zip(rows)
        .map(|(norm, rows)| ResultRecord {
            model: model_id.0,
            set: set_id.0,
            template: template.id().0,
            normalisation: norm.as_str().to_string(),
            rows,
        })
        .collect();
    report.seconds = start.elapsed().as_secs_f64();
    Ok((report, results))
}
