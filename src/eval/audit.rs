//! Audits: every score and generation behind a result, and a recomputation of a seeded sample
//! of them.

use super::engine::Engine;
use super::generate::SPECULATE_BY_DEFAULT;
use super::language_model::LanguageModel;
use super::records::{same_bits, GenerationRecord, PromptRecord, ScoreRecord, StopReason};
use crate::benchmarks::Decoding;
use crate::store::{Id, Record, ResultRecord, Store, StoredSet};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// Seed of the audit's sample.
const SAMPLE_SEED: u64 = 20261121;

/// One score behind a result.
#[derive(Debug, Serialize)]
pub struct AuditLine {
    pub key: Id,
    /// The item (episode, question, ...) the score belongs to, and its turn (from 1).
    pub item: Id,
    pub turn: u8,
    pub label: String,
    pub model: Id,
    pub tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
    pub backend: String,
    pub tool_version: String,
    pub computed_at: u64,
    pub prompt: Id,
    /// The prompt's text, when asked for (`audit --prompts`): what an outside check re-scores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
}

/// One generation behind a result.
#[derive(Debug, Serialize)]
pub struct GenerationLine {
    pub key: Id,
    pub item: Id,
    pub turn: u8,
    pub model: Id,
    pub decoding: Decoding,
    pub tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
    pub text: String,
    pub stop: StopReason,
    pub backend: String,
    pub tool_version: String,
    pub computed_at: u64,
    pub prompt: Id,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Audit {
    pub result: Id,
    pub set: Id,
    pub set_size: usize,
    pub template: Id,
    pub normalisation: String,
    pub scores: Vec<AuditLine>,
    pub generations: Vec<GenerationLine>,
}

/// Every score and generation a result read, and nothing else, item by item and turn by turn.
pub fn audit(reg: &Store, prefix: &str) -> Result<Audit> {
    let rid = reg.resolve(ResultRecord::KIND, prefix)?;
    let r = reg
        .get::<ResultRecord>(&rid)?
        .with_context(|| format!("result {} vanished", rid.short()))?;
    let reads: Vec<(Id, u8, bool, Id)> = r
        .rows
        .iter()
        .flat_map(|row| {
            row.turns.iter().enumerate().flat_map(move |(t, turn)| {
                let generated = turn.answer.label().is_none();
                turn.keys
                    .iter()
                    .map(move |k| (Id(row.item), t as u8 + 1, generated, Id(*k)))
            })
        })
        .collect();
    let (set, template, normalisation) = (Id(r.set), Id(r.template), r.normalisation);
    let stored_set = reg.get::<StoredSet>(&set)?;
    let mut scores = Vec::new();
    let mut generations = Vec::new();
    for (item, step, generated, key) in reads {
        if generated {
            let g = reg.get::<GenerationRecord>(&key)?.with_context(|| {
                format!(
                    "result {} reads a missing generation {}",
                    rid.short(),
                    key.short()
                )
            })?;
            generations.push(GenerationLine {
                key,
                item,
                turn: step,
                model: Id(g.model),
                decoding: g.decoding,
                tokens: g.tokens,
                logprobs: g.logprobs,
                text: g.text,
                stop: g.stop,
                backend: g.backend,
                tool_version: g.tool_version,
                computed_at: g.computed_at,
                prompt: Id(g.prompt),
                prompt_text: None,
            });
            continue;
        }
        let s = reg.get::<ScoreRecord>(&key)?.with_context(|| {
            format!(
                "result {} reads a missing score {}",
                rid.short(),
                key.short()
            )
        })?;
        scores.push(AuditLine {
            key,
            item,
            turn: step,
            label: s.label.clone(),
            model: Id(s.model),
            tokens: s.tokens,
            logprobs: s.logprobs,
            backend: s.backend,
            tool_version: s.tool_version,
            computed_at: s.computed_at,
            prompt: Id(s.prompt),
            prompt_text: None,
        });
    }
    Ok(Audit {
        result: rid,
        set,
        set_size: stored_set.map_or(0, |s| s.members.len()),
        template,
        normalisation,
        scores,
        generations,
    })
}

/// Fills in every line's prompt text from the store.
pub fn attach_prompts(reg: &Store, audit: &mut Audit) -> Result<()> {
    for line in &mut audit.scores {
        line.prompt_text = Some(prompt_text(reg, line.key, line.prompt)?);
    }
    for line in &mut audit.generations {
        line.prompt_text = Some(prompt_text(reg, line.key, line.prompt)?);
    }
    Ok(())
}

fn prompt_text(reg: &Store, key: Id, prompt: Id) -> Result<String> {
    let record = reg.get::<PromptRecord>(&prompt)?.with_context(|| {
        format!(
            "record {} names a missing prompt {}",
            key.short(),
            prompt.short()
        )
    })?;
    Ok(record.text)
}

/// One recomputed score or generation, and how far it is from the stored one.
#[derive(Debug, Serialize)]
pub struct Check {
    pub key: Id,
    pub model: Id,
    pub stored: Vec<f32>,
    pub recomputed: Vec<f32>,
    /// Largest |Δ| of one log-prob (infinite when the token counts or a generation's text
    /// differ).
    pub max_abs_diff: f32,
    /// Bit for bit equal (and, for a generation, the same tokens and text).
    pub identical: bool,
    /// Within the tolerance of its model's engine: none for ours, the stated one for a server.
    pub agrees: bool,
}

#[derive(Debug, Serialize)]
pub struct Verification {
    pub checked: usize,
    /// Bit for bit equal.
    pub identical: usize,
    /// Within the tolerance (bit for bit, for a local model).
    pub agreeing: usize,
    /// The tolerance of served models' checks (a local model's is none).
    pub served_tolerance: f32,
    /// Largest absolute difference of a per-token log-prob over the checks.
    pub max_abs_diff: f32,
    pub checks: Vec<Check>,
    /// The keys of the checks that differ beyond their tolerance (`audit --verify` then fails).
    pub differing: Vec<Id>,
}

impl Verification {
    /// The checks that disagree beyond their tolerance.
    pub fn differences(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.agrees)
    }
}

