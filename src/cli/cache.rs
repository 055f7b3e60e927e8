//! `deltalogic cache export|merge|verify|stats`: sharing score caches.

use super::emit;
use crate::store::{cache, Kind, Names, Registry};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Write a self-contained cache file: the scores of a model on a set, with the prompts,
    /// templates, items, set and model record they refer to.
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

pub fn run(reg: &Registry, json: bool, command: Command) -> Result<()> {
    let open_other = |file: &Option<PathBuf>| -> Result<Option<Registry>> {
        file.as_ref().map(|f| Registry::open_existing(f)).transpose()
    };
    match command {
        Command::Export { model, set, output } => {
            super::output::check(reg, &output, false)?;
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
        Command::Merge { file } => {
            let other = Registry::open_existing(&file)?;
            let r = cache::merge(reg, &other)?;
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
        Command::Verify { file } => {
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
        Command::Stats { file } => {
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
