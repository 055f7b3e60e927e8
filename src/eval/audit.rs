//! Audits: every score and generation behind a result, and a recomputation of a seeded sample
//! of them.

use super::records::same_bits;
use super::{GenerationRecord, LanguageModel, PromptRecord, ResultRecord, ScoreRecord, StopReason};
use crate::benchmarks::Decoding;
use crate::store::{Id, Record, Store, StoredSet};
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

/// A recomputed score that differs from the stored one.
#[derive(Debug, Serialize)]
pub struct Difference {
    pub key: Id,
    pub stored: Vec<f32>,
    pub recomputed: Vec<f32>,
}

#[derive(Debug, Serialize)]
pub struct Verification {
    pub checked: usize,
    /// Bit for bit equal.
    pub identical: usize,
    /// Largest absolute difference of a per-token log-prob (prefix reuse may order sums
    /// differently from a full recomputation).
    pub max_abs_diff: f32,
    pub differences: Vec<Difference>,
}

/// Recomputes `k` scores and `k` generations of an audit, sampled with a fixed seed, from their
/// stored prompt texts with the model of each (`load`, called once per model), and compares them
/// bit for bit with the stored records.
pub fn verify<M: LanguageModel>(
    reg: &Store,
    audit: &Audit,
    mut load: impl FnMut(Id) -> Result<M>,
    k: usize,
) -> Result<Verification> {
    let mut models: BTreeMap<Id, M> = BTreeMap::new();
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
    let model = |id: Id| -> Result<&M> { Ok(&models[&id]) };
    let mut v = Verification {
        checked: 0,
        identical: 0,
        max_abs_diff: 0.0,
        differences: Vec::new(),
    };
    for i in sample(audit.scores.len(), audit.result, "scores", k) {
        let line = &audit.scores[i];
        let prompt = prompt_text(reg, line.key, line.prompt)?;
        let recomputed = super::rescore(model(line.model)?, &prompt, &line.label)?;
        v.checked += 1;
        for (a, b) in recomputed.iter().zip(&line.logprobs) {
            v.max_abs_diff = v.max_abs_diff.max((a - b).abs());
        }
        if same_bits(&recomputed, &line.logprobs) {
            v.identical += 1;
        } else {
            v.differences.push(Difference {
                key: line.key,
                stored: line.logprobs.clone(),
                recomputed,
            });
        }
    }
    for i in sample(audit.generations.len(), audit.result, "generations", k) {
        let line = &audit.generations[i];
        let prompt = prompt_text(reg, line.key, line.prompt)?;
        let g = super::regenerate(model(line.model)?, &prompt, &line.decoding)?;
        v.checked += 1;
        if g.tokens == line.tokens && g.text == line.text && same_bits(&g.logprobs, &line.logprobs)
        {
            v.identical += 1;
        } else {
            v.differences.push(Difference {
                key: line.key,
                stored: line.logprobs.clone(),
                recomputed: g.logprobs,
            });
        }
    }
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
