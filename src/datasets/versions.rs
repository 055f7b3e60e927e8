//! Which version of each dataset a folder holds: every file's sha256 against
//! [`home::DATASETS`](super::home::DATASETS), and the files a dataset's folder holds besides
//! them (a reader walking the folder would read those too, so they make another version).

use super::home::{Dataset, DATASETS};
use anyhow::{Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;

/// What a folder holds of one dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every file, each with its sum, and nothing else.
    Found,
    /// None of its files.
    Missing,
    /// Some of its files, or files with other bytes, or other files beside them.
    WrongVersion,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Found => "found",
            Status::Missing => "missing",
            Status::WrongVersion => "wrong version",
        }
    }
}

/// One dataset in a folder: its status, and the files that make it so (paths inside the
/// dataset's folder, sorted).
#[derive(Clone, Debug, Serialize)]
pub struct Held {
    pub folder: &'static str,
    pub status: Status,
    /// Files whose sha256 is not the manifest's.
    pub different: Vec<String>,
    /// Files of the manifest that are not there.
    pub absent: Vec<String>,
    /// Files the manifest does not list (READMEs, licences and hidden files aside).
    pub extra: Vec<String>,
}

/// What `home` holds of every dataset, in [`DATASETS`] order. A file that is there but cannot
/// be read is an error naming it.
pub fn survey(home: &Path) -> Result<Vec<Held>> {
    DATASETS.iter().map(|d| held(home, d)).collect()
}

fn held(home: &Path, d: &'static Dataset) -> Result<Held> {
    let dir = home.join(d.folder);
    let (mut different, mut absent) = (Vec::new(), Vec::new());
    for (file, sum) in d.files {
        let path = dir.join(file);
        if !path.is_file() {
            absent.push(file.to_string());
        } else if sha256(&path)? != *sum {
            different.push(file.to_string());
        }
    }
    let extra = extra_files(&dir, d)?;
    let status = if absent.len() == d.files.len() && extra.is_empty() {
        Status::Missing
    } else if absent.is_empty() && different.is_empty() && extra.is_empty() {
        Status::Found
    } else {
        Status::WrongVersion
    };
    Ok(Held {
        folder: d.folder,
        status,
        different,
        absent,
        extra,
    })
}

/// The files under `dir` that `d` does not list, but for documentation and hidden files and
/// folders (a `.git`).
fn extra_files(dir: &Path, d: &Dataset) -> Result<Vec<String>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut extra = Vec::new();
    let hidden =
        |e: &walkdir::DirEntry| e.depth() > 0 && e.file_name().to_string_lossy().starts_with('.');
    let walk = walkdir::WalkDir::new(dir).sort_by_file_name().into_iter();
    for entry in walk.filter_entry(|e| !hidden(e)) {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy();
        let documentation = name.contains("README") || name.contains("LICENSE");
        if !entry.file_type().is_file() || documentation {
            continue;
        }
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let rel = rel.to_string_lossy().into_owned();
        if !d.files.iter().any(|(f, _)| *f == rel) {
            extra.push(rel);
        }
    }
    Ok(extra)
}

fn sha256(path: &Path) -> Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(format!("{:x}", hasher.finalize()))
}
