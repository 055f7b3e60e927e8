//! The one evaluation runner: a benchmark's requests → the prefix tree → cache lookups → the
//! model → stored scores → one result record. Every `(model, prompt prefix, label)` score is
//! computed once, stored under its key, and read back by every later run; a later turn's
//! requests are made from the answers the stored scores give.

pub mod audit;
pub mod cache;
pub mod models;
pub mod records;
pub mod share;
pub mod tree;

pub use crate::store::{ResultRecord, ResultRow, Turn};
pub use records::{ModelRecord, Normalisation, PromptRecord, ScoreRecord};

use crate::benchmarks::{Benchmark, ModelInfo, Request};
use crate::logic::Label;
use crate::store::{Id, Record, Registry, StoredSet};
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// What the scorer needs of a causal language model.
pub trait LanguageModel {
    type State;
    /// The backend name recorded with every score.
    fn backend(&self) -> &str;
    /// The context's tokens and each label's tokens, such that the context's tokens are a
    /// prefix of the tokens of context+label (an error otherwise, never shifted tokens).
    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)>;
    fn empty_state(&self) -> Self::State;
    fn prefill(&self, state: &Self::State, tokens: &[u32]) -> Result<Self::State>;
    fn score_continuation(&self, state: &Self::State, tokens: &[u32]) -> Result<Vec<f32>>;
}

/// Largest |difference| accepted between a stored log-prob and the same score recomputed from the
/// empty state (a merge's sample): none. The model's kernels fix every reduction order, so a
/// score's bits depend only on its prompt and label tokens, not on the prefix-tree path, the
/// thread count or the CPU's vector unit (`tests/numerics.rs`).
pub const SCORE_TOLERANCE: f32 = 0.0;

/// Scores committed per write transaction: an interrupted run loses at most this many.
pub const BATCH: usize = 24;

/// What a scoring run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScoreReport {
    pub items: usize,
    pub scores_needed: usize,
    pub scores_found_in_cache: usize,
    pub scores_computed: usize,
    pub forward_tokens: u64,
    /// Distinct tokens of the prefix tree of the computed requests: the lower bound.
    pub tree_tokens: u64,
    pub seconds: f64,
}

/// A score request with the keys of its labels' scores.
struct Pending {
    prompt: String,
    prompt_id: Id,
    labels: Vec<String>,
    answers: Vec<Label>,
    keys: Vec<Id>,
}

impl Pending {
    fn new(model: Id, request: Request) -> Pending {
        let Request::Score { prompt, labels } = request;
        let prompt_id = PromptRecord {
            text: prompt.clone(),
        }
        .id();
        let (labels, answers): (Vec<String>, Vec<Label>) = labels.into_iter().unzip();
        let keys = labels
            .iter()
            .map(|l| ScoreRecord::key(model, prompt_id, l))
            .collect();
        Pending {
            prompt,
            prompt_id,
            labels,
            answers,
            keys,
        }
    }
}

/// Computes the missing scores of batches of requests, loading the model on first need.
struct ScoreCache<'a, M, L: FnOnce() -> Result<M>> {
    reg: &'a Registry,
    model_id: Id,
    model: Option<M>,
    load: Option<L>,
}

impl<'a, M: LanguageModel, L: FnOnce() -> Result<M>> ScoreCache<'a, M, L> {
    /// A scorer for one run: the template is stored first, so every score key it makes names
    /// a template the store holds.
    fn start(
        reg: &'a Registry,
        model_id: Id,
        load: L,
        template: &crate::benchmarks::prompts::TemplateRecord,
    ) -> Result<ScoreCache<'a, M, L>> {
        reg.write(|w| {
            w.put(template)?;
            Ok(())
        })?;
        Ok(ScoreCache {
            reg,
            model_id,
            model: None,
            load: Some(load),
        })
    }

    fn ensure(
        &mut self,
        reqs: &[Pending],
        report: &mut ScoreReport,
        progress: &mut dyn Progress,
    ) -> Result<()> {
        let missing = missing(self.reg, reqs)?;
        let needed: usize = reqs.iter().map(|r| r.keys.len()).sum();
        report.scores_needed += needed;
        report.scores_found_in_cache +=
            needed - missing.iter().map(|(_, m)| m.len()).sum::<usize>();
        if missing.is_empty() {
            return Ok(());
        }
        if self.model.is_none() {
            self.model = Some((self.load.take().expect("loaded once"))()?);
        }
        let m = self.model.as_ref().expect("just loaded");
        compute(self.reg, m, self.model_id, reqs, &missing, report, progress)
    }
}
/// One label's log-probs after a prompt, computed from the empty state: how an audit or a merge
/// checks a stored score.
pub fn rescore<M: LanguageModel>(model: &M, prompt: &str, label: &str) -> Result<Vec<f32>> {
    let (ctx, labels) = model.split_tokens(prompt, &[label.to_string()])?;
    let state = model.prefill(&model.empty_state(), &ctx)?;
    model.score_continuation(&state, &labels[0])
}

