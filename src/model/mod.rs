//! Model files: GGUF reader, ggml dequantisation, tokenizers.

pub mod gguf;
pub mod gguf_write;
pub mod quant;
pub mod tokenizer;

pub mod attention;
pub mod config;
pub mod family_files;
pub mod fixtures;
pub mod gemma2;
pub mod gemma3;
pub mod hf;
pub mod hf_export;
pub mod inspect;
pub mod kernels;
pub mod llama;
pub mod mistral3;
pub mod olmo2;
pub mod phi3;
pub mod qmatmul;
pub mod qwen2;
pub mod qwen3;
mod repack;
pub mod scorer;
pub mod smollm3;
mod spm;
pub mod transformer;

use std::path::PathBuf;

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
        supported: &'static str,
    },
    #[error("{}: tokenizer: {detail}", path.display())]
    Tokenizer { path: PathBuf, detail: String },
    #[error("{}: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    /// A request the loaded model cannot serve (no file at fault).
    #[error("scoring: {0}")]
    Scoring(String),
}
