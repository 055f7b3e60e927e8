//! `deltalogic report`: every benchmark's tables for the stored results, and the figure; or the
//! explorable HTML file.

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
    /// `html`: one self-contained file to open in a browser, written to `--output` (the text
    /// formats print to stdout).
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
    /// Where `--format html` writes [default: beside the store, named after it:
    /// `store/registry.report.html` for `store/registry.redb`].
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Where to write the SVG figure [default: beside the store, named after it:
    /// `store/registry.figure.svg` for `store/registry.redb`].
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Overwrite an existing figure or HTML file that is not this tool's own previous output.
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
    if a.output.is_some() && format != Format::Html {
        bail!("--output is where `--format html` writes; the other formats print to stdout");
    }
    if format == Format::Html {
        let path = a.output.unwrap_or_else(|| output::html_beside(store));
        return write_html(store, &path, &entries, a.force);
    }
    print!("{}", report::render(&entries, format)?);
    let path = a.svg.unwrap_or_else(|| output::figure_beside(store));
    write_figure(store, &path, &entries, a.force)
}

/// The explorable report of `entries` (from `store`) at `path`.
pub fn write_html(
    store: &Store,
    path: &std::path::Path,
    entries: &[report::Entry],
    force: bool,
) -> Result<()> {
    let page = report::html(store, benchmarks::ALL, entries)?;
    output::write(store, path, page.as_bytes(), force)?;
    eprintln!("HTML report written to {}", path.display());
    Ok(())
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
