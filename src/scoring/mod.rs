//! Constrained label scoring through the content-addressed cache: every `(model, prompt prefix,
//! label)` score is computed once, stored under its key, and read back by every later run.

pub mod models;
pub mod prompt;
pub mod records;
pub mod tree;

pub use records::{
    ModelRecord, Normalisation, PromptRecord, QuestionResult, QuestionRow, ResultRecord, ResultRow,
    ScoreRecord, TemplateRecord,
};

use crate::episodes::Episode;
use crate::logic::Label;
use crate::questions::Question;
use crate::registry::{Id, Record, Registry};
use anyhow::{anyhow, Context, Result};
use prompt::{QuestionTemplate, Template};
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

/// Scores committed per write transaction: an interrupted run loses at most this many.
pub const BATCH: usize = 24;

/// What a scoring run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScoreReport {
    pub episodes: usize,
    pub scores_needed: usize,
    pub scores_found_in_cache: usize,
    pub scores_computed: usize,
    pub forward_tokens: u64,
    /// Distinct tokens of the prefix tree of the computed requests: the lower bound.
    pub tree_tokens: u64,
    pub seconds: f64,
}

/// One prompt prefix and its labels, with their keys.
struct Request {
    prompt: String,
    prompt_id: Id,
    labels: Vec<String>,
    keys: Vec<Id>,
}

impl Request {
    fn new(model: Id, prompt: String, labels: Vec<String>) -> Request {
        let prompt_id = PromptRecord {
            text: prompt.clone(),
        }
        .id();
        let keys = labels
            .iter()
            .map(|l| ScoreRecord::key(model, prompt_id, l))
            .collect();
        Request {
            prompt,
            prompt_id,
            labels,
            keys,
        }
    }

    fn episode(model: Id, template: &Template, prompt: String) -> Request {
        let labels = template.labels.iter().map(|l| l.to_string()).collect();
        Request::new(model, prompt, labels)
    }
}

/// Computes the missing scores of batches of requests, loading the model on first need.
struct Scorer<'a, M, L: FnOnce() -> Result<M>> {
    reg: &'a Registry,
    model_id: Id,
    model: Option<M>,
    load: Option<L>,
}