/// Largest |Δ| between two log-prob lists; infinite when their lengths differ.
fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::INFINITY;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Recomputes `k` scores and `k` generations of an audit, sampled with a fixed seed, from their
/// stored prompt texts with the model of each (`load`, called once per model), and compares them
/// with the stored records: bit for bit for our engine, within `served_tolerance` for a served
/// model (a server is not bit-reproducible; the figure is reported either way).
pub fn verify<M: LanguageModel>(
    reg: &Store,
    audit: &Audit,
    mut load: impl FnMut(Id) -> Result<Engine<M>>,
    k: usize,
    served_tolerance: f32,
) -> Result<Verification> {
    let mut models: BTreeMap<Id, Engine<M>> = BTreeMap::new();
    let used: Vec<Id> = audit
        .scores
        .iter()
        .map(|l| l.model)
        .chain(audit.generations.iter().map(|l| l.model))
        .collect();
    for id in used {
        if k > 0 && !models.contains_key(&id) {
            models.insert(id, load(id)?);
        }
    }
    let mut v = Verification {
        checked: 0,
        identical: 0,
        agreeing: 0,
        served_tolerance,
        max_abs_diff: 0.0,
        checks: Vec::new(),
        differing: Vec::new(),
    };
    // One check: the stored and recomputed log-probs, and whether the rest (a generation's
    // tokens and text) is the same.
    let mut add = |key: Id, model: Id, stored: &[f32], recomputed: Vec<f32>, same_rest: bool| {
        let diff = if same_rest {
            max_abs_diff(&recomputed, stored)
        } else {
            f32::INFINITY
        };
        let identical = same_rest && same_bits(&recomputed, stored);
        let agrees = identical || diff <= models[&model].tolerance(served_tolerance);
        v.checked += 1;
        v.identical += usize::from(identical);
        v.agreeing += usize::from(agrees);
        v.max_abs_diff = v.max_abs_diff.max(diff);
        v.checks.push(Check {
            key,
            model,
            stored: stored.to_vec(),
            recomputed,
            max_abs_diff: diff,
            identical,
            agrees,
        });
    };
    for i in sample(audit.scores.len(), audit.result, "scores", k) {
        let line = &audit.scores[i];
        let prompt = prompt_text(reg, line.key, line.prompt)?;
        let recomputed = models[&line.model].rescore(&prompt, &line.label)?;
        add(line.key, line.model, &line.logprobs, recomputed, true);
    }
    for i in sample(audit.generations.len(), audit.result, "generations", k) {
        let line = &audit.generations[i];
        let prompt = prompt_text(reg, line.key, line.prompt)?;
        let g = models[&line.model].regenerate(&prompt, &line.decoding, SPECULATE_BY_DEFAULT)?;
        let same_text = g.tokens == line.tokens && g.text == line.text;
        add(line.key, line.model, &line.logprobs, g.logprobs, same_text);
    }
    v.differing = v.differences().map(|c| c.key).collect();
    Ok(v)
}

/// `k` indices of `n`, shuffled with the audit's seed, the result and what they index.
fn sample(n: usize, result: Id, what: &str, k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let salt = if what == "scores" {
        // The seed of audits made before generations existed: the same sample as before.
        result.hex()
    } else {
        format!("{}/{what}", result.hex())
    };
    crate::rng::Rng::derive(SAMPLE_SEED, &salt).shuffle(&mut order);
    order.truncate(k);
    order
}
