//! The run API: one evaluation described once ([`Run`]), evaluated over a whole set under one
//! normalisation ([`run`]) or several ([`run_each`]), or over one part of it ([`run_part`]),
//! turn by turn: each turn's requests are made from the items' earlier answers, the records the
//! store lacks are computed (`compute`), and each turn's answer is read back from the records.

use super::compute::{Computer, Execution};
use super::engine::Engine;
use super::language_model::LanguageModel;
use super::normalise::Normalisation;
use super::pending::{turn_requests, Asked, Pending};
use super::save::{Progress, ScoreReport};
use super::shard::{self, Shard};
use crate::benchmarks::{Answer, Benchmark, ModelInfo, Models};
use crate::store::{Id, Record, ResultRecord, ResultRow, Store, StoredSet};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::time::Instant;

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
    pub subject: Id,
    /// What the subject's prompts need of it (its chat template).
    pub info: &'a dyn ModelInfo,
    pub judge: Option<Id>,
}

/// One evaluation, described once: the stored set and its benchmark, the models it asks, the
/// prompt template, the normalisations it answers under, and the part of the set it covers. The
/// CLI builds it from its flags; [`run`], [`run_each`] and [`run_part`] all take it.
pub struct Run<'a> {
    pub benchmark: &'a dyn Benchmark,
    pub set_id: Id,
    pub set: &'a StoredSet,
    pub models: Participants<'a>,
    /// The name of one of the benchmark's templates.
    pub template: &'a str,
    /// One result per normalisation, in this order.
    pub norms: Vec<Normalisation>,
    /// One part of the set (its scores and generations are stored, no result), or all of it.
    pub shard: Option<Shard>,
    /// How what the store lacks is computed: none of it changes a bit.
    pub execution: Execution,
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
        bail!("part {shard} of a set stores no result: score it with run_part");
    }
    let (report, records) = answer(reg, run, load, progress)?;
    let ids = reg.write(|w| {
        records
            .iter()
            .map(|r| Ok(w.put(r)?.0))
            .collect::<Result<Vec<_>>>()
    })?;
    Ok(Outcomes {
        model: run.models.subject,
        set: run.set_id,
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

/// Scores the run's part of a set: its scores and generations are stored, no result (see
/// `shard`'s note).
pub fn run_part<M: LanguageModel>(
    reg: &Store,
    run: &Run,
    load: impl FnMut(Id) -> Result<Engine<M>>,
    progress: &mut dyn Progress,
) -> Result<ScoreReport> {
    if run.shard.is_none() {
        bail!("no part of the set was asked: a whole set is scored with eval::run_each");
    }
    let (report, _partial) = answer(reg, run, load, progress)?;
    Ok(report)
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
        set_id,
        set,
        ref models,
        template,
        ref norms,
        shard,
        execution,
    } = *run;
    let (model_id, info) = (models.subject, models.info);
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
    let mut computer = Computer::start(reg, load, execution, &template)?;
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
