//! The command line. Each command does its work through the library and prints either a
//! readable summary or, with the global `--json`, one JSON document.

use crate::check;
use crate::datasets::{BaseItem, Format};
use crate::episodes::{self, EditType, Episode, From};
use crate::registry::{ingest, Id, Kind, Names, Registry, SourceFile};
use anyhow::{Context, Result};
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
}

#[derive(Subcommand, Debug)]
pub enum BuildCommand {
    /// DeltaLogic episodes: one premise edited, both labels computed by the solvers.
    Deltalogic(BuildArgs),
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
    let reg = Registry::open(&cli.store)?;
    let json = cli.json;
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
