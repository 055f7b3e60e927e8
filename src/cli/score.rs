//! `deltalogic score` (any benchmark's set, through the one evaluation runner) and `deltalogic run`
//! (the main job).

use super::progress::Bar;
use crate::benchmarks::{self, deltalogic};
use crate::eval::{self, models, Normalisation, Outcome, Outcomes};
use crate::model::scorer::Backend;
use crate::report;
use crate::store::{Id, Registry};
use anyhow::{bail, Context, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A model name (see `model list`) or fingerprint prefix.
    #[arg(long)]
    model: String,
    /// A set name (see `stats`), of any benchmark.
    #[arg(long)]
    set: String,
    /// The prompt template [default: the benchmark's first]. DeltaLogic: `plain`, `chat` (the
    /// model's own chat template) or `dialogue` (the model explains its first answer before the
    /// revision). Belief-R: `beliefr-letters` (score the option letters) or
    /// `beliefr-text` (score the option texts). RobustLR, GLoRE, static: `plain-question`.
    /// CLoMo: `zero`, `few`, `cot` (the prompt setting), each also as `<setting>-judge-cot` (the
    /// judge reasons before its yes/no).
    #[arg(long)]
    template: Option<String>,
    /// How label log-probs are compared: `mean` (per token), `sum`, `per-char` (or `char`),
    /// `byte`, `pmi`, `calibrated`, or `all`. Several (`--norm sum pmi`) give one result each; a
    /// later turn continues with the label each picks (see docs/normalisation.md).
    #[arg(long, num_args = 1.., value_delimiter = ',', default_value = "mean")]
    norm: Vec<String>,
    /// The model that judges the outputs of benchmarks with judged turns (CLoMo) [default: the
    /// model under test judges itself].
    #[arg(long)]
    judge: Option<String>,
    /// Threads for the tensor kernels.
    #[arg(long, default_value = "2", value_parser = super::bounds::threads())]
    threads: usize,
    /// Score only part I of N (from 0) of the set, into this store: its scores and generations,
    /// no result. `cache merge` the N part stores, then `score` without --shard writes the
    /// result (see docs/cluster.md).
    #[arg(long, value_name = "I/N")]
    shard: Option<eval::shard::Shard>,
}

/// What `score` did: the whole set and its result (or one per normalisation), or one part.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Scored {
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
    seed: u64,
    /// Threads for the tensor kernels.
    #[arg(long, default_value = "2", value_parser = super::bounds::threads())]
    threads: usize,
    /// Numerics of the default model [default: int8, as for every GGUF file with quantised
    /// weights; flex gives the scores of the exact f32 mode, in about twice the time].
    #[arg(long, value_enum)]
    backend: Option<Backend>,
}

/// Scores a set with a model through the runner; each model (the one under test, the judge) is
/// loaded only if something of it is missing.
fn score(reg: &Registry, a: &Args, json: bool) -> Result<Scored> {
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
    let benchmark = benchmarks::named(&stored.benchmark)?;
    let template = a.template.as_deref().unwrap_or(benchmark.templates()[0]);
    let load = |id: Id| -> Result<models::Loaded> {
        crate::model::scorer::set_threads(a.threads)?;
        match &judge {
            Some((judge_id, judge)) if *judge_id == id => models::Loaded::open(judge),
            _ => models::Loaded::open(&record),
        }
    };
    let participants = eval::Participants {
        subject: (model_id, &record),
        judge: judge.as_ref().map(|(id, _)| *id),
    };
    let set = (set_id, &stored);
    let (norms, bar) = (Normalisation::parse_list(&a.norm)?, &mut Bar::new(json));
    match a.shard {
        None if norms.len() == 1 => eval::run(
            reg,
            benchmark,
            set,
            participants,
            load,
            template,
            norms[0],
            bar,
        )
        .map(Scored::Whole),
        None => eval::run_each(
            reg,
            benchmark,
            set,
            participants,
            load,
            template,
            &norms,
            bar,
        )
        .map(Scored::Each),
        Some(shard) => eval::shard::run(
            reg,
            benchmark,
            set,
            participants,
            load,
            template,
            &norms,
            bar,
            shard,
        )
        .map(|report| Scored::Part { shard, report }),
    }
    .with_context(|| format!("scoring set `{}` with `{}`", a.set, a.model))
}

fn print(scored: &Scored) {
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
    println!(
        "forward tokens {} / prefix-tree tokens {} (lower bound)",
        r.forward_tokens, r.tree_tokens
    );
    match scored {
        Scored::Whole(o) => println!("result {}", o.result),
        Scored::Each(o) => {
            for r in &o.results {
                println!("result {} ({})", r.result, r.normalisation.as_str());
            }
        }
        Scored::Part { shard, .. } => println!(
            "part {shard} of the set scored; no result stored: `cache merge` the {} part stores, \
             then `score` without --shard",
            shard.count
        ),
    }
}

pub fn run(reg: &Registry, json: bool, a: Args) -> Result<()> {
    let out = score(reg, &a, json)?;
    super::emit(json, &out, || print(&out))
}

/// The default model of `run`: SmolLM2-135M-Instruct (Q4_1), in the models directory (see
/// [`super::fetch::models_dir`]).
const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const DEFAULT_MODEL_NAME: &str = "smollm2-135m";
const DEFAULT_SET: &str = "default";

pub fn run_main(reg: &Registry, json: bool, a: RunArgs) -> Result<()> {
    let path = super::fetch::model(&super::fetch::models_dir()?, "smollm2", DEFAULT_MODEL_FILE)?;
    let backend = models::backend_for(&path, a.backend)?;
    let (model_id, _) = models::add(reg, &path, Some(DEFAULT_MODEL_NAME), backend)?;
    let spec = deltalogic::BuildSpec {
        seed: a.seed,
        from: deltalogic::PremiseSource::Generated,
        per_type: None,
        extended: false,
    };
    let built = deltalogic::build(reg, &spec, DEFAULT_SET)?;
    let args = Args {
        model: DEFAULT_MODEL_NAME.to_string(),
        set: DEFAULT_SET.to_string(),
        template: None,
        norm: vec!["all".to_string()],
        judge: None,
        threads: a.threads,
        shard: None,
    };
    let out = score(reg, &args, json)?;
    let entries = report::entries(
        reg,
        &[DEFAULT_MODEL_NAME.to_string()],
        &[DEFAULT_SET.to_string()],
    )?;
    if json {
        let doc = serde_json::json!({"model": model_id, "set": built.set, "score": out, "results": entries});
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "set `{DEFAULT_SET}` = {} ({} episodes, {} new)",
            built.set.short(),
            built.episodes,
            built.new_episodes
        );
        print(&out);
        println!();
        print!("{}", report::render(&entries, report::Format::Md)?);
    }
    super::report::write_figure(reg, &super::output::figure_beside(reg), &entries, false)
}
