//! Readers for the benchmark files: each turns a file into base items, or says exactly which
//! record and field is wrong. Where the files are: `home` (the datasets folder and what each
//! dataset is) and `versions` (which version of each a folder holds).

mod belief_r;
mod clomo;
mod folio;
pub mod home;
mod proofwriter;
mod record;
mod robustlr;
mod ruletaker;
pub mod versions;

use crate::logic::{Label, World};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where an item came from: the dataset, the file (as given on the command line, made relative
/// to the ingest root) and the position inside it.
#[derive(
    Clone,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct Origin {
    /// Dataset name: `folio`, `proofwriter`, `ruletaker`, `belief-r`, `clomo`, `robustlr-glore`,
    /// `generated`.
    pub dataset: String,
    /// The file, relative to the ingested root.
    pub file: String,
    /// A human-readable position: `line 12`, `record 3, question 5`, `row 40`.
    pub position: String,
    /// The dataset's own id of the item, where it has one.
    pub external_id: String,
}

/// A formal form shipped with an item (FOLIO's FOL annotations).
#[derive(
    Clone,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct Formal {
    pub premises: Vec<String>,
    /// Absent in FOLIO train, which has no conclusion-FOL.
    pub conclusion: Option<String>,
}

/// One question over one premise set, as the dataset states it. `gold` is the dataset's own label
/// (normalised): it is never used as a gold label downstream, only compared against the solvers.
#[derive(
    Clone,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct BaseItem {
    pub origin: Origin,
    /// The semantics the dataset uses, where it has one (ProofWriter open, RuleTaker closed).
    pub world: Option<World>,
    pub premises: Vec<String>,
    pub query: String,
    pub dataset_label: Option<Label>,
    pub formal: Option<Formal>,
    /// Dataset-specific fields kept verbatim (Belief-R options and step t+1, CLoMo fields), sorted
    /// by key so the canonical encoding is stable.
    pub extra: Vec<(String, String)>,
}

/// The benchmark formats deltalogic reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Format {
    Folio,
    #[value(name = "proofwriter")]
    ProofWriter,
    #[value(name = "ruletaker")]
    RuleTaker,
    #[value(name = "belief-r")]
    BeliefR,
    Clomo,
    /// The GLoRE subset of RobustLR (Yes/No items in chat format).
    #[value(name = "robustlr-glore")]
    RobustLrGlore,
}

impl Format {
    /// The `Origin::dataset` name of the items this format yields.
    pub fn dataset(self) -> &'static str {
        match self {
            Format::Folio => "folio",
            Format::ProofWriter => "proofwriter",
            Format::RuleTaker => "ruletaker",
            Format::BeliefR => "belief-r",
            Format::Clomo => "clomo",
            Format::RobustLrGlore => "robustlr-glore",
        }
    }

    /// Where the files of this format are in the datasets folder ([`home`]): a dataset's
    /// folder, or the folder in it that holds them (CLoMo's `data`).
    pub fn folder(self) -> &'static str {
        match self {
            Format::Folio => "folio/v0.0",
            Format::ProofWriter => "proofwriter/logic-lm",
            Format::RuleTaker => "ruletaker_cwa",
            Format::BeliefR => "belief_r",
            Format::Clomo => "clomo/data",
            Format::RobustLrGlore => "robustlr/glore_subset",
        }
    }

    /// Whether a file met while walking a directory is one this format reads.
    fn reads(self, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        match self {
            Format::Folio | Format::RuleTaker | Format::RobustLrGlore => name.ends_with(".jsonl"),
            Format::ProofWriter | Format::Clomo => name.ends_with(".json"),
            Format::BeliefR => belief_r::FILES.contains(&name),
        }
    }
}

/// One malformed record: the file, where in it, which field, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {place}: {}{message}", field_prefix(.field))]
pub struct RecordError {
    pub file: String,
    /// `line 12`, `record 3`, `row 40`.
    pub place: String,
    /// The field at fault (`premises-FOL`, `questions[3].label`); empty when the record as a
    /// whole is unreadable (invalid JSON, a CSV row with the wrong number of cells).
    pub field: String,
    pub message: String,
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("field `{field}`: ")
    }
}

/// What a file yielded: the good items, and the records that could not be read. The caller
/// decides whether a file with bad records is stored at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadFile {
    pub items: Vec<BaseItem>,
    pub bad: Vec<RecordError>,
}

/// A problem with a file as a whole: nothing of it can be read as this format.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: cannot read")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not a {format} file: {why}")]
    NotThisFormat {
        file: String,
        format: &'static str,
        why: String,
    },
}

/// Reads one file (for Belief-R: the step-t/step-t+1 pair that `file` belongs to). Origins
/// name files relative to `root`, which is the file's parent when a single file is ingested.
pub fn read_file(format: Format, root: &Path, file: &Path) -> Result<ReadFile, ReadError> {
    let src = record::Source::new(format, root, file);
    match format {
        Format::Folio => folio::read(&src),
        Format::ProofWriter => proofwriter::read(&src),
        Format::RuleTaker => ruletaker::read(&src),
        Format::BeliefR => belief_r::read(&src),
        Format::Clomo => clomo::read(&src),
        Format::RobustLrGlore => robustlr::read(&src),
    }
}

/// The files to read for `path`: a file is itself; a directory is walked in file-name order,
/// keeping only the files this format reads.
pub fn files_under(format: Format, path: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let io_error = |file: &Path, source| ReadError::Io {
        file: file.display().to_string(),
        source,
    };
    if !path.metadata().map_err(|e| io_error(path, e))?.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            let file = e.path().unwrap_or(path).to_path_buf();
            io_error(&file, e.into())
        })?;
        if entry.file_type().is_file() && format.reads(entry.path()) {
            files.push(entry.into_path());
        }
    }
    if format == Format::BeliefR {
        // Either file reads the pair: one path per directory.
        let mut seen = std::collections::HashSet::new();
        files.retain(|f| seen.insert(f.parent().map(Path::to_path_buf)));
    }
    Ok(files)
}

/// The files whose bytes make up what `read_file` reads for `file` (a Belief-R pair is two).
pub fn unit_files(format: Format, file: &Path) -> Vec<PathBuf> {
    match format {
        Format::BeliefR => {
            let dir = if file.is_dir() {
                file
            } else {
                file.parent().unwrap_or(Path::new(""))
            };
            belief_r::FILES.iter().map(|f| dir.join(f)).collect()
        }
        _ => vec![file.to_path_buf()],
    }
}
