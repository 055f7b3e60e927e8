//! Files the commands write (exports, figures): never the open store (under any path or link),
//! never an existing file that is not this tool's own previous output unless forced.

use crate::store::{guard_output, record_output, Store};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` after [`guard_output`], creating its folder, and remembers it.
pub fn write(store: &Store, path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    guard_output(store, path, force)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    record_output(store, path, bytes)
}

/// A file beside the store, named after it: `store/registry.redb` gives
/// `store/registry<suffix>`, so that stores sharing a folder never share an output.
pub fn beside(store: &Store, suffix: &str) -> PathBuf {
    let path = store.path();
    let dir = path.parent().unwrap_or(Path::new("."));
    let stem = path.file_stem().unwrap_or(path.as_os_str());
    let mut name = stem.to_os_string();
    name.push(suffix);
    dir.join(name)
}

/// The report's figure, beside the store it was computed from.
pub fn figure_beside(store: &Store) -> PathBuf {
    beside(store, FIGURE)
}

/// The explorable HTML report, beside the store it was read from.
pub fn html_beside(store: &Store) -> PathBuf {
    beside(store, &format!("{REPORT}.html"))
}

/// Suffixes of the files named after the store.
pub const FIGURE: &str = ".figure.svg";
pub const REPORT: &str = ".report";
