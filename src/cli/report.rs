//! `deltalogic report`: every benchmark's tables for the stored results, and the figure.

use super::output;
use crate::benchmarks;
use crate::report::{self, Format};
use crate::store::Store;
use anyhow::{bail, Result};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only these models (names).
    #[arg(long, num_args = 1..)]
    models: Vec<String>,
    /// Only these sets (names).
    #[arg(long, num_args = 1..)]
    sets: Vec<String>,
    /// Only results under these normalisations (`all`, or names as `score --norm` takes them)
    /// [default: every stored one, side by side, with the robustness section].
    #[arg(long, num_args = 1.., value_delimiter = ',', value_parser = super::score::norm)]
    norm: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
    /// Where to write the SVG figure [default: beside the store, named after it:
    /// `store/registry.figure.svg` for `store/registry.redb`].
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Overwrite an existing figure file that is not this tool's own previous output.
    #[arg(long)]
    force: bool,
}

pub fn run(store: &Store, json: bool, a: Args) -> Result<()> {
    let mut entries = report::entries(store, benchmarks::ALL, &a.models, &a.sets)?;
    if !a.norm.is_empty() {
        let keep = crate::eval::Normalisation::parse_list(&a.norm)?;
        entries.retain(|e| keep.iter().any(|n| n.as_str() == e.normalisation));
    }
    if entries.is_empty() {
        bail!("no results to report: score a set first (`deltalogic score` or `deltalogic run`)");
    }
    let format = if json { Format::Json } else { a.format };
    print!("{}", report::render(&entries, format)?);
    let path = a.svg.unwrap_or_else(|| output::figure_beside(store));
    write_figure(store, &path, &entries, a.force)
}

pub fn write_figure(
    store: &Store,
    path: &std::path::Path,
    entries: &[report::Entry],
    force: bool,
) -> Result<()> {
    output::write(store, path, report::svg(entries).as_bytes(), force)?;
    eprintln!("figure written to {}", path.display());
    Ok(())
}