/// Reads stored scores; `None` for any missing.
fn cached(reg: &Registry, keys: &[Id]) -> Result<Vec<Option<ScoreRecord>>> {
    keys.iter().map(|k| reg.get::<ScoreRecord>(k)).collect()
}

/// The index of the highest normalised score, ties to the earlier one.
pub fn best(scores: &[ScoreRecord], norm: Normalisation) -> usize {
    let mut best = 0;
    for (i, s) in scores.iter().enumerate() {
        if s.normalised(norm) > scores[best].normalised(norm) {
            best = i;
        }
    }
    best
}

fn must(reg: &Registry, keys: &[Id]) -> Result<Vec<ScoreRecord>> {
    cached(reg, keys)?
        .into_iter()
        .zip(keys)
        .map(|(s, k)| s.ok_or_else(|| anyhow!("score {} is missing after scoring", k.short())))
        .collect()
}

/// Per request index, the label slots whose scores are not stored.
fn missing(reg: &Registry, reqs: &[Pending]) -> Result<Vec<(usize, Vec<usize>)>> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, r) in reqs.iter().enumerate() {
        let slots: Vec<usize> = cached(reg, &r.keys)?
            .iter()
            .enumerate()
            .filter(|(j, s)| s.is_none() && seen.insert(r.keys[*j]))
            .map(|(j, _)| j)
            .collect();
        if !slots.is_empty() {
            out.push((i, slots));
        }
    }
    Ok(out)
}

/// Progress of a scoring run (a terminal bar, or nothing).
pub trait Progress {
    fn start(&mut self, total: u64, cached: u64);
    fn advance(&mut self, scores: u64, tokens: u64);
    fn finish(&mut self);
}

/// No progress output (tests, `--json`).
pub struct Quiet;

impl Progress for Quiet {
    fn start(&mut self, _: u64, _: u64) {}
    fn advance(&mut self, _: u64, _: u64) {}
    fn finish(&mut self) {}
}

