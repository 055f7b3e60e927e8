//! `deltalogic score`: any benchmark's set, through the one evaluation runner (`deltalogic run`,
//! the main job, scores through it too).

use super::progress::Bar;
use super::{Compute, Speculation};
use crate::benchmarks;
use crate::eval::{self, models, Normalisation, Outcome, Outcomes};
use crate::model::scorer::Backend;
use crate::store::{Id, Store};
use anyhow::{bail, Context, Result};

/// Checks a `--norm` value while the command line is parsed, before any store is opened.
pub(super) fn norm(s: &str) -> Result<String, String> {
    Normalisation::parse_list(&[s.to_string()]).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A model name (see `model list`) or fingerprint prefix.
    #[arg(long)]
    model: String,
    /// A set name (see `stats`), of any benchmark.
    #[arg(long)]
    set: String,
    #[arg(long, help = template_help())]
    template: Option<String>,
    /// How label log-probs are compared: `mean` (per token), `sum`, `per-char` (or `char`),
    /// `byte`, `pmi`, `calibrated`, or `all`. Several (`--norm sum pmi`) give one result each; a
    /// later turn continues with the label each picks (see docs/normalisation.md).
    #[arg(long, num_args = 1.., value_delimiter = ',', default_value = "mean", value_parser = norm)]
    norm: Vec<String>,
    /// The model that judges the outputs of benchmarks with judged turns (CLoMo) [default: the
    /// model under test judges itself].
    #[arg(long)]
    judge: Option<String>,
    #[command(flatten)]
    pub(super) compute: Compute,
    #[command(flatten)]
    speculation: Speculation,
    /// Score only part I of N (from 0) of the set, into this store: its scores and generations,
    /// no result. `cache merge` the N part stores, then `score` without --shard writes the
    /// result (see docs/cluster.md).
    #[arg(long, value_name = "I/N")]
    shard: Option<eval::shard::Shard>,
    /// Requests in flight to a served model (see docs/served.md); local models ignore it.
    #[arg(long, default_value_t = eval::served::CONCURRENCY, value_parser = super::bounds::count(1, super::bounds::MAX_CONCURRENCY))]
    concurrency: usize,
}

/// What `score` did: the whole set and its result (or one per normalisation), or one part.
#[derive(serde::Serialize)]
#[serde(untagged)]
pub(super) enum Scored {
    Whole(Outcome),
    Each(Outcomes),
    Part {
        shard: eval::shard::Shard,
        #[serde(flatten)]
        report: eval::ScoreReport,
    },
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Seed of the generated default set.
    #[arg(long, default_value_t = 0, value_parser = super::bounds::seed())]
    pub(super) seed: u64,
    #[command(flatten)]
    pub(super) compute: Compute,
    #[command(flatten)]
    pub(super) speculation: Speculation,
    /// Numerics of the default model [default: int8, as for every GGUF file with quantised
    /// weights; flex gives the scores of the exact f32 mode, in about twice the time].
    #[arg(long, value_enum)]
    pub(super) backend: Option<Backend>,
}

impl Args {
    /// A whole set with its benchmark's default template, under every normalisation.
    pub(super) fn every_normalisation(
        model: &str,
        set: &str,
        compute: Compute,
        speculation: Speculation,
    ) -> Args {
        Args {
            model: model.to_string(),
            set: set.to_string(),
            template: None,
            norm: vec!["all".to_string()],
            judge: None,
            compute,
            speculation,
            shard: None,
            concurrency: eval::served::CONCURRENCY,
        }
    }
}

/// `--template`'s help: each benchmark's templates, read from the catalogue, so a new benchmark's
/// are listed without a change here (what each asks: docs/<benchmark>.md and the README).
fn template_help() -> String {
    let each: Vec<String> = benchmarks::ALL
        .iter()
        .map(|b| format!("{}: {}", b.title(), b.templates().join(", ")))
        .collect();
    format!(
        "The prompt template [default: the benchmark's first]. {}",
        each.join("; ")
    )
}