impl<'a, M: LanguageModel, L: FnOnce() -> Result<M>> Scorer<'a, M, L> {
    /// A scorer for one run: the template is stored first, so every score key it makes names
    /// a template the store holds.
    fn start(
        reg: &'a Registry,
        model_id: Id,
        load: L,
        template: &TemplateRecord,
    ) -> Result<Scorer<'a, M, L>> {
        reg.write(|w| {
            w.put(template)?;
            Ok(())
        })?;
        Ok(Scorer {
            reg,
            model_id,
            model: None,
            load: Some(load),
        })
    }

    fn ensure(
        &mut self,
        reqs: &[Request],
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
/// Reads stored scores; `None` for any missing.
fn cached(reg: &Registry, keys: &[Id]) -> Result<Vec<Option<ScoreRecord>>> {
    keys.iter().map(|k| reg.get::<ScoreRecord>(k)).collect()
}

/// The label the scores pick: the highest normalised score, ties to the earlier label.
pub fn predict(scores: &[ScoreRecord], norm: Normalisation) -> Label {
    Label::ALL[best(scores, norm)]
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

/// Everything one episode's scoring reads: its two requests (step 2 once step 1 is known).
pub struct EpisodeScores {
    pub episode: Id,
    pub step1: [Id; 3],
    pub step2: [Id; 3],
    pub pred0: Label,
    pub pred1: Label,
}

/// Scores every episode of a set: step 1 for all, then step 2 with the model's own step-1
/// labels, each time computing only the scores the cache lacks. `load` is called only if
/// something must be computed.
pub fn score_set<M: LanguageModel>(
    reg: &Registry,
    model_id: Id,
    load: impl FnOnce() -> Result<M>,
    episodes: &[(Id, Episode)],
    template: &Template,
    norm: Normalisation,
    progress: &mut dyn Progress,
) -> Result<(ScoreReport, Vec<EpisodeScores>)> {
    let start = std::time::Instant::now();
    let mut report = ScoreReport {
        episodes: episodes.len(),
        ..Default::default()
    };
    let mut scorer = Scorer::start(reg, model_id, load, &template.record())?;

    let step1 = episodes
        .iter()
        .map(|(_, ep)| Ok(Request::episode(model_id, template, template.step1(ep)?)))
        .collect::<Result<Vec<_>>>()?;
    scorer.ensure(&step1, &mut report, progress)?;
    let mut pred0 = Vec::with_capacity(episodes.len());
    for r in &step1 {
        pred0.push(predict(&must(reg, &r.keys)?, norm));
    }
    let mut step2 = Vec::with_capacity(episodes.len());
    for ((_, ep), p0) in episodes.iter().zip(&pred0) {
        let after = ep.premises_after()?;
        step2.push(Request::episode(
            model_id,
            template,
            template.step2(ep, *p0, &after)?,
        ));
    }
    scorer.ensure(&step2, &mut report, progress)?;
    let mut out = Vec::with_capacity(episodes.len());
    for (((id, _), (r1, r2)), p0) in episodes.iter().zip(step1.iter().zip(&step2)).zip(pred0) {
        out.push(EpisodeScores {
            episode: *id,
            step1: keys3(&r1.keys)?,
            step2: keys3(&r2.keys)?,
            pred0: p0,
            pred1: predict(&must(reg, &r2.keys)?, norm),
        });
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok((report, out))
}

fn keys3(keys: &[Id]) -> Result<[Id; 3]> {
    keys.try_into()
        .map_err(|_| anyhow!("an episode request has {} labels, not 3", keys.len()))
}

fn must(reg: &Registry, keys: &[Id]) -> Result<Vec<ScoreRecord>> {
    cached(reg, keys)?
        .into_iter()
        .zip(keys)
        .map(|(s, k)| s.ok_or_else(|| anyhow!("score {} is missing after scoring", k.short())))
        .collect()
}

/// Per request index, the label slots whose scores are not stored.
fn missing(reg: &Registry, reqs: &[Request]) -> Result<Vec<(usize, Vec<usize>)>> {
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
    reqs: &[Request],
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

/// Stores the result of a scoring run: the predictions and the keys of every score they read.
pub fn record_result(
    reg: &Registry,
    model: Id,
    set: Id,
    template: &Template,
    norm: Normalisation,
    scores: &[EpisodeScores],
) -> Result<Id> {
    let rows = scores
        .iter()
        .map(|s| ResultRow {
            episode: s.episode.0,
            pred0: s.pred0,
            pred1: s.pred1,
            keys: s.step1.iter().chain(&s.step2).map(|k| k.0).collect(),
        })
        .collect();
    let result = ResultRecord {
        model: model.0,
        set: set.0,
        template: template.id().0,
        normalisation: norm.as_str().to_string(),
        rows,
    };
    reg.write(|w| Ok(w.put(&result)?.0))
}

/// Everything one question's scoring reads.
pub struct QuestionScores {
    pub question: Id,
    /// In option order.
    pub keys: Vec<Id>,
    pub pred: Label,
}

/// Scores every question of a set: one fresh prompt per question (Belief-R step t+1 does not
/// continue step t), computing only the scores the cache lacks. `load` is called only if
/// something must be computed.
pub fn score_questions<M: LanguageModel>(
    reg: &Registry,
    model_id: Id,
    load: impl FnOnce() -> Result<M>,
    questions: &[(Id, Question)],
    template: &dyn QuestionTemplate,
    norm: Normalisation,
    progress: &mut dyn Progress,
) -> Result<(ScoreReport, Vec<QuestionScores>)> {
    let start = std::time::Instant::now();
    let mut report = ScoreReport {
        episodes: questions.len(),
        ..Default::default()
    };
    let mut scorer = Scorer::start(reg, model_id, load, &template.record())?;
    let reqs: Vec<Request> = questions
        .iter()
        .map(|(id, q)| {
            let prompt = template.prompt(q);
            let labels = template.labels(q);
            let (prompt, labels) = prompt
                .and_then(|p| Ok((p, labels?)))
                .with_context(|| format!("question {}", id.short()))?;
            Ok(Request::new(model_id, prompt, labels))
        })
        .collect::<Result<_>>()?;
    scorer.ensure(&reqs, &mut report, progress)?;
    let mut out = Vec::with_capacity(questions.len());
    for ((id, q), r) in questions.iter().zip(reqs) {
        let scores = must(reg, &r.keys)?;
        out.push(QuestionScores {
            question: *id,
            pred: q.options[best(&scores, norm)].label,
            keys: r.keys,
        });
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok((report, out))
}

/// Stores the result of scoring a question set.
pub fn record_question_result(
    reg: &Registry,
    model: Id,
    set: Id,
    template: &dyn QuestionTemplate,
    norm: Normalisation,
    scores: &[QuestionScores],
) -> Result<Id> {
    let rows = scores
        .iter()
        .map(|s| QuestionRow {
            question: s.question.0,
            pred: s.pred,
            keys: s.keys.iter().map(|k| k.0).collect(),
        })
        .collect();
    let result = QuestionResult {
        model: model.0,
        set: set.0,
        template: template.id().0,
        normalisation: norm.as_str().to_string(),
        rows,
    };
    reg.write(|w| Ok(w.put(&result)?.0))
}
