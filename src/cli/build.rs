//! `deltalogic build BENCHMARK [options]`: each benchmark parses its own options.

use crate::benchmarks;
use crate::store::Registry;
use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// deltalogic, beliefr, robustlr, glore or static.
    benchmark: String,
    /// The benchmark's own options (`deltalogic build <benchmark> --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    options: Vec<String>,
}

pub fn run(store: &Registry, json: bool, a: Args) -> Result<()> {
    let built = benchmarks::by_command(&a.benchmark)?.build(store, &a.options)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&built.summary)?);
    } else {
        print!("{}", built.text);
    }
    Ok(())
}