/// Scores a set with a model through the runner; each model (the one under test, the judge) is
/// loaded only if something of it is missing.
pub(super) fn score(reg: &Store, a: &Args, json: bool) -> Result<Scored> {
    let (model_id, record) = models::resolve(reg, &a.model)?;
    let judge = a
        .judge
        .as_deref()
        .map(|j| models::resolve(reg, j))
        .transpose()?;
    let Some((set_id, stored)) = reg.set_by_name(&a.set)? else {
        bail!(
            "no set named `{}` in {} (see `deltalogic stats`)",
            a.set,
            reg.path().display()
        );
    };
    let benchmark = benchmarks::ALL.named(&stored.benchmark)?;
    let template = a.template.as_deref().unwrap_or(benchmark.templates()[0]);
    let load = |id: Id| -> Result<eval::Engine<models::Loaded>> {
        match &judge {
            Some((judge_id, judge)) if *judge_id == id => models::engine(reg, judge, a.concurrency),
            _ => models::engine(reg, &record, a.concurrency),
        }
    };
    // A served model's chat template is the one of the tokenizer files it was registered with.
    let served = eval::served::is_served(&record)
        .then(|| eval::served::identity(reg, &record))
        .transpose()?;
    let info: &dyn benchmarks::ModelInfo = match &served {
        Some(identity) => identity,
        None => &record,
    };
    let run = eval::Run {
        benchmark,
        set_id,
        set: &stored,
        models: eval::Participants {
            subject: model_id,
            info,
            judge: judge.as_ref().map(|(id, _)| *id),
        },
        template,
        norms: Normalisation::parse_list(&a.norm)?,
        shard: a.shard,
        execution: eval::Execution {
            threads: a.compute.threads,
            speculate: a.speculation.on(),
            snapshot_budget: (a.compute.snapshot_budget as u64) << 20,
        },
    };
    let bar = &mut Bar::new(json);
    match run.shard {
        None if run.norms.len() == 1 => eval::run(reg, &run, load, bar).map(Scored::Whole),
        None => eval::run_each(reg, &run, load, bar).map(Scored::Each),
        Some(shard) => {
            eval::run_part(reg, &run, load, bar).map(|report| Scored::Part { shard, report })
        }
    }
    .with_context(|| format!("scoring set `{}` with `{}`", a.set, a.model))
}

pub(super) fn print(scored: &Scored) {
    let r = match scored {
        Scored::Whole(Outcome { report, .. })
        | Scored::Each(Outcomes { report, .. })
        | Scored::Part { report, .. } => report,
    };
    println!(
        "{} items: {} scores needed, {} found in the cache, {} computed in {:.1} s",
        r.items, r.scores_needed, r.scores_found_in_cache, r.scores_computed, r.seconds
    );
    if r.generations_needed > 0 {
        println!(
            "{} generations needed, {} found in the cache, {} computed ({} tokens)",
            r.generations_needed,
            r.generations_found_in_cache,
            r.generations_computed,
            r.generated_tokens
        );
    }
    if r.forward_tokens > 0 {
        println!(
            "{} tokens through the model for {} distinct tokens of the prompts' prefix tree (the \
             least possible: a prefix shared by labels, steps or episodes runs once)",
            r.forward_tokens, r.tree_tokens
        );
    }
    if r.replayed_tokens > 0 {
        println!(
            "{} of them replayed: recurrent states past the snapshot budget (--snapshot-budget) \
             were run again from the nearest one kept (peak {:.1} MiB kept)",
            r.replayed_tokens,
            r.snapshot_peak_bytes as f64 / (1 << 20) as f64
        );
    }
    match scored {
        Scored::Whole(o) => println!("result {} (`deltalogic audit` takes it)", o.result.short()),
        Scored::Each(o) => {
            let ids: Vec<String> = o
                .results
                .iter()
                .map(|r| format!("{} {}", r.normalisation.as_str(), r.result.short()))
                .collect();
            println!(
                "results (`deltalogic audit` takes them): {}",
                ids.join(", ")
            );
        }
        Scored::Part { shard, .. } => println!(
            "part {shard} of the set scored; no result stored: `cache merge` the {} part stores, \
             then `score` without --shard",
            shard.count
        ),
    }
}

pub fn run(reg: &Store, json: bool, a: Args) -> Result<()> {
    let out = score(reg, &a, json)?;
    super::emit(json, &out, || print(&out))
}
