//! `deltalogic build BENCHMARK [options]`: one subcommand per registered benchmark, each with the
//! benchmark's own options, so that clap prints their help and their usage errors while it parses
//! the command line, before any store is opened.

use crate::benchmarks;
use crate::store::Store;
use anyhow::Result;

#[derive(Debug)]
pub struct Args {
    benchmark: String,
    options: clap::ArgMatches,
}

impl clap::FromArgMatches for Args {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        match m.subcommand() {
            Some((benchmark, options)) => Ok(Args {
                benchmark: benchmark.to_string(),
                options: options.clone(),
            }),
            None => Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand)),
        }
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for Args {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let list = benchmarks::ALL.commands();
        cmd.about(format!(
            "Build a named set of a benchmark: {list} (`deltalogic build <BENCHMARK> --help` \
             for its options)"
        ))
        .subcommand_value_name("BENCHMARK")
        .subcommand_help_heading("Benchmarks")
        .subcommand_required(true)
        .disable_help_subcommand(true)
        .override_usage(format!(
            "deltalogic build <BENCHMARK> [OPTIONS]\n       BENCHMARK: {list}"
        ))
        .subcommands(benchmarks::ALL.iter().map(benchmarks::build_command))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

pub fn run(store: &Store, json: bool, a: Args) -> Result<()> {
    let built = benchmarks::ALL
        .by_command(&a.benchmark)?
        .build_parsed(store, &a.options)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&built.summary)?);
    } else {
        print!("{}", built.text);
    }
    Ok(())
}
