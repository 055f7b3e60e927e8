//! Audits: every score behind a result, and a recomputation of a seeded sample of them.

use super::{LanguageModel, PromptRecord, ResultRecord, ScoreRecord};
use crate::store::{Id, Kind, Registry, StoredSet};
use anyhow::{Context, Result};
use serde::Serialize;

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

#[derive(Debug, Serialize)]
pub struct Audit {
    pub result: Id,
    pub set: Id,
    pub set_size: usize,
    pub template: Id,
    pub normalisation: String,
    pub scores: Vec<AuditLine>,
}

/// Every score a result read, and nothing else, item by item and turn by turn.
pub fn audit(reg: &Registry, prefix: &str) -> Result<Audit> {
    let rid = reg.resolve(Kind::Result, prefix)?;
    let r = reg
        .get::<ResultRecord>(&rid)?
        .with_context(|| format!("result {} vanished", rid.short()))?;
    let reads: Vec<(Id, u8, Id)> = r
        .rows
        .iter()
        .flat_map(|row| {
            row.turns.iter().enumerate().flat_map(move |(t, turn)| {
                turn.keys
                    .iter()
                    .map(move |k| (Id(row.item), t as u8 + 1, Id(*k)))
            })
        })
        .collect();
    let (set, template, normalisation) = (Id(r.set), Id(r.template), r.normalisation);
    let stored_set = reg.get::<StoredSet>(&set)?;
    let mut scores = Vec::new();
    for (item, step, key) in reads {
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
    })
}

/// Fills in every line's prompt text from the store.
pub fn attach_prompts(reg: &Registry, audit: &mut Audit) -> Result<()> {
    for line in &mut audit.scores {
        line.prompt_text = Some(prompt_text(reg, line)?);
    }
    Ok(())
}

fn prompt_text(reg: &Registry, line: &AuditLine) -> Result<String> {
    let prompt = reg.get::<PromptRecord>(&line.prompt)?.with_context(|| {
        format!(
            "score {} names a missing prompt {}",
            line.key.short(),
            line.prompt.short()
        )
    })?;
    Ok(prompt.text)
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

/// Recomputes `k` scores of an audit, sampled with a fixed seed, from their stored prompt texts,
/// and compares them bit for bit with the stored log-probs.
pub fn verify<M: LanguageModel>(
    reg: &Registry,
    audit: &Audit,
    model: &M,
    k: usize,
) -> Result<Verification> {
    let mut order: Vec<usize> = (0..audit.scores.len()).collect();
    crate::rng::Rng::derive(SAMPLE_SEED, &audit.result.hex()).shuffle(&mut order);
    let mut v = Verification {
        checked: 0,
        identical: 0,
        max_abs_diff: 0.0,
        differences: Vec::new(),
    };
    for &i in order.iter().take(k) {
        let line = &audit.scores[i];
        let prompt = prompt_text(reg, line)?;
        let recomputed = super::rescore(model, &prompt, &line.label)?;
        v.checked += 1;
        for (a, b) in recomputed.iter().zip(&line.logprobs) {
            v.max_abs_diff = v.max_abs_diff.max((a - b).abs());
        }
        let same = recomputed.len() == line.logprobs.len()
            && recomputed
                .iter()
                .zip(&line.logprobs)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        if same {
            v.identical += 1;
        } else {
            v.differences.push(Difference {
                key: line.key,
                stored: line.logprobs.clone(),
                recomputed,
            });
        }
    }
    Ok(v)
}