#[allow(clippy::too_many_arguments)]
fn compute<M: LanguageModel>(
    reg: &Registry,
    model: &M,
    model_id: Id,
    reqs: &[Pending],
    missing: &[(usize, Vec<usize>)],
    report: &mut ScoreReport,
    progress: &mut dyn Progress,
) -> Result<()> {
    let mut jobs = Vec::new();
    let mut tags = Vec::new(); // tag -> (request, slot, tokens)
    for (i, slots) in missing {
        let r = &reqs[*i];
        let (context, label_tokens) = model
            .split_tokens(&r.prompt, &r.labels)
            .with_context(|| format!("prompt {}", r.prompt_id.short()))?;
        let mut job = tree::Job {
            context,
            labels: Vec::new(),
        };
        for &slot in slots {
            job.labels.push((tags.len(), label_tokens[slot].clone()));
            tags.push((*i, slot, label_tokens[slot].clone()));
        }
        jobs.push(job);
    }
    let total = tags.len();
    progress.start(total as u64, report.scores_found_in_cache as u64);
    let mut pending: Vec<ScoreRecord> = Vec::new();
    let mut prompts: BTreeMap<Id, String> = BTreeMap::new();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let flush =
        |pending: &mut Vec<ScoreRecord>, prompts: &mut BTreeMap<Id, String>| -> Result<()> {
            reg.write(|w| {
                for text in prompts.values() {
                    w.put(&PromptRecord { text: text.clone() })?;
                }
                for s in pending.iter() {
                    w.put(s)?;
                }
                Ok(())
            })?;
            pending.clear();
            prompts.clear();
            Ok(())
        };
    let mut reported_tokens = 0;
    let stats = tree::run(model, jobs, |tag, logprobs, took, forward| {
        let (i, slot, tokens) = &tags[tag];
        let r = &reqs[*i];
        let label = &r.labels[*slot];
        if let Some(bad) = logprobs.iter().find(|x| !x.is_finite()) {
            // A NaN would be stored as a score and read back as an answer: refuse it here.
            bail!(
                "the model gave the non-finite log-prob {bad} for label {label:?} after prompt {}; \
                 nothing of it was stored",
                r.prompt_id.short()
            );
        }
        prompts
            .entry(r.prompt_id)
            .or_insert_with(|| r.prompt.clone());
        pending.push(ScoreRecord {
            model: model_id.0,
            prompt: r.prompt_id.0,
            label: label.clone(),
            tokens: tokens.clone(),
            logprobs,
            chars: label.chars().count() as u32,
            bytes: label.len() as u32,
            backend: model.backend().to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            compute_micros: took.as_micros() as u64,
            computed_at: now,
        });
        progress.advance(1, forward - reported_tokens);
        reported_tokens = forward;
        if pending.len() >= BATCH {
            flush(&mut pending, &mut prompts)?;
        }
        Ok(())
    })?;
    flush(&mut pending, &mut prompts)?;
    progress.finish();
    report.scores_computed += total;
    report.forward_tokens += stats.forward_tokens;
    report.tree_tokens += stats.tree_tokens;
    Ok(())
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

/// Evaluates a set with a model: the benchmark's requests turn by turn, each turn computing only
/// the scores the cache lacks (`load` is called only if something must be computed), each item's
/// later turns made from its answers at the earlier ones. Stores and returns the result.
#[allow(clippy::too_many_arguments)]
pub fn run<M: LanguageModel>(
    reg: &Registry,
    benchmark: &dyn Benchmark,
    (set_id, set): (Id, &StoredSet),
    (model_id, info): (Id, &dyn ModelInfo),
    load: impl FnOnce() -> Result<M>,
    template: &str,
    norm: Normalisation,
    progress: &mut dyn Progress,
) -> Result<Outcome> {
    let start = std::time::Instant::now();
    let prepared = benchmark.prepare(reg, set, template, info)?;
    let items = prepared.items();
    let mut report = ScoreReport {
        items: items.len(),
        ..Default::default()
    };
    let template = prepared.template();
    let mut scorer = ScoreCache::start(reg, model_id, load, &template)?;
    let mut rows: Vec<ResultRow> = items
        .iter()
        .map(|id| ResultRow {
            item: id.0,
            turns: Vec::new(),
        })
        .collect();
    for turn in 0..prepared.turns() {
        let pending = rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let earlier: Vec<Label> = row.turns.iter().map(|t| t.answer).collect();
                let request = prepared
                    .request(i, turn, &earlier)
                    .with_context(|| format!("item {}, turn {}", items[i].short(), turn + 1))?;
                Ok(Pending::new(model_id, request))
            })
            .collect::<Result<Vec<_>>>()?;
        scorer.ensure(&pending, &mut report, progress)?;
        for (row, p) in rows.iter_mut().zip(pending) {
            let scores = must(reg, &p.keys)?;
            row.turns.push(Turn {
                answer: p.answers[best(&scores, norm)],
                keys: p.keys.iter().map(|k| k.0).collect(),
            });
        }
    }
    let result = ResultRecord {
        model: model_id.0,
        set: set_id.0,
        template: template.id().0,
        normalisation: norm.as_str().to_string(),
        rows,
    };
    let result = reg.write(|w| Ok(w.put(&result)?.0))?;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(Outcome {
        model: model_id,
        set: set_id,
        result,
        report,
    })
}
