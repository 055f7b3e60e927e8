//! `deltalogic ingest FORMAT PATH`.

use super::emit;
use crate::datasets::Format;
use crate::store::{ingest, Store};
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    format: Format,
    path: PathBuf,
    /// Skip malformed records (and report how many) instead of storing nothing.
    #[arg(long)]
    skip_bad: bool,
}

pub fn run(store: &Store, json: bool, a: Args) -> Result<()> {
    let r = ingest::ingest(store, a.format, &a.path, a.skip_bad)?;
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
