//! Files the tool writes beside the store (exports, figures, reports). A command that writes a
//! file checks it first with [`guard_output`] and remembers it with [`record_output`], so it
//! never overwrites the store it has open, nor a file it did not write itself unless forced.

use super::Store;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// Whether two paths name one file: the same device and inode (another path, a symlink or a
/// hard link to the same file). A missing path is no file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The key an output is remembered under: its canonical path (the file exists when it is
/// recorded and when it is checked).
fn key(path: &Path) -> Result<String> {
    Ok(std::fs::canonicalize(path)
        .with_context(|| format!("cannot resolve {}", path.display()))?
        .to_string_lossy()
        .into_owned())
}

/// May a command write `path`? Never when it is the open store itself (under any path or link);
/// without `force`, only when it does not exist or holds exactly the bytes this store's
/// commands last wrote there.
pub fn guard_output(store: &Store, path: &Path, force: bool) -> Result<()> {
    if same_file(store.path(), path) {
        bail!(
            "{}: is the store itself ({}); choose another output file",
            path.display(),
            store.path().display()
        );
    }
    if force || !path.exists() {
        return Ok(());
    }
    let ours = match store.output_hash(&key(path)?)? {
        Some(hash) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            *blake3::hash(&bytes).as_bytes() == hash
        }
        None => false,
    };
    if !ours {
        bail!(
            "{}: already exists and is not this tool's own previous output; choose another file \
             or pass --force to overwrite it",
            path.display()
        );
    }
    Ok(())
}

/// Remembers that `bytes` were written to `path` (call it after writing), so the next run may
/// overwrite it. Needs the store opened for writing.
pub fn record_output(store: &Store, path: &Path, bytes: &[u8]) -> Result<()> {
    let key = key(path)?;
    let hash = *blake3::hash(bytes).as_bytes();
    store.write(|w| w.record_output(&key, hash))
}
