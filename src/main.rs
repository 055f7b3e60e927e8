//! Minimal command line; the main CLI will mount these subcommands.

use clap::{Parser, Subcommand};
use deltalogic::model::{bench, cli};

#[derive(Parser)]
#[command(name = "deltalogic", version, about)]
struct Cli {
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Log-probabilities of candidate labels after a context.
    ScoreText(cli::ScoreTextArgs),
    /// Prefill throughput per backend next to llama.cpp, and peak memory.
    Bench(bench::BenchArgs),
    /// Developer tools.
    #[command(subcommand)]
    Dev(Dev),
}

#[derive(Subcommand)]
enum Dev {
    /// Writes the tiny random-weight model fixtures.
    MakeFixtures(cli::MakeFixturesArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        Command::ScoreText(args) => cli::score_text(args, cli.json),
        Command::Bench(args) => bench::bench(args),
        Command::Dev(Dev::MakeFixtures(args)) => cli::make_fixtures(args),
    }
}
