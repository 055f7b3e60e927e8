//! `deltalogic ingest FORMAT [PATH]`.

use super::emit;
use crate::datasets::{home, Format};
use crate::store::{ingest, Store};
use anyhow::{bail, Result};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  deltalogic ingest folio                  # <datasets folder>/folio/v0.0
  deltalogic ingest ruletaker --datasets ~/data/deltalogic
  deltalogic ingest proofwriter my/dev.json

The datasets folder is DELTALOGIC_DATASETS, else ../shared/datasets beside the checkout this \
binary was built from, else $XDG_DATA_HOME/deltalogic/datasets; `deltalogic datasets where` \
shows it and what it holds, the README's \"Before you start\" where each dataset comes from.")]
pub struct Args {
    format: Format,
    /// A file, or a directory whose files of this format are read in sorted order [default:
    /// the format's folder in the datasets folder: folio/v0.0, proofwriter/logic-lm,
    /// ruletaker_cwa, belief_r, clomo/data, robustlr/glore_subset].
    path: Option<PathBuf>,
    /// The datasets folder to read the format's folder from, when no PATH is given.
    #[arg(long, value_name = "DIR", conflicts_with = "path")]
    datasets: Option<PathBuf>,
    /// Skip malformed records (and report how many) instead of storing nothing.
    #[arg(long)]
    skip_bad: bool,
}

pub fn run(store: &Store, json: bool, a: Args) -> Result<()> {
    let path = match a.path {
        Some(path) => path,
        None => {
            let home = home::find(a.datasets.as_deref())?;
            let path = home.dir.join(a.format.folder());
            if !path.exists() {
                bail!(
                    "{}: no {} dataset here; the datasets folder {} is {}. \
                     `deltalogic datasets where` shows what it holds, the README's \"Before you \
                     start\" where each dataset comes from",
                    path.display(),
                    a.format.dataset(),
                    home.dir.display(),
                    home.chosen.reason()
                );
            }
            path
        }
    };
    let r = ingest::ingest(store, a.format, &path, a.skip_bad)?;
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
