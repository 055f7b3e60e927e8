//! The command line: one file per command group, each with its arguments, handler and text
//! printer. Every command does its work through the library and prints either a readable summary
//! or, with the global `--json`, one JSON document.

mod audit;
mod bench;
mod build;
mod cache;
pub mod check;
mod datasets;
mod episodes;
mod export;
mod fetch;
mod generate_text;
mod ingest;
mod model;
mod output;
pub mod progress;
mod report;
mod run;
mod score;
mod score_text;
mod stats;

// The flags' bounds live in a leaf module (benchmarks' build options use them too); each
// command file names them `super::bounds`.
use crate::bounds;
use crate::store::Store;
use anyhow::Result;
use clap::builder::TypedValueParser;
use clap::{Parser, Subcommand};
use serde::Serialize;
use std::path::PathBuf;

/// Measures whether language models revise their beliefs correctly when the evidence changes.
#[derive(Parser, Debug)]
#[command(name = "deltalogic", version, about, long_about = None)]
pub struct Cli {
    /// The store (a redb file).
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
    /// Served models: seconds to open a connection (docs/served.md).
    #[arg(long, global = true, value_name = "SECS", default_value_t = crate::served::Waits::DEFAULT.connect.as_secs(), value_parser = bounds::count(1, bounds::MAX_TIMEOUT_SECS).map(|n| n as u64))]
    pub connect_timeout: u64,
    /// Served models: seconds from a request to the end of its answer's headers.
    #[arg(long, global = true, value_name = "SECS", default_value_t = crate::served::Waits::DEFAULT.first_byte.as_secs(), value_parser = bounds::count(1, bounds::MAX_TIMEOUT_SECS).map(|n| n as u64))]
    pub first_byte_timeout: u64,
    /// Served models: seconds for a whole request, its answer read (retries stop after 5
    /// attempts or 60 s).
    #[arg(long, global = true, value_name = "SECS", default_value_t = crate::served::Waits::DEFAULT.request.as_secs(), value_parser = bounds::count(1, bounds::MAX_TIMEOUT_SECS).map(|n| n as u64))]
    pub timeout: u64,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Read a dataset file, or every file of that format under a directory (sorted), into the store.
    Ingest(ingest::Args),
    // Its help names every registered benchmark (see `build::Args`).
    Build(build::Args),
    /// List, show or export DeltaLogic episodes.
    #[command(subcommand)]
    Episodes(episodes::Command),
    /// Export any benchmark's items.
    #[command(subcommand)]
    Export(export::Command),
    /// Check ingested datasets against the logic engine; where the dataset files are.
    #[command(subcommand)]
    Datasets(datasets::Command),
    /// Counts of everything in the store.
    Stats,
    /// Every benchmark's tables for the stored results, side by side, and an SVG figure.
    Report(report::Args),
    /// Every score and generation behind a result: key, item, turn, label or text, model, log-probs.
    Audit(audit::Args),
    /// Share caches: export, merge, verify, stats.
    #[command(subcommand)]
    Cache(cache::Command),
    /// Register models by fingerprint, list them.
    #[command(subcommand)]
    Model(model::Command),
    /// Evaluate a set with a model: computes only the scores and generations the cache lacks.
    Score(score::Args),
    /// The main job: fetch the default model, build the default set from generated theories,
    /// score it, report. A second run computes nothing and prints the same report.
    Run(score::RunArgs),
    /// Score labels after a context with a model file (no cache): token ids, log-probs, sum, mean.
    ScoreText(score_text::ScoreTextArgs),
    /// Greedy generation after a prompt with a model file (no cache): tokens, log-probs, text.
    GenerateText(generate_text::GenerateTextArgs),
    /// Prefill and decode throughput per backend beside llama.cpp's llama-bench, and peak memory.
    Bench(bench::BenchArgs),
    /// Developer tools.
    #[command(subcommand)]
    Dev(model::DevCommand),
}

/// The compute flags of every command that runs our engine, declared once and applied once (in
/// [`run`], before the command): the pool the kernels run on is sized from them, and the size is
/// passed down as a value (`eval::Execution::threads`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct Compute {
    /// Threads for the tensor kernels.
    #[arg(
        long,
        default_value_t = crate::eval::Execution::DEFAULT_THREADS,
        value_parser = bounds::threads()
    )]
    pub threads: usize,
    /// MiB the prefix tree may keep of a hybrid model's recurrent states at its branch points
    /// (0: none). Past it a branch reruns the tokens from the nearest state kept: the same bits,
    /// more tokens (counted as replayed).
    #[arg(
        long,
        value_name = "MIB",
        default_value_t = crate::eval::tree::DEFAULT_SNAPSHOT_MIB as usize,
        value_parser = bounds::count(0, bounds::MAX_SNAPSHOT_MIB)
    )]
    pub snapshot_budget: usize,
}

