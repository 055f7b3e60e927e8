//! The command line. Each command does its work through the library and prints either a
//! readable summary or, with the global `--json`, one JSON document.

use crate::datasets::{BaseItem, Format};
use crate::episodes::{self, EditType, Episode, From};
use crate::model::scorer::Backend;
use crate::registry::{ingest, Id, Kind, Names, Registry, SourceFile};
use crate::scoring::models;
use crate::scoring::prompt::{self, Template};
use crate::scoring::{ModelRecord, Normalisation, ScoreRecord, ScoreReport};
use crate::{cache, check, progress, report, results, scoring};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Measures whether language models revise their beliefs correctly when the evidence changes.
#[derive(Parser, Debug)]
#[command(name = "deltalogic", version, about, long_about = None)]
pub struct Cli {
    /// The registry database.
    #[arg(
        long,
        global = true,
        env = "DELTALOGIC_STORE",
        default_value = "store/registry.redb"
    )]
    pub store: PathBuf,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Read a dataset file, or every file of that format under a directory (sorted), into the store.
    Ingest {
        format: Format,
        path: PathBuf,
        /// Skip malformed records (and report how many) instead of storing nothing.
        #[arg(long)]
        skip_bad: bool,
    },
    /// Build a named episode set.
    Build {
        #[command(subcommand)]
        benchmark: BuildCommand,
    },
    /// List, show or export episodes.
    Episodes {
        #[command(subcommand)]
        command: EpisodesCommand,
    },
    /// Check ingested datasets against the logic engine.
    Datasets {
        #[command(subcommand)]
        command: DatasetsCommand,
    },
    /// Counts of everything in the store.
    Stats,
    /// The paper-style table (Table 1) and the edit-type breakdown of stored results, and an SVG
    /// figure of the failure modes per model.
    Report {
        /// Only these models (names).
        #[arg(long, num_args = 1..)]
        models: Vec<String>,
        /// Only these episode sets (names).
        #[arg(long, num_args = 1..)]
        sets: Vec<String>,
        #[arg(long, value_enum, default_value_t = report::Format::Md)]
        format: report::Format,
        /// Where to write the SVG figure [default: failure-modes.svg beside the store].
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Every score behind a result: key, episode, step, label, model, log-probs, when computed.
    Audit {
        /// A result id (or a unique prefix of one), as `report --format json` shows.
        result: String,
        /// Recompute this many sampled scores with the model and report any difference.
        #[arg(long)]
        verify: Option<usize>,
        /// Include each score's prompt text (JSON output).
        #[arg(long)]
        prompts: bool,
    },
    /// Share caches: export, merge, verify, stats.
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
    },
    /// Register models by fingerprint, list them.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// Score an episode set with a model: computes only the scores the cache lacks.
    Score(ScoreArgs),
    /// The main job: fetch the default model, build the default set from generated theories,
    /// score it, report. A second run computes nothing and prints the same report.
    Run {
        /// Seed of the generated default set.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Threads for the tensor kernels.
        #[arg(long, default_value_t = 2)]
        threads: usize,
    },
    /// Score labels after a context with a model file (no cache): token ids, log-probs, sum, mean.
    ScoreText(crate::model::cli::ScoreTextArgs),
    /// Prefill throughput per backend beside llama.cpp's llama-bench, and peak memory.
    Bench(crate::model::bench::BenchArgs),
    /// Developer tools.
    #[command(subcommand)]
    Dev(DevCommand),
}

#[derive(Subcommand, Debug)]
pub enum DevCommand {
    /// Write the tiny random-weight model fixtures of every architecture.
    MakeFixtures(crate::model::cli::MakeFixturesArgs),
}

#[derive(Subcommand, Debug)]
pub enum ModelCommand {
    /// Register a GGUF file or Hugging Face directory (same bytes, same model).
    Add {
        path: PathBuf,
        /// An alias [default: the file name without extension].
        #[arg(long)]
        name: Option<String>,
        #[arg(long, value_enum, default_value_t = Backend::Flex)]
        backend: Backend,
    },
    /// Registered models and their names.
    List,
}

