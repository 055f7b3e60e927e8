//! `deltalogic datasets check` and `deltalogic datasets where`.

use super::check;
use super::emit;
use crate::datasets::home::{self, Dataset, Home};
use crate::datasets::versions::{self, Held, Status};
use crate::store::Store;
use anyhow::Result;
use serde::Serialize;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Agreement of the solvers (ProofWriter, RuleTaker) and the FOLIO checker with the
    /// datasets' own labels; disagreements are listed.
    Check {
        /// Only this dataset (folio, proofwriter, ruletaker).
        #[arg(long)]
        dataset: Option<String>,
        /// How many disagreements to list per dataset.
        #[arg(long, default_value_t = 20, value_parser = super::bounds::count(0, super::bounds::MAX_SIZE))]
        list: usize,
        /// Instead: the sentences the theory grammar refuses, grouped by shape (entities `E`,
        /// verbs `V`, class nouns `N`, other content words `A`), most frequent first, with how
        /// many questions each blocks and one example. Covers the datasets written for the
        /// grammar (ProofWriter, RuleTaker, GLoRE RobustLR, generated), or `--dataset`.
        #[arg(long)]
        refused: bool,
        /// With --refused: how many shapes to show per dataset.
        #[arg(long, default_value_t = 20, requires = "refused")]
        limit: usize,
    },
    /// The datasets folder the commands read (`--datasets DIR`, else DELTALOGIC_DATASETS,
    /// else ../shared/datasets beside the checkout this binary was built from, else
    /// $XDG_DATA_HOME/deltalogic/datasets), and per dataset whether it is found, missing or
    /// another version than the one deltalogic knows (by each file's sha256). No store is read.
    Where {
        /// The datasets folder to look at instead.
        #[arg(long, value_name = "DIR")]
        datasets: Option<PathBuf>,
    },
}

/// Runs a `datasets` command; `store` opens the store, for the commands that read it.
pub fn run(json: bool, c: Command, store: impl FnOnce() -> Result<Store>) -> Result<()> {
    let (dataset, list, refused, limit) = match c {
        Command::Check {
            dataset,
            list,
            refused,
            limit,
        } => (dataset, list, refused, limit),
        Command::Where { datasets } => return where_(json, datasets),
    };
    let store = &store()?;
    if refused {
        let r = check::refusals(store, dataset.as_deref(), limit)?;
        return emit(json, &r, || check::print_refusals(&r));
    }
    let r = check::check(store, dataset.as_deref())?;
    emit(json, &r, || check::print(&r, list))
}

/// What `datasets where` prints: the folder, why it is the one, and what it holds.
#[derive(Serialize)]
struct Where {
    dir: PathBuf,
    chosen: &'static str,
    reason: String,
    datasets: Vec<Listed>,
}

#[derive(Serialize)]
struct Listed {
    #[serde(flatten)]
    held: Held,
    title: &'static str,
    source: String,
    licence: &'static str,
}

fn where_(json: bool, flag: Option<PathBuf>) -> Result<()> {
    let Home { dir, chosen } = home::find(flag.as_deref())?;
    let datasets = versions::survey(&dir)?
        .into_iter()
        .map(|held| {
            let d = Dataset::named(held.folder).expect("surveyed from DATASETS");
            Listed {
                held,
                title: d.title,
                source: d.url(),
                licence: d.licence,
            }
        })
        .collect();
    let w = Where {
        dir,
        chosen: chosen.key(),
        reason: chosen.reason(),
        datasets,
    };
    emit(json, &w, || print_where(&w))
}

fn print_where(w: &Where) {
    println!("datasets folder: {}", w.dir.display());
    println!("  {}", w.reason);
    for l in &w.datasets {
        let h = &l.held;
        println!("{:<22} {:<14} {}", h.folder, h.status.as_str(), l.title);
        match h.status {
            Status::Found => {}
            Status::Missing => println!("{:23}get it from {}", "", l.source),
            Status::WrongVersion => {
                for (what, files) in [
                    ("other bytes", &h.different),
                    ("absent", &h.absent),
                    ("not in this version", &h.extra),
                ] {
                    if !files.is_empty() {
                        println!("{:23}{what}: {}", "", shortened(files));
                    }
                }
                println!("{:23}this version: {}", "", l.source);
            }
        }
    }
    let complete = w.datasets.iter().all(|l| l.held.status == Status::Found);
    if !complete {
        println!(
            "How to lay the datasets out: the README's \"Before you start\"; --datasets DIR or \
             DELTALOGIC_DATASETS=DIR names another folder."
        );
    }
}

/// Up to five files, then how many more.
fn shortened(files: &[String]) -> String {
    let shown = files.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    match files.len() {
        n if n > 5 => format!("{shown} and {} more", n - 5),
        _ => shown,
    }
}