/// The flag of every command that generates with our engine (`score`, `run`, `generate-text`),
/// declared once and passed down as a value (`eval::Execution::speculate`). `bench` times generation
/// both ways and `score-text` generates nothing, so neither takes it.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct Speculation {
    /// Decode one token a pass, without drafting tokens from the prompt and verifying them.
    /// Speculative decoding changes no bit of a generation (its text, log-probs and key), only
    /// its speed: this flag is there to compare the two.
    #[arg(long)]
    no_speculate: bool,
}

impl Speculation {
    /// Whether generations draft tokens and verify them.
    pub fn on(self) -> bool {
        !self.no_speculate
    }
}

impl Command {
    /// The compute flags the command takes, if it runs a model.
    fn compute(&self) -> Option<Compute> {
        match self {
            Command::Score(a) => Some(a.compute),
            Command::Run(a) => Some(a.compute),
            Command::ScoreText(a) => Some(a.compute),
            Command::GenerateText(a) => Some(a.compute),
            Command::Bench(a) => Some(a.compute),
            _ => None,
        }
    }
}

pub fn run(cli: Cli) -> Result<()> {
    let (json, path) = (cli.json, cli.store.as_path());
    let secs = std::time::Duration::from_secs;
    crate::served::set_waits(crate::served::Waits {
        connect: secs(cli.connect_timeout),
        first_byte: secs(cli.first_byte_timeout),
        request: secs(cli.timeout),
    });
    if let Some(compute) = cli.command.compute() {
        crate::model::scorer::set_threads(compute.threads)?;
    }
    // Each arm opens the store as its command declares, and only then: commands on model files
    // or on a cache file alone never touch it.
    let store = |access: Access| open(path, access);
    match cli.command {
        Command::Ingest(a) => ingest::run(&store(Access::Create)?, json, a),
        Command::Build(a) => build::run(&store(Access::Create)?, json, a),
        Command::Episodes(c) => episodes::run(&store(c.access())?, json, c),
        Command::Export(c) => export::run(&store(c.access())?, c),
        Command::Datasets(c) => datasets::run(json, c, || store(Access::Read)),
        Command::Stats => stats::run(&store(Access::Read)?, json),
        // A report records the figure it wrote beside the store.
        Command::Report(a) => report::run(&store(Access::Update)?, json, a),
        Command::Audit(a) => audit::run(&store(Access::Read)?, json, a),
        Command::Cache(c) => match c.access() {
            Some(access) => cache::run(&store(access)?, json, c),
            None => cache::run_alone(json, &c),
        },
        Command::Model(c) => match c.access() {
            Some(access) => model::run(&store(access)?, json, c),
            None => model::run_file(json, c),
        },
        Command::Score(a) => score::run(&store(Access::Create)?, json, a),
        Command::Run(a) => run::run(&store(Access::Create)?, json, a),
        Command::ScoreText(a) => score_text::score_text(&a, json),
        Command::GenerateText(a) => generate_text::generate_text(&a, json),
        Command::Bench(a) => bench::bench(&a, json),
        Command::Dev(c) => model::dev(&c),
    }
}

/// How a command opens the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads only: a missing store is an error, a read-only file works, nothing is written. A
    /// store left unclean by an interrupted command is read as of its last commit.
    Read,
    /// Writes to a store that must exist (repairing it first if it was not closed cleanly).
    Update,
    /// Writes, creating the store if it is missing (and repairing an unclean one).
    Create,
}

/// Opens the store as a command needs it.
pub fn open(path: &std::path::Path, access: Access) -> Result<Store> {
    match access {
        Access::Read => {
            let store = Store::open_read(path)?;
            store.require_current()?;
            Ok(store)
        }
        // Commands that only add bookkeeping (a figure's record) to a store never create one;
        // an existing store opens for writing whatever state it was left in.
        Access::Update => Store::open_existing(path),
        Access::Create => Store::open_write(path),
    }
}

/// The exit status of an error: a merge with conflicts and an audit that found differences have
/// their own (README, "Exit statuses").
pub fn exit_status(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<cache::Conflicts>().is_some() {
        cache::CONFLICT_STATUS
    } else if e.downcast_ref::<audit::Differences>().is_some() {
        audit::DIFFERENCES_STATUS
    } else {
        1
    }
}

/// Prints `value` as JSON, or runs the text printer.
fn emit<T: Serialize>(json: bool, value: &T, text: impl FnOnce()) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        text();
    }
    Ok(())
}
