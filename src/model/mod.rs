//! The local engine: model files in, log-probabilities and greedy tokens out, with the same bits
//! on every path, thread count and vector unit.
//!
//! - `format/`: the file formats — GGUF (`gguf`), Hugging Face directories of safetensors
//!   (`hf`), ggml's block types (`quant`), and `model export-hf` (`hf_export`);
//! - `numerics/`: the fixed-order kernels (`kernels`), the quantised products (`qmatmul`) and
//!   their repacked layout (`repack`) — one invariant: a fixed order of sums;
//! - `block/`: the one decoder block every family shares (`transformer`), its architecture-neutral
//!   `Config`, and the attention over a forkable KV cache (`attention`);
//! - `family/`: the `FAMILIES` catalogue, and one file per family saying how its files describe
//!   the block (keys, tensor names both ways, views of its tensors, refusals);
//! - `tokenize/`: byte-level BPE and SentencePiece vocabularies from GGUF metadata or
//!   tokenizer.json;
//! - `scorer` (label scoring and generation over a loaded model) and `inspect` (`model inspect`);
//! - `dev/`: writers of test files (GGUF, tiny Hugging Face checkpoints, the family files scored
//!   by llama.cpp for the goldens), used by the tests and `deltalogic dev`, never by a load.

pub mod block;
pub mod dev;
pub mod family;
pub mod format;
pub mod inspect;
pub mod numerics;
pub mod scorer;
pub mod tokenize;

use std::path::{Path, PathBuf};

/// Why a model file could not be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a GGUF file (magic {found:?}, expected \"GGUF\")", path.display())]
    BadMagic { path: PathBuf, found: [u8; 4] },
    #[error("{}: GGUF version {version} is not supported (2 or 3)", path.display())]
    Version { path: PathBuf, version: u32 },
    #[error("{}: truncated at byte {offset}: {detail}", path.display())]
    Truncated {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{}: corrupt at byte {offset}: {detail}", path.display())]
    Malformed {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{}: metadata key {key} is missing", path.display())]
    MissingKey { path: PathBuf, key: String },
    #[error("{}: metadata key {key} is {found}, expected {expected}", path.display())]
    KeyType {
        path: PathBuf,
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{}: tensor {tensor} is missing", path.display())]
    MissingTensor { path: PathBuf, tensor: String },
    #[error("{}: tensor {tensor} has unsupported type {ty}", path.display())]
    UnsupportedType {
        path: PathBuf,
        tensor: String,
        ty: String,
    },
    #[error("{}: tensor {tensor} has shape {found:?}, expected {expected:?}", path.display())]
    Shape {
        path: PathBuf,
        tensor: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    #[error("{}: unknown architecture {arch:?} (supported: {supported})", path.display())]
    UnknownArchitecture {
        path: PathBuf,
        arch: String,
        supported: String,
    },
    #[error("{}: tokenizer: {detail}", path.display())]
    Tokenizer { path: PathBuf, detail: String },
    #[error("{}: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    /// A request the loaded model cannot serve (no file at fault).
    #[error("scoring: {0}")]
    Scoring(String),
}

/// A file that is not what its family needs: `ModelError::Invalid` naming it.
pub fn invalid(path: &Path, what: impl Into<String>) -> ModelError {
    ModelError::Invalid {
        path: path.to_path_buf(),
        detail: what.into(),
    }
}
