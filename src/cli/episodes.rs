//! `deltalogic episodes list|show|export`: DeltaLogic episodes.

use super::output;
use super::Access;
use crate::benchmarks::deltalogic::{EditType, Episode, Premise, BENCHMARK};
use crate::benchmarks::members;
use crate::datasets::BaseItem;
use crate::store::{Id, Record, Store};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
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
        /// Overwrite an existing output file.
        #[arg(long)]
        force: bool,
    },
}

impl Command {
    /// How the command opens the store: reading, or recording the file an export writes.
    pub fn access(&self) -> Access {
        match self {
            Command::Export {
                output: Some(_), ..
            } => Access::Update,
            Command::List(_) | Command::Show { .. } | Command::Export { .. } => Access::Read,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Filter {
    /// Only episodes of this set.
    #[arg(long)]
    set: Option<String>,
    /// Only this edit type.
    #[arg(long, value_enum)]
    edit_type: Option<EditType>,
    /// Only this source dataset.
    #[arg(long)]
    source: Option<String>,
}

/// The episodes a filter selects, in id order.
fn select(reg: &Store, f: &Filter) -> Result<Vec<(Id, Episode)>> {
    let mut eps = match &f.set {
        Some(name) => {
            let Some((_, set)) = reg.set_by_name(name)? else {
                bail!(
                    "no set named `{name}` in {} (see `deltalogic stats`)",
                    reg.path().display()
                );
            };
            if set.benchmark != BENCHMARK {
                bail!(
                    "set `{name}` holds {} items, not DeltaLogic episodes",
                    set.benchmark
                );
            }
            members::<Episode>(reg, &set)?
        }
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
    premises_after: Vec<Premise>,
}

pub fn run(reg: &Store, json: bool, command: Command) -> Result<()> {
    match command {
        Command::List(f) => list(reg, json, &f),
        Command::Show { id } => show(reg, json, &id),
        Command::Export {
            filter,
            output,
            force,
            ..
        } => export(reg, &filter, output, force),
    }
}

fn list(reg: &Store, json: bool, f: &Filter) -> Result<()> {
    let eps = select(reg, f)?;
    if json {
        let rows: Vec<_> = eps
            .iter()
            .map(|(id, e)| serde_json::json!({"id": id, "source": e.source, "edit_type": e.edit_type, "y0": e.y0, "y1": e.y1, "query": e.query.text}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
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
    Ok(())
}

fn show(reg: &Store, json: bool, id: &str) -> Result<()> {
    let id = reg.resolve(Episode::KIND, id)?;
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

fn export(reg: &Store, filter: &Filter, output: Option<PathBuf>, force: bool) -> Result<()> {
    let eps = select(reg, filter)?;
    let mut lines = Vec::new();
    for (id, e) in &eps {
        let x = ExportedEpisode {
            id: *id,
            base_item: e.base_item(),
            episode: e,
            premises_after: e.premises_after()?,
        };
        writeln!(lines, "{}", serde_json::to_string(&x)?)?;
    }
    match output {
        Some(p) => {
            output::write(reg, &p, &lines, force)?;
            eprintln!("{} episodes written to {}", eps.len(), p.display());
        }
        None => std::io::stdout().lock().write_all(&lines)?,
    }
    Ok(())
}

fn print_premises(premises: &[Premise]) {
    for (i, p) in premises.iter().enumerate() {
        println!("  {:>2}. {}", i + 1, p.text);
        if let Some(fol) = &p.fol {
            println!("      {fol}");
        }
    }
}