#[derive(Args, Debug)]
pub struct ScoreArgs {
    /// A model name (see `model list`) or fingerprint prefix.
    #[arg(long)]
    pub model: String,
    /// A set name: DeltaLogic episodes or questions (Belief-R, ...).
    #[arg(long)]
    pub set: String,
    /// Episode sets: `plain` or `chat`. Question sets: `beliefr-letters` (score the option
    /// letters), `beliefr-text` (score the option texts) or `plain-question` (the plain wording,
    /// labels True/False). [default: plain; beliefr-letters for Belief-R, plain-question for
    /// other question sets]
    #[arg(long)]
    pub template: Option<String>,
    /// How label log-probs are compared (step 2 continues with the label this picks).
    #[arg(long, value_enum, default_value_t = Normalisation::Mean)]
    pub norm: Normalisation,
    /// Threads for the tensor kernels.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// Write a self-contained cache file: the scores of a model on a set, with the prompts,
    /// templates, episodes, set and model record they refer to.
    Export {
        #[arg(long)]
        model: String,
        #[arg(long)]
        set: String,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Add a colleague's cache file: a union of content-addressed records; a key that exists here
    /// with another value is reported as a conflict and never overwritten.
    Merge { file: PathBuf },
    /// Check every record (rkyv validity, key = hash of content) of a cache file or the store.
    Verify { file: Option<PathBuf> },
    /// Record counts of a cache file or the store.
    Stats { file: Option<PathBuf> },
}

#[derive(Subcommand, Debug)]
pub enum BuildCommand {
    /// DeltaLogic episodes: one premise edited, both labels computed by the solvers.
    Deltalogic(BuildArgs),
    /// Belief-R questions from the ingested Belief-R items: every step-t row (Basic@t) and every
    /// step-t+1 row, linked to its step-t question. Gold answers are the dataset's human
    /// judgements; no solver checks them.
    Beliefr {
        /// Name of the set.
        #[arg(long, default_value = "belief-r")]
        name: String,
        /// Keep only this many step-t+1 questions per (belief update/maintain, modus) cell, with
        /// the step-t questions they revise: a sample a real model scores in minutes.
        #[arg(long)]
        per_cell: Option<usize>,
        /// Seed of the sample.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// RobustLR contrast and equivalence families (six sets) as True/False questions; every gold
    /// answer is the solver's (closed world for contrast sets, classical for equivalence sets).
    Robustlr {
        /// Base theories: ingested ProofWriter items or fresh generated theories.
        #[arg(long, value_enum, default_value_t = crate::robustlr::Source::ProofWriter)]
        from: crate::robustlr::Source,
        /// Seed of every random choice; the same inputs and seed give the same questions.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Families per set (kept small so that a real model scores the set in minutes).
        #[arg(long, default_value_t = 10)]
        per_set: usize,
        /// Name of the set.
        #[arg(long, default_value = "robustlr")]
        name: String,
    },
    /// The ingested GLoRE RobustLR items (`ingest robustlr-glore`) as questions with the
    /// dataset's gold answers; no solver checks them.
    Glore {
        /// Name of the set.
        #[arg(long, default_value = "glore-robustlr")]
        name: String,
    },
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Seed of every random choice; the same inputs and seed give the same episode ids.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Episodes per (source, edit type) cell [default: 100 split over the cells].
    #[arg(long)]
    pub per_type: Option<usize>,
    /// Name of the set (a later build of the same name replaces the name, not the old set).
    #[arg(long, default_value = "deltalogic")]
    pub name: String,
    /// Premises from ingested FOLIO/ProofWriter items, or from fresh generated theories.
    #[arg(long, value_enum, default_value_t = From::Ingested)]
    pub from: From,
    /// Also build every other cell the engine makes soundly (RuleTaker, more edit types).
    #[arg(long)]
    pub extended: bool,
}

#[derive(Subcommand, Debug)]
pub enum EpisodesCommand {
    /// One line per episode.
    List(Filter),
    /// P, q, y0, the edit, P', y1 of one episode (id or unique prefix).
    Show { id: String },
    /// Write episodes as JSON lines.
    Export {
        #[command(flatten)]
        filter: Filter,
        #[arg(long, value_parser = ["jsonl"], default_value = "jsonl")]
        format: String,
        /// Output file [default: standard output].
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct Filter {
    /// Only episodes of this set.
    #[arg(long)]
    pub set: Option<String>,
    /// Only this edit type.
    #[arg(long, value_enum)]
    pub edit_type: Option<EditType>,
    /// Only this source dataset.
    #[arg(long)]
    pub source: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum DatasetsCommand {
    /// Agreement of the solvers (ProofWriter, RuleTaker) and the FOLIO checker with the
    /// datasets' own labels; disagreements are listed.
    Check {
        /// Only this dataset (folio, proofwriter, ruletaker).
        #[arg(long)]
        dataset: Option<String>,
        /// How many disagreements to list per dataset.
        #[arg(long, default_value_t = 20)]
        list: usize,
    },
}

pub fn run(cli: Cli) -> Result<()> {
    let json = cli.json;
    // Commands on model files alone never touch the store.
    match &cli.command {
        Command::ScoreText(a) => return crate::model::cli::score_text(a, json),
        Command::Bench(a) => return crate::model::bench::bench(a),
        Command::Dev(DevCommand::MakeFixtures(a)) => return crate::model::cli::make_fixtures(a),
        _ => {}
    }
    let reg = Registry::open_write(&cli.store)?;
    match cli.command {
        Command::Ingest {
            format,
            path,
            skip_bad,
        } => {
            let r = ingest::ingest(&reg, format, &path, skip_bad)?;
            emit(json, &r, || {
                for f in &r.files {
                    println!(
                        "{}: {} records, {} new items, {} skipped",
                        f.path, f.records, f.new_items, f.skipped
                    );
                }
                println!(
                    "{} files, {} records, {} new items, {} malformed records skipped",
                    r.files.len(),
                    r.records,
                    r.new_items,
                    r.skipped
                );
            })
        }
        Command::Build {
            benchmark: BuildCommand::Deltalogic(a),
        } => {
            let spec = episodes::BuildSpec {
                seed: a.seed,
                from: a.from,
                per_type: a.per_type,
                extended: a.extended,
            };
            let out = episodes::build(&reg, &spec, &a.name)?;
            emit(json, &out, || {
                println!(
                    "{:<12} {:<13} {:<20} {:>5} {:>6} {:>9} {:>9} {:>9}",
                    "source",
                    "semantics",
                    "edit type",
                    "made",
                    "wanted",
                    "eligible",
                    "rejected",
                    "unusable"
                );
                for c in &out.cells {
                    println!(
                        "{:<12} {:<13} {:<20} {:>5} {:>6} {:>9} {:>9} {:>9}",
                        c.source,
                        c.semantics.as_str(),
                        c.edit_type.as_str(),
                        c.made,
                        c.wanted,
                        c.eligible_items,
                        c.rejected,
                        c.unusable_items
                    );
                }
                println!(
                    "set `{}` = {} ({} episodes, {} new; spec {})",
                    out.name,
                    out.set.short(),
                    out.episodes,
                    out.new_episodes,
                    out.spec.short()
                );
            })
        }
        Command::Build {
            benchmark:
                BuildCommand::Robustlr {
                    from,
                    seed,
                    per_set,
                    name,
                },
        } => {
            let config = crate::robustlr::BuildConfig {
                seed,
                per_set,
                from,
            };
            let out = crate::questions::robustlr::build(&reg, &config, &name)?;
            emit(json, &out, || {
                let r = &out.report;
                println!(
                    "{} {} items in the grammar ({} outside it)",
                    r.candidates,
                    r.source.dataset(),
                    r.unparseable
                );
                println!(
                    "{:<6} {:>8} {:>6} {:>6} {:>11} {:>14} {:>16}",
                    "set",
                    "families",
                    "items",
                    "tried",
                    "unsolvable",
                    "no needed rule",
                    "variant refused"
                );
                for s in &r.sets {
                    println!(
                        "{:<6} {:>8} {:>6} {:>6} {:>11} {:>14} {:>16}",
                        s.set,
                        format!("{}/{}", s.families, s.wanted),
                        s.items,
                        s.tried,
                        s.unsolvable,
                        s.no_needed_rule,
                        s.variant_unsolvable
                    );
                }
                println!("gold answers: the solver's (closed world: contrast sets; classical: equivalence sets)");
                print_stored(&out.stored);
            })
        }
        Command::Build {
            benchmark: BuildCommand::Glore { name },
        } => {
            let out = crate::questions::robustlr::build_glore(&reg, &name)?;
            emit(json, &out, || {
                let labels: Vec<String> =
                    out.labels.iter().map(|(l, n)| format!("{n} {l}")).collect();
                println!("gold answers: {}", labels.join(", "));
                println!("gold answers not checked by the solver: {}", out.gold);
                print_stored(&out.stored);
            })
        }
        Command::Build {
            benchmark:
                BuildCommand::Beliefr {
                    name,
                    per_cell,
                    seed,
                },
        } => {
            let sample =
                per_cell.map(|per_cell| crate::questions::beliefr::Sample { per_cell, seed });
            let out = crate::questions::beliefr::build(&reg, &name, sample)?;
            emit(json, &out, || {
                println!(
                    "{} Belief-R items read; the set holds {} joined pairs and {} step-t-only rows",
                    out.items, out.pairs, out.step_t_only
                );
                println!(
                    "questions: {} step t ({} revised), {} step t+1 ({} belief update, {} belief maintain)",
                    out.step_t, out.step_t_revised, out.pairs, out.update, out.maintain
                );
                println!("gold answers not checked by the solver: {}", out.gold);
                print_stored(&out.stored);
            })
        }
        Command::Episodes { command } => episodes_command(&reg, json, command),
        Command::Datasets {
            command: DatasetsCommand::Check { dataset, list },
        } => {
            let r = check::check(&reg, dataset.as_deref())?;
            emit(json, &r, || check::print(&r, list))
        }
        Command::Stats => {
            let s = stats(&reg)?;
            emit(json, &s, || print_stats(&s))
        }
        Command::Report {
            models,
            sets,
            format,
            svg,
        } => {
            let full = report::Report {
                deltalogic: results::entries(&reg, &models, &sets)?,
                questions: results::question_entries(&reg, &models, &sets)?,
            };
            if full.deltalogic.is_empty() && full.questions.is_empty() {
                bail!("no results to report: score a set first (`deltalogic score` or `deltalogic run`)");
            }
            let format = if json { report::Format::Json } else { format };
            print!("{}", report::render_report(&full, format)?);
            // The figure shows DeltaLogic's failure modes; question benchmarks have none to draw.
            if full.deltalogic.is_empty() {
                return Ok(());
            }
            let svg = svg.unwrap_or_else(|| figure_beside(&reg));
            write_svg(&svg, &report::svg(&full.deltalogic))
        }
        Command::Audit {
            result,
            verify,
            prompts,
        } => {
            let mut a = results::audit(&reg, &result)?;
            if prompts {
                results::attach_prompts(&reg, &mut a)?;
            }
            let checked = match verify {
                Some(k) => {
                    let model = Id(a
                        .scores
                        .first()
                        .context("the result read no scores")?
                        .model
                        .0);
                    let record = reg
                        .get::<ModelRecord>(&model)?
                        .context("the result's model has no record")?;
                    let (_, record) = models::resolve(&reg, &model.hex())
                        .with_context(|| format!("model {} ({})", model.short(), record.path))?;
                    Some(results::verify(
                        &reg,
                        &a,
                        &models::Loaded::open(&record)?,
                        k,
                    )?)
                }
                None => None,
            };
            let doc = serde_json::json!({"audit": a, "verify": checked});
            emit(json, &doc, || {
                println!(
                    "result {} on set {} ({} episodes), template {}, normalisation {}: {} scores",
                    a.result.short(),
                    a.set.short(),
                    a.set_size,
                    a.template.short(),
                    a.normalisation,
                    a.scores.len()
                );
                for l in &a.scores {
                    let lp: Vec<String> = l.logprobs.iter().map(|x| format!("{x:.4}")).collect();
                    println!(
                        "{}  episode {} step {} {:<11} model {} [{}] at {}",
                        l.key.short(),
                        l.episode.short(),
                        l.step,
                        format!("{:?}", l.label),
                        l.model.short(),
                        lp.join(", "),
                        l.computed_at
                    );
                }
                if let Some(v) = &checked {
                    println!(
                        "verified {} sampled scores: {} identical, {} differ (max abs difference {:.2e})",
                        v.checked,
                        v.identical,
                        v.differences.len(),
                        v.max_abs_diff
                    );
                    for d in &v.differences {
                        println!(
                            "  {} stored {:?} recomputed {:?}",
                            d.key.short(),
                            d.stored,
                            d.recomputed
                        );
                    }
                }
            })
        }
        Command::Cache { command } => cache_command(&reg, json, command),
        Command::Model {
            command:
                ModelCommand::Add {
                    path,
                    name,
                    backend,
                },
        } => {
            let (id, added) = models::add(&reg, &path, name.as_deref(), backend)?;
            let out = serde_json::json!({"fingerprint": id, "added": added});
            emit(json, &out, || {
                println!(
                    "{} model {id}",
                    match added {
                        models::Added::New => "registered",
                        models::Added::Known => "already registered:",
                        models::Added::Relocated => "new location recorded for",
                    }
                )
            })
        }
        Command::Model {
            command: ModelCommand::List,
        } => {
            let names = reg.names(Names::Models)?;
            let list: Vec<_> = reg
                .all::<ModelRecord>()?
                .into_iter()
                .map(|(id, m)| {
                    let aliases: Vec<&str> =
                        names.iter().filter(|(_, i)| *i == id).map(|(n, _)| n.as_str()).collect();
                    serde_json::json!({"fingerprint": id, "names": aliases, "architecture": m.architecture,
                        "format": m.format, "backend": m.backend, "path": m.path, "bytes": m.bytes})
                })
                .collect();
            emit(json, &list, || {
                for m in &list {
                    println!(
                        "{}  {:<24} {} {} {}",
                        &m["fingerprint"].as_str().unwrap_or_default()[..12],
                        m["names"].to_string(),
                        m["architecture"].as_str().unwrap_or_default(),
                        m["backend"].as_str().unwrap_or_default(),
                        m["path"].as_str().unwrap_or_default()
                    );
                }
            })
        }
        Command::Score(a) => {
            let question_set = reg
                .set_by_name(&a.set)?
                .filter(|(_, set)| set.holds_questions());
            let out = if let Some((_, set)) = question_set {
                let template = a
                    .template
                    .as_deref()
                    .unwrap_or(prompt::default_question_template(&set.benchmark));
                score_questions(&reg, &a.model, &a.set, template, a.norm, a.threads, json)?
            } else {
                let template = a.template.as_deref().unwrap_or("plain");
                score(&reg, &a.model, &a.set, template, a.norm, a.threads, json)?
            };
            emit(json, &out, || print_score(&out))
        }
        Command::Run { seed, threads } => run_main(&reg, seed, threads, json),
        Command::ScoreText(_) | Command::Bench(_) | Command::Dev(_) => {
            unreachable!("handled above")
        }
    }
}

/// A template by name; `chat` is the model's own chat template.
fn template(name: &str, model: &ModelRecord) -> Result<Template> {
    match name {
        "plain" => Ok(prompt::plain()),
        "chat" => prompt::chat(&models::chat_template(model)?),
        _ => bail!(
            "unknown template `{name}` (known: {})",
            prompt::TEMPLATE_NAMES.join(", ")
        ),
    }
}

#[derive(Serialize)]
struct ScoreOutcome {
    model: Id,
    set: Id,
    result: Id,
    #[serde(flatten)]
    report: ScoreReport,
}

fn score(
    reg: &Registry,
    model: &str,
    set: &str,
    template: &str,
    norm: Normalisation,
    threads: usize,
    json: bool,
) -> Result<ScoreOutcome> {
    let (model_id, record) = models::resolve(reg, model)?;
    let template = &self::template(template, &record)?;
    let (set_id, eps) = episodes::load_set(reg, set)?;
    let mut bar = progress::Bar::new(json);
    let load = loader(&record, threads);
    let (report, rows) = scoring::score_set(reg, model_id, load, &eps, template, norm, &mut bar)?;
    let result = scoring::record_result(reg, model_id, set_id, template, norm, &rows)?;
    Ok(ScoreOutcome {
        model: model_id,
        set: set_id,
        result,
        report,
    })
}

/// Loads the model for a scoring run, with the tensor kernels' thread count; called only if a
/// score is missing.
fn loader(record: &ModelRecord, threads: usize) -> impl FnOnce() -> Result<models::Loaded> + '_ {
    move || {
        crate::model::scorer::set_threads(threads)?;
        models::Loaded::open(record)
    }
}

/// Scores a question set: one prompt per question, labels per the multiple-choice template.
fn score_questions(
    reg: &Registry,
    model: &str,
    set: &str,
    template: &str,
    norm: Normalisation,
    threads: usize,
    json: bool,
) -> Result<ScoreOutcome> {
    let (model_id, record) = models::resolve(reg, model)?;
    let template = prompt::question_template(template).with_context(|| {
        format!(
            "unknown template `{template}` for the question set `{set}` (known: {})",
            prompt::QUESTION_TEMPLATE_NAMES.join(", ")
        )
    })?;
    let (set_id, _, questions) = crate::questions::load_set(reg, set)?;
    let mut bar = progress::Bar::new(json);
    let load = loader(&record, threads);
    let (report, rows) =
        scoring::score_questions(reg, model_id, load, &questions, &*template, norm, &mut bar)?;
    let result = scoring::record_question_result(reg, model_id, set_id, &*template, norm, &rows)?;
    Ok(ScoreOutcome {
        model: model_id,
        set: set_id,
        result,
        report,
    })
}

fn print_stored(s: &crate::questions::Stored) {
    println!(
        "set `{}` = {} ({} questions, {} new; spec {})",
        s.name,
        s.set.short(),
        s.questions,
        s.new_questions,
        s.spec.short()
    );
}

fn print_score(o: &ScoreOutcome) {
    let r = &o.report;
    println!(
        "{} items: {} scores needed, {} found in the cache, {} computed in {:.1} s",
        r.episodes, r.scores_needed, r.scores_found_in_cache, r.scores_computed, r.seconds
    );
    println!(
        "forward tokens {} / prefix-tree tokens {} (lower bound)",
        r.forward_tokens, r.tree_tokens
    );
    println!("result {}", o.result);
}

/// The default model of `run`: SmolLM2-135M-Instruct (Q4_1), fetched by `scripts/fetch_models.sh`.
const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const DEFAULT_MODEL_NAME: &str = "smollm2-135m";
const DEFAULT_SET: &str = "default";

fn run_main(reg: &Registry, seed: u64, threads: usize, json: bool) -> Result<()> {
    let dir = std::env::var_os("DELTALOGIC_MODELS")
        .map_or_else(|| PathBuf::from("models"), PathBuf::from);
    let path = dir.join(DEFAULT_MODEL_FILE);
    if !path.is_file() {
        eprintln!("fetching the default model into {}", dir.display());
        let status = std::process::Command::new("bash")
            .arg("scripts/fetch_models.sh")
            .arg("--only")
            .arg("smollm2")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .status()
            .context("cannot run scripts/fetch_models.sh (run `deltalogic run` from the repository root)")?;
        if !status.success() {
            bail!("scripts/fetch_models.sh failed: the default model could not be fetched");
        }
    }
    let (model_id, _) = models::add(reg, &path, Some(DEFAULT_MODEL_NAME), Backend::Flex)?;
    let spec = episodes::BuildSpec {
        seed,
        from: From::Generated,
        per_type: None,
        extended: false,
    };
    let built = episodes::build(reg, &spec, DEFAULT_SET)?;
    let out = score(
        reg,
        DEFAULT_MODEL_NAME,
        DEFAULT_SET,
        "plain",
        Normalisation::Mean,
        threads,
        json,
    )?;
    let entries = results::entries(
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
        print_score(&out);
        println!();
        print!("{}", report::render(&entries, report::Format::Md)?);
    }
    write_svg(&figure_beside(reg), &report::svg(&entries))
}

/// The figure goes beside the store it was computed from.
fn figure_beside(reg: &Registry) -> PathBuf {
    let dir = reg.path().parent().unwrap_or(std::path::Path::new("."));
    dir.join("failure-modes.svg")
}

fn write_svg(path: &std::path::Path, svg: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("figure written to {}", path.display());
    Ok(())
}

fn cache_command(reg: &Registry, json: bool, command: CacheCommand) -> Result<()> {
    let open_other = |file: &Option<PathBuf>| -> Result<Option<Registry>> {
        file.as_ref()
            .filter(|f| !crate::registry::same_file(reg.path(), f))
            .map(|f| Registry::open_read(f))
            .transpose()
    };
    match command {
        CacheCommand::Export { model, set, output } => {
            let id = reg
                .lookup(Names::Models, &model)?
                .map_or_else(|| reg.resolve(Kind::Model, &model), Ok)
                .with_context(|| format!("unknown model `{model}`"))?;
            let r = cache::export(reg, id, &set, &output)?;
            emit(json, &r, || {
                let total: usize = r.records.values().sum();
                println!("{total} records written to {}", r.file);
                for (k, n) in &r.records {
                    println!("  {k:<12} {n}");
                }
            })
        }
        CacheCommand::Merge { file } => {
            let other = cache::open_incoming(reg, &file)?;
            // Recomputing a sample needs the model; until that is wired here, every merged
            // score is recorded as unverified.
            let mut unavailable = |_: &ScoreRecord| Ok(None);
            let r = cache::merge(reg, &other, cache::MergeOptions::new(&mut unavailable))?;
            emit(json, &r, || {
                for (k, n) in &r.added {
                    println!("added {k:<12} {n}");
                }
                println!(
                    "already present: {}",
                    r.already_present.values().sum::<usize>()
                );
                for c in &r.conflicts {
                    println!("conflict {} {}: {}", c.kind, c.key.short(), c.detail);
                }
                println!(
                    "{} conflicts (the original records were kept)",
                    r.conflicts.len()
                );
            })
        }
        CacheCommand::Verify { file } => {
            let other = open_other(&file)?;
            let r = cache::verify(other.as_ref().unwrap_or(reg))?;
            emit(json, &r, || {
                for (k, c) in &r.kinds {
                    println!("{k:<12} {} records, {} bad", c.records, c.bad);
                }
                for p in &r.problems {
                    println!("problem: {p}");
                }
            })?;
            if !r.problems.is_empty() {
                bail!("{}: {} problem(s)", r.file, r.problems.len());
            }
            Ok(())
        }
        CacheCommand::Stats { file } => {
            let other = open_other(&file)?;
            let r = cache::stats(other.as_ref().unwrap_or(reg))?;
            emit(json, &r, || {
                println!("{}: {} bytes", r.file, r.bytes);
                for (k, n) in &r.records {
                    println!("  {k:<12} {n}");
                }
                for (m, n) in &r.scores_per_model {
                    println!("  scores of model {m}: {n}");
                }
            })
        }
    }
}

fn emit<T: Serialize>(json: bool, value: &T, text: impl FnOnce()) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        text();
    }
    Ok(())
}

/// The episodes a filter selects, in id order.
fn select(reg: &Registry, f: &Filter) -> Result<Vec<(Id, Episode)>> {
    let mut eps = match &f.set {
        Some(name) => episodes::load_set(reg, name)?.1,
        None => reg.all::<Episode>()?,
    };
    eps.retain(|(_, e)| {
        f.edit_type.is_none_or(|t| e.edit_type == t)
            && f.source.as_ref().is_none_or(|s| &e.source == s)
    });
    Ok(eps)
}

#[derive(Serialize)]
struct ExportedEpisode<'a> {
    id: Id,
    base_item: Id,
    #[serde(flatten)]
    episode: &'a Episode,
    premises_after: Vec<episodes::Premise>,
}

fn episodes_command(reg: &Registry, json: bool, command: EpisodesCommand) -> Result<()> {
    match command {
        EpisodesCommand::List(f) => {
            let eps = select(reg, &f)?;
            if json {
                let rows: Vec<_> = eps
                    .iter()
                    .map(|(id, e)| serde_json::json!({"id": id, "source": e.source, "edit_type": e.edit_type, "y0": e.y0, "y1": e.y1, "query": e.query.text}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for (id, e) in &eps {
                    println!(
                        "{}  {:<11} {:<20} {:>9} → {:<9} {}",
                        id.short(),
                        e.source,
                        e.edit_type.as_str(),
                        e.y0.as_str(),
                        e.y1.as_str(),
                        e.query.text
                    );
                }
                println!("{} episodes", eps.len());
            }
            Ok(())
        }
        EpisodesCommand::Show { id } => {
            let id = reg.resolve(Kind::Episode, &id)?;
            let e = reg
                .get::<Episode>(&id)?
                .with_context(|| format!("episode {} vanished", id.short()))?;
            let after = e.premises_after()?;
            if json {
                let x = ExportedEpisode {
                    id,
                    base_item: e.base_item(),
                    episode: &e,
                    premises_after: after,
                };
                println!("{}", serde_json::to_string_pretty(&x)?);
                return Ok(());
            }
            println!("episode {id}");
            println!(
                "source: {} ({}), edit type: {}",
                e.source,
                e.semantics.as_str(),
                e.edit_type
            );
            if let Some(item) = reg.get::<BaseItem>(&e.base_item())? {
                println!(
                    "from: {} {} ({})",
                    item.origin.file, item.origin.position, item.origin.external_id
                );
            }
            println!("\nP:");
            print_premises(&e.premises);
            println!("\nq: {}", e.query.text);
            if let Some(fol) = &e.query.fol {
                println!("   {fol}");
            }
            println!("y0: {}", e.y0);
            println!("\nedit: {}", e.edit.describe(&e.premises));
            println!("\nP':");
            print_premises(&after);
            println!("\ny1: {}", e.y1);
            Ok(())
        }
        EpisodesCommand::Export { filter, output, .. } => {
            let eps = select(reg, &filter)?;
            let mut out: Box<dyn Write> = match &output {
                Some(p) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("cannot write {}", p.display()))?,
                )),
                None => Box::new(std::io::stdout().lock()),
            };
            for (id, e) in &eps {
                let x = ExportedEpisode {
                    id: *id,
                    base_item: e.base_item(),
                    episode: e,
                    premises_after: e.premises_after()?,
                };
                writeln!(out, "{}", serde_json::to_string(&x)?)?;
            }
            out.flush()?;
            if let Some(p) = output {
                eprintln!("{} episodes written to {}", eps.len(), p.display());
            }
            Ok(())
        }
    }
}

