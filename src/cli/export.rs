//! `deltalogic export items`: any benchmark's items as JSONL, one object per set member, as the
//! benchmark exports them (`Benchmark::export`).

use super::output;
use crate::benchmarks;
use crate::store::Registry;
use anyhow::{bail, Result};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// The items of a set as JSONL.
    Items {
        /// The set's name.
        #[arg(long)]
        set: String,
        /// Output file [default: standard output].
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Overwrite an existing output file.
        #[arg(long)]
        force: bool,
    },
}

pub fn run(reg: &Registry, command: Command) -> Result<()> {
    let Command::Items { set, output, force } = command;
    let Some((_, stored)) = reg.set_by_name(&set)? else {
        bail!("no set named `{set}` in {}", reg.path().display());
    };
    let items = benchmarks::named(&stored.benchmark)?.export(reg, &stored)?;
    let mut lines = Vec::new();
    for item in &items {
        writeln!(lines, "{}", serde_json::to_string(item)?)?;
    }
    match output {
        Some(p) => {
            output::write(reg, &p, &lines, force)?;
            eprintln!("{} items written to {}", items.len(), p.display());
        }
        None => std::io::stdout().lock().write_all(&lines)?,
    }
    Ok(())
}
