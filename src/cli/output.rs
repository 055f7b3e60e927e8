//! Files the commands write (exports, figures): never the open store, never an existing file
//! unless asked.

use crate::store::Registry;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Whether two paths name the same file (through links or other spellings too).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Refuses to write `path` when it is the store, or an existing file and `force` is not given.
pub fn check(store: &Registry, path: &Path, force: bool) -> Result<()> {
    if same_file(path, store.path()) {
        bail!(
            "{}: is the store itself ({}); choose another output file",
            path.display(),
            store.path().display()
        );
    }
    if path.exists() && !force {
        bail!(
            "{}: already exists; pass --force to overwrite it",
            path.display()
        );
    }
    Ok(())
}

/// Writes `bytes` to `path` after [`check`], creating its folder.
pub fn write(store: &Registry, path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    check(store, path, force)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// The report's figure goes beside the store it was computed from.
pub fn figure_beside(store: &Registry) -> PathBuf {
    let dir = store.path().parent().unwrap_or(Path::new("."));
    dir.join("failure-modes.svg")
}
