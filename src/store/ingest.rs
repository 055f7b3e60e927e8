//! `deltalogic ingest`: dataset files into the store, all in one transaction.

use super::{Id, SourceFile, Store};
use crate::datasets::{self, Format};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Serialize)]
pub struct FileReport {
    pub path: String,
    pub source: Id,
    pub records: usize,
    pub new_items: usize,
    pub skipped: usize,
}

#[derive(Debug, Serialize)]
pub struct IngestReport {
    pub format: String,
    pub files: Vec<FileReport>,
    pub records: usize,
    pub new_items: usize,
    pub skipped: usize,
}

/// Reads every file first; stores nothing unless all of them are acceptable (with `skip_bad`,
/// malformed records are left out and counted instead).
pub fn ingest(reg: &Store, format: Format, path: &Path, skip_bad: bool) -> Result<IngestReport> {
    let root = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(Path::new(""))
    };
    let files = datasets::files_under(format, path)?;
    if files.is_empty() {
        bail!("{}: no {} files here", path.display(), format.dataset());
    }
    let mut read = Vec::new();
    for file in &files {
        let parsed = datasets::read_file(format, root, file)?;
        if !parsed.bad.is_empty() && !skip_bad {
            let shown: Vec<String> = parsed.bad.iter().take(5).map(|e| e.to_string()).collect();
            bail!(
                "{} malformed record(s); nothing was stored (use --skip-bad to store the rest):\n  {}",
                parsed.bad.len(),
                shown.join("\n  ")
            );
        }
        read.push((file, parsed, unit_hash(format, file)?));
    }
    if read.iter().all(|(_, parsed, _)| parsed.items.is_empty()) {
        let bad: usize = read.iter().map(|(_, parsed, _)| parsed.bad.len()).sum();
        bail!(
            "{}: no valid record ({bad} malformed); nothing was stored",
            path.display()
        );
    }
    reg.write(|w| {
        let mut report = IngestReport {
            format: format.dataset().to_string(),
            files: Vec::new(),
            records: 0,
            new_items: 0,
            skipped: 0,
        };
        for (file, parsed, hash) in &read {
            let mut ids = Vec::with_capacity(parsed.items.len());
            let mut new_items = 0;
            for item in &parsed.items {
                let (id, fresh) = w.put(item)?;
                ids.push(id.0);
                new_items += usize::from(fresh);
            }
            let source = SourceFile {
                format: format.dataset().to_string(),
                blake3: hash.clone(),
                path: file.display().to_string(),
                records: parsed.items.len() as u64,
                skipped: parsed.bad.len() as u64,
                items: ids,
            };
            let (sid, _) = w
                .put(&source)
                .with_context(|| format!("{}", file.display()))?;
            report.files.push(FileReport {
                path: source.path.clone(),
                source: sid,
                records: parsed.items.len(),
                new_items,
                skipped: parsed.bad.len(),
            });
            report.records += parsed.items.len();
            report.new_items += new_items;
            report.skipped += parsed.bad.len();
        }
        Ok(report)
    })
}

/// blake3 over the bytes of every file of the unit, each prefixed by its length.
fn unit_hash(format: Format, file: &Path) -> Result<String> {
    let mut h = blake3::Hasher::new();
    for f in datasets::unit_files(format, file) {
        let bytes = std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?;
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().to_hex().to_string())
}