fn print_premises(premises: &[episodes::Premise]) {
    for (i, p) in premises.iter().enumerate() {
        println!("  {:>2}. {}", i + 1, p.text);
        if let Some(fol) = &p.fol {
            println!("      {fol}");
        }
    }
}

#[derive(Serialize)]
struct Stats {
    store: String,
    source_files: usize,
    items_per_dataset: BTreeMap<String, usize>,
    episodes: usize,
    episodes_per_source_and_type: BTreeMap<String, BTreeMap<String, usize>>,
    sets: Vec<SetStats>,
}

#[derive(Serialize)]
struct SetStats {
    name: String,
    id: Id,
    episodes: usize,
}

fn stats(reg: &Registry) -> Result<Stats> {
    let mut items_per_dataset = BTreeMap::new();
    for (_, item) in reg.all::<BaseItem>()? {
        *items_per_dataset.entry(item.origin.dataset).or_insert(0) += 1;
    }
    let eps = reg.all::<Episode>()?;
    let mut per = BTreeMap::<String, BTreeMap<String, usize>>::new();
    for (_, e) in &eps {
        *per.entry(e.source.clone())
            .or_default()
            .entry(e.edit_type.as_str().to_string())
            .or_insert(0) += 1;
    }
    let mut sets = Vec::new();
    for (name, id) in reg.names(Names::Sets)? {
        let n = reg.set_by_name(&name)?.map_or(0, |(_, s)| s.episodes.len());
        sets.push(SetStats {
            name,
            id,
            episodes: n,
        });
    }
    Ok(Stats {
        store: reg.path().display().to_string(),
        source_files: reg.all::<SourceFile>()?.len(),
        items_per_dataset,
        episodes: eps.len(),
        episodes_per_source_and_type: per,
        sets,
    })
}

fn print_stats(s: &Stats) {
    println!("store: {}", s.store);
    println!("source files: {}", s.source_files);
    for (d, n) in &s.items_per_dataset {
        println!("items: {d:<12} {n}");
    }
    println!("episodes: {}", s.episodes);
    for (src, types) in &s.episodes_per_source_and_type {
        for (t, n) in types {
            println!("  {src:<12} {t:<20} {n}");
        }
    }
    for set in &s.sets {
        println!(
            "set {:<20} {} episodes  {}",
            set.name,
            set.episodes,
            set.id.short()
        );
    }
}
