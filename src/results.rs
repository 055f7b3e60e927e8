//! Results derived from the cache: the rows of a stored result become metrics, and an audit
//! lists every score behind a result.

use crate::episodes::Episode;
use crate::metrics::{self, Row};
use crate::registry::{Id, Kind, Names, Registry, StoredSet};
use crate::report::ResultEntry;
use crate::scoring::{LanguageModel, PromptRecord, ResultRecord, ScoreRecord, TemplateRecord};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// Bootstrap resamples behind every interval in reports.
pub const RESAMPLES: usize = 1000;
/// Seed of the bootstrap: fixed so a report is the same every time.
pub const BOOTSTRAP_SEED: u64 = 20261121;

/// Display names of ids: the names pointing at them, else the short id.
fn namer(reg: &Registry, names: Names) -> Result<BTreeMap<Id, String>> {
    let mut out: BTreeMap<Id, String> = BTreeMap::new();
    for (name, id) in reg.names(names)? {
        out.entry(id)
            .and_modify(|n| *n = format!("{n}, {name}"))
            .or_insert(name);
    }
    Ok(out)
}

/// The metric rows of a result: its predictions joined with its episodes' gold labels.
pub fn rows(reg: &Registry, result: &ResultRecord) -> Result<Vec<Row>> {
    result
        .rows
        .iter()
        .map(|r| {
            let id = Id(r.episode);
            let ep = reg
                .get::<Episode>(&id)?
                .with_context(|| format!("result names a missing episode {}", id.short()))?;
            Ok(Row {
                episode: id.hex(),
                source: ep.source,
                edit_type: ep.edit_type,
                y0: ep.y0,
                y1: ep.y1,
                pred0: r.pred0,
                pred1: r.pred1,
            })
        })
        .collect()
}

/// Every stored result whose model and set are among the named ones (all when none are named),
/// for the sets' current ids, with its metrics.
pub fn entries(reg: &Registry, models: &[String], sets: &[String]) -> Result<Vec<ResultEntry>> {
    let model_names = namer(reg, Names::Models)?;
    let set_names = namer(reg, Names::Sets)?;
    let resolve = |names: &[String], table: Names| -> Result<Option<Vec<Id>>> {
        if names.is_empty() {
            return Ok(None);
        }
        names
            .iter()
            .map(|n| {
                reg.lookup(table, n)?
                    .with_context(|| format!("no {} named `{n}`", table.noun()))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    };
    let want_models = resolve(models, Names::Models)?;
    let want_sets = resolve(sets, Names::Sets)?;
    let mut out = Vec::new();
    for (rid, r) in reg.all::<ResultRecord>()? {
        let (model, set) = (Id(r.model), Id(r.set));
        let keep_model = want_models.as_ref().is_none_or(|m| m.contains(&model));
        // Without --sets, only sets that a name points at now (a rebuilt name hides the old set).
        let keep_set = match &want_sets {
            Some(s) => s.contains(&set),
            None => set_names.contains_key(&set),
        };
        if !keep_model || !keep_set {
            continue;
        }
        let template = reg
            .get::<TemplateRecord>(&Id(r.template))?
            .map_or_else(|| Id(r.template).short(), |t| t.name);
        let rows = rows(reg, &r)?;
        out.push(ResultEntry {
            model: model_names
                .get(&model)
                .cloned()
                .unwrap_or_else(|| model.short()),
            set: set_names.get(&set).cloned().unwrap_or_else(|| set.short()),
            template,
            normalisation: r.normalisation.clone(),
            result_id: rid.hex(),
            breakdown: metrics::breakdown(&rows, BOOTSTRAP_SEED, RESAMPLES),
        });
    }
    out.sort_by(|a, b| {
        (&a.set, &a.model, &a.template, &a.normalisation).cmp(&(
            &b.set,
            &b.model,
            &b.template,
            &b.normalisation,
        ))
    });
    Ok(out)
}

/// One score behind a result.
#[derive(Debug, Serialize)]
pub struct AuditLine {
    pub key: Id,
    pub episode: Id,
    pub step: u8,
    pub label: String,
    pub model: Id,
    pub tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
    pub backend: String,
    pub tool_version: String,
    pub computed_at: u64,
    pub prompt: Id,
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

/// Every score a result read, and nothing else.
pub fn audit(reg: &Registry, prefix: &str) -> Result<Audit> {
    let rid = reg.resolve(Kind::Result, prefix)?;
    let r = reg.get::<ResultRecord>(&rid)?.context("result vanished")?;
    let set = reg.get::<StoredSet>(&Id(r.set))?;
    let mut scores = Vec::new();
    for row in &r.rows {
        for (i, key) in row.keys.iter().enumerate() {
            let key = Id(*key);
            let s = reg.get::<ScoreRecord>(&key)?.with_context(|| {
                format!(
                    "result {} reads a missing score {}",
                    rid.short(),
                    key.short()
                )
            })?;
            scores.push(AuditLine {
                key,
                episode: Id(row.episode),
                step: if i < 3 { 1 } else { 2 },
                label: s.label.clone(),
                model: Id(s.model),
                tokens: s.tokens,
                logprobs: s.logprobs,
                backend: s.backend,
                tool_version: s.tool_version,
                computed_at: s.computed_at,
                prompt: Id(s.prompt),
            });
        }
    }
    Ok(Audit {
        result: rid,
        set: Id(r.set),
        set_size: set.map_or(0, |s| s.episodes.len()),
        template: Id(r.template),
        normalisation: r.normalisation,
        scores,
    })
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
    crate::rng::Rng::derive(BOOTSTRAP_SEED, &audit.result.hex()).shuffle(&mut order);
    let mut v = Verification {
        checked: 0,
        identical: 0,
        max_abs_diff: 0.0,
        differences: Vec::new(),
    };
    for &i in order.iter().take(k) {
        let line = &audit.scores[i];
        let prompt = reg.get::<PromptRecord>(&line.prompt)?.with_context(|| {
            format!(
                "score {} names a missing prompt {}",
                line.key.short(),
                line.prompt.short()
            )
        })?;
        let (ctx, labels) = model.split_tokens(&prompt.text, std::slice::from_ref(&line.label))?;
        let state = model.prefill(&model.empty_state(), &ctx)?;
        let recomputed = model.score_continuation(&state, &labels[0])?;
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
