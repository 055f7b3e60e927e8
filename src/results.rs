//! Results derived from the cache: the rows of a stored result become metrics, and an audit
//! lists every score behind a result.

use crate::episodes::Episode;
use crate::metrics::questions::{self as qmetrics, QuestionRow};
use crate::metrics::{self, Row};
use crate::questions::Question;
use crate::registry::{Id, Kind, Names, Registry, StoredSet};
use crate::report::QuestionEntry;
use crate::report::ResultEntry;
use crate::scoring::{
    LanguageModel, PromptRecord, QuestionResult, ResultRecord, ScoreRecord, TemplateRecord,
};
use anyhow::{bail, Context, Result};
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

/// Which results a report shows: the named models and sets (all models when none are named;
/// without sets, only sets that a name points at now, so a rebuilt name hides the old set).
struct Selection {
    model_names: BTreeMap<Id, String>,
    set_names: BTreeMap<Id, String>,
    models: Option<Vec<Id>>,
    sets: Option<Vec<Id>>,
}

impl Selection {
    fn new(reg: &Registry, models: &[String], sets: &[String]) -> Result<Selection> {
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
        Ok(Selection {
            model_names: namer(reg, Names::Models)?,
            set_names: namer(reg, Names::Sets)?,
            models: resolve(models, Names::Models)?,
            sets: resolve(sets, Names::Sets)?,
        })
    }

    fn keeps(&self, model: Id, set: Id) -> bool {
        let keep_model = self.models.as_ref().is_none_or(|m| m.contains(&model));
        let keep_set = match &self.sets {
            Some(s) => s.contains(&set),
            None => self.set_names.contains_key(&set),
        };
        keep_model && keep_set
    }

    fn model(&self, id: Id) -> String {
        self.model_names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| id.short())
    }

    fn set(&self, id: Id) -> String {
        self.set_names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| id.short())
    }
}

fn template_name(reg: &Registry, id: [u8; 32]) -> Result<String> {
    Ok(reg
        .get::<TemplateRecord>(&Id(id))?
        .map_or_else(|| Id(id).short(), |t| t.name))
}

/// Every stored result whose model and set are among the named ones (all when none are named),
/// for the sets' current ids, with its metrics.
pub fn entries(reg: &Registry, models: &[String], sets: &[String]) -> Result<Vec<ResultEntry>> {
    let sel = Selection::new(reg, models, sets)?;
    let mut out = Vec::new();
    for (rid, r) in reg.all::<ResultRecord>()? {
        let (model, set) = (Id(r.model), Id(r.set));
        if !sel.keeps(model, set) {
            continue;
        }
        let rows = rows(reg, &r)?;
        out.push(ResultEntry {
            model: sel.model(model),
            set: sel.set(set),
            template: template_name(reg, r.template)?,
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

/// The metric rows of a question result: its answers joined with its questions.
pub fn question_rows(
    reg: &Registry,
    result: &QuestionResult,
) -> Result<(String, Vec<QuestionRow>)> {
    let mut benchmark = None;
    let rows = result
        .rows
        .iter()
        .map(|r| {
            let id = Id(r.question);
            let q = reg
                .get::<Question>(&id)?
                .with_context(|| format!("result names a missing question {}", id.short()))?;
            benchmark.get_or_insert_with(|| q.benchmark.clone());
            Ok(QuestionRow {
                question: id.hex(),
                gold: q.gold,
                pred: r.pred,
                revises: q.revises.map(|b| Id(b).hex()),
                tags: q.tags,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((benchmark.unwrap_or_default(), rows))
}

/// Every stored question result the selection keeps, with its benchmark's metrics.
pub fn question_entries(
    reg: &Registry,
    models: &[String],
    sets: &[String],
) -> Result<Vec<QuestionEntry>> {
    let sel = Selection::new(reg, models, sets)?;
    let mut out = Vec::new();
    for (rid, r) in reg.all::<QuestionResult>()? {
        let (model, set) = (Id(r.model), Id(r.set));
        if !sel.keeps(model, set) {
            continue;
        }
        let (benchmark, rows) = question_rows(reg, &r)?;
        let metrics = qmetrics::for_benchmark(&benchmark, &rows, BOOTSTRAP_SEED, RESAMPLES)
            .with_context(|| format!("result {}", rid.short()))?;
        out.push(QuestionEntry {
            benchmark,
            model: sel.model(model),
            set: sel.set(set),
            template: template_name(reg, r.template)?,
            normalisation: r.normalisation.clone(),
            result_id: rid.hex(),
            metrics,
        });
    }
    out.sort_by(|a, b| {
        (
            &a.benchmark,
            &a.set,
            &a.model,
            &a.template,
            &a.normalisation,
        )
            .cmp(&(
                &b.benchmark,
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
    /// The episode, or for a question result the question, the score belongs to.
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

/// Every score a result read, and nothing else. DeltaLogic results list steps 1 and 2 of each
/// episode; question results one step per question (its id under `episode`).
pub fn audit(reg: &Registry, prefix: &str) -> Result<Audit> {
    // A prefix names a DeltaLogic result or a question result; both tables are searched.
    let found = [Kind::Result, Kind::QuestionResult]
        .map(|kind| reg.resolve(kind, prefix).ok().map(|id| (kind, id)));
    let (kind, rid) = match found {
        [Some(a), None] | [None, Some(a)] => a,
        [Some(_), Some(_)] => bail!("`{prefix}` names several results; give more digits"),
        [None, None] => {
            // Says why: not an id, ambiguous among results, or no such result.
            reg.resolve(Kind::Result, prefix)?;
            bail!("no result id starts with `{prefix}`")
        }
    };
    // (item, step, key) of every score read, and the result's settings.
    let (set, template, normalisation, reads): (Id, Id, String, Vec<(Id, u8, Id)>) =
        if kind == Kind::Result {
            let r = reg.get::<ResultRecord>(&rid)?.context("result vanished")?;
            let reads = r
                .rows
                .iter()
                .flat_map(|row| {
                    row.keys
                        .iter()
                        .enumerate()
                        .map(|(i, k)| (Id(row.episode), if i < 3 { 1 } else { 2 }, Id(*k)))
                })
                .collect();
            (Id(r.set), Id(r.template), r.normalisation, reads)
        } else {
            let r = reg
                .get::<QuestionResult>(&rid)?
                .context("result vanished")?;
            let reads = r
                .rows
                .iter()
                .flat_map(|row| row.keys.iter().map(|k| (Id(row.question), 1, Id(*k))))
                .collect();
            (Id(r.set), Id(r.template), r.normalisation, reads)
        };
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
            episode: item,
            step,
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
        set_size: stored_set.map_or(0, |s| s.episodes.len()),
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
    crate::rng::Rng::derive(BOOTSTRAP_SEED, &audit.result.hex()).shuffle(&mut order);
    let mut v = Verification {
        checked: 0,
        identical: 0,
        max_abs_diff: 0.0,
        differences: Vec::new(),
    };
    for &i in order.iter().take(k) {
        let line = &audit.scores[i];
        let prompt = prompt_text(reg, line)?;
        let (ctx, labels) = model.split_tokens(&prompt, std::slice::from_ref(&line.label))?;
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
