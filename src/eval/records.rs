//! The records of scoring: models, templates, prompt texts, scores and results.

use crate::benchmarks::Decoding;
use crate::store::{canonical, Id, Kind, Record};
use serde::Serialize;

/// A registered model. Its id is its fingerprint: the weights (for a GGUF file, the whole file,
/// which also holds the tokenizer and the architecture config; for a Hugging Face directory,
/// config.json, tokenizer files and every weight file) and the numerics that produce scores.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct ModelRecord {
    /// blake3 of the model's files (see `models::content_hash`), hex.
    pub files_blake3: String,
    pub backend: String,
    pub dtype: String,
    pub scorer_version: String,
    /// `gguf` or `hf`.
    pub format: String,
    pub architecture: String,
    /// Where it was registered from (provenance: not part of the fingerprint).
    pub path: String,
    pub bytes: u64,
}

impl Record for ModelRecord {
    const KIND: Kind = Kind::Model;
    fn content(&self) -> Vec<u8> {
        canonical(&(
            &self.files_blake3,
            &self.backend,
            &self.dtype,
            &self.scorer_version,
        ))
    }
}

/// The full text of a prompt prefix, kept once however many labels and models score it.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct PromptRecord {
    pub text: String,
}

impl Record for PromptRecord {
    const KIND: Kind = Kind::Prompt;
    fn content(&self) -> Vec<u8> {
        self.text.as_bytes().to_vec()
    }
}

/// One `(model, prompt prefix, label)` score. The key hashes the model fingerprint, the prompt
/// (through its content id, a hash of the full text) and the label text.
#[derive(Clone, Debug, PartialEq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ScoreRecord {
    pub model: [u8; 32],
    pub prompt: [u8; 32],
    pub label: String,
    pub tokens: Vec<u32>,
    /// Natural-log probability of each label token.
    pub logprobs: Vec<f32>,
    pub chars: u32,
    pub bytes: u32,
    pub backend: String,
    pub tool_version: String,
    /// Time of the label's own forward pass (the shared prefix is not included), microseconds.
    pub compute_micros: u64,
    /// Unix seconds.
    pub computed_at: u64,
}

impl ScoreRecord {
    pub fn key(model: Id, prompt: Id, label: &str) -> Id {
        Id::derive(Kind::Score, &canonical(&(model.hex(), prompt.hex(), label)))
    }

    pub fn sum(&self) -> f64 {
        self.logprobs.iter().map(|&x| f64::from(x)).sum()
    }

    /// The value a normalisation gives; every one is derived from the stored log-probs.
    pub fn normalised(&self, n: Normalisation) -> f64 {
        match n {
            Normalisation::Mean => self.sum() / self.logprobs.len().max(1) as f64,
            Normalisation::Sum => self.sum(),
            Normalisation::PerChar => self.sum() / f64::from(self.chars.max(1)),
        }
    }

    /// Whether two records hold the same score (timing and date may differ).
    pub fn same_score(&self, other: &ScoreRecord) -> bool {
        self.tokens == other.tokens
            && same_bits(&self.logprobs, &other.logprobs)
            && self.backend == other.backend
    }
}

impl Record for ScoreRecord {
    const KIND: Kind = Kind::Score;
    fn content(&self) -> Vec<u8> {
        canonical(&(Id(self.model).hex(), Id(self.prompt).hex(), &self.label))
    }
}

/// Whether two runs of log-probs are the same bits (what a recomputation must give).
pub fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// How label log-probs become one number per label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Normalisation {
    /// Mean log-prob per token (the DeltaLogic paper's default).
    Mean,
    Sum,
    /// Sum divided by the label's characters.
    PerChar,
}

impl Normalisation {
    pub fn as_str(self) -> &'static str {
        match self {
            Normalisation::Mean => "mean",
            Normalisation::Sum => "sum",
            Normalisation::PerChar => "per-char",
        }
    }
}

/// Why a generation ended.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The model chose one of its end-of-generation tokens (kept in `tokens`, not in the text).
    EndToken,
    /// The text reached one of the stop strings.
    StopString,
    MaxTokens,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndToken => "end-token",
            StopReason::StopString => "stop-string",
            StopReason::MaxTokens => "max-tokens",
        }
    }
}

/// One greedy generation after a prompt. The key hashes the model fingerprint, the prompt
/// (through its content id) and the decoding; like a score, its bits depend only on those.
#[derive(Clone, Debug, PartialEq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct GenerationRecord {
    pub model: [u8; 32],
    pub prompt: [u8; 32],
    pub decoding: Decoding,
    /// Every token chosen, the end token included.
    pub tokens: Vec<u32>,
    /// Natural-log probability of each chosen token.
    pub logprobs: Vec<f32>,
    /// The decoded text, cut just before the first stop string.
    pub text: String,
    pub stop: StopReason,
    pub backend: String,
    pub tool_version: String,
    /// Time of the decoding steps (the prompt's prefill is not included), microseconds.
    pub compute_micros: u64,
    /// Unix seconds.
    pub computed_at: u64,
}

impl GenerationRecord {
    pub fn key(model: Id, prompt: Id, decoding: &Decoding) -> Id {
        Id::derive(
            Kind::Generation,
            &canonical(&(model.hex(), prompt.hex(), "greedy", decoding)),
        )
    }

    /// Whether two records hold the same generation (timing and date may differ).
    pub fn same_generation(&self, other: &GenerationRecord) -> bool {
        self.tokens == other.tokens
            && same_bits(&self.logprobs, &other.logprobs)
            && self.text == other.text
            && self.stop == other.stop
            && self.backend == other.backend
    }
}

impl Record for GenerationRecord {
    const KIND: Kind = Kind::Generation;
    fn content(&self) -> Vec<u8> {
        canonical(&(
            Id(self.model).hex(),
            Id(self.prompt).hex(),
            "greedy",
            &self.decoding,
        ))
    }
}
