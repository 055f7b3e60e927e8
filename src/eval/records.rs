//! The records of scoring: models, prompt texts, scores and generations.

use crate::benchmarks::Decoding;
use crate::store::{canonical, Id, Kind, Record};
use serde::Serialize;

/// The backend name of a served model's records and fingerprint (`served::BACKEND`).
pub const SERVED_BACKEND: &str = "served";

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
    const KIND: Kind = Kind {
        table: "models",
        context: "deltalogic 2026-11-21 model fingerprint v1",
        noun: "model",
    };
    fn content(&self) -> Vec<u8> {
        canonical(&(
            &self.files_blake3,
            &self.backend,
            &self.dtype,
            &self.scorer_version,
        ))
    }
    /// A served model's identity, which its fingerprint names as a local model's names its
    /// files' bytes: a cache file carries it with the model.
    fn references(&self) -> Vec<(Kind, Id)> {
        self.served_identity()
            .map(|id| (ServedRecord::KIND, id))
            .into_iter()
            .collect()
    }
}

impl ModelRecord {
    /// The id of a served model's [`ServedRecord`] (its `files_blake3`); `None` for a local
    /// model, or a served one whose identity is not a hash (which no store written by
    /// `model add --served` holds).
    pub fn served_identity(&self) -> Option<Id> {
        if self.backend != SERVED_BACKEND {
            return None;
        }
        blake3::Hash::from_hex(&self.files_blake3)
            .ok()
            .map(|h| Id(*h.as_bytes()))
    }
}

/// The identity of a served model (`model add --served`): what answers for it, never where.
/// Its id is the `files_blake3` of the served model's [`ModelRecord`], as a file's hash is for a
/// local one; the URL is that record's `path`, a location like a file's.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct ServedRecord {
    /// The id the server serves the model under, as it reports it.
    pub model_id: String,
    /// The declared revision (a Hugging Face commit, a file's sha256); empty when none was.
    pub revision: String,
    /// What the tokenizer is: `files:` + blake3 of the tokenizer files given, `tokenize:` +
    /// blake3 of the ids the server's `/tokenize` gives for a fixed text, or `unknown`.
    pub tokenizer: String,
    /// How scores and generations are asked (see `served::PROTOCOL`).
    pub protocol: String,
    /// Who renders a chat template: always deltalogic, from the tokenizer files given (the
    /// server only ever sees the rendered text).
    pub chat: String,
    /// The chat template from the tokenizer files given (covered by `tokenizer`'s hash), if any.
    pub chat_template: Option<String>,
    /// The conformance probe's outcome when the server was registered (provenance).
    pub probe: String,
    /// The environment variable holding the API key, if the server needs one (never the key).
    pub api_key_env: Option<String>,
}

impl Record for ServedRecord {
    const KIND: Kind = Kind {
        table: "served",
        context: "deltalogic 2026-11-26 served model identity v1",
        noun: "served model",
    };
    fn content(&self) -> Vec<u8> {
        canonical(&(
            &self.model_id,
            &self.revision,
            &self.tokenizer,
            &self.protocol,
            &self.chat,
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
    const KIND: Kind = Kind {
        table: "prompts",
        context: "deltalogic 2026-11-21 prompt text v1",
        noun: "prompt",
    };
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
        Id::derive(Self::KIND, &canonical(&(model.hex(), prompt.hex(), label)))
    }

    pub fn sum(&self) -> f64 {
        self.logprobs.iter().map(|&x| f64::from(x)).sum()
    }

    /// Whether two records hold the same score (timing and date may differ).
    pub fn same_score(&self, other: &ScoreRecord) -> bool {
        self.tokens == other.tokens
            && same_bits(&self.logprobs, &other.logprobs)
            && self.backend == other.backend
    }
}

impl Record for ScoreRecord {
    const KIND: Kind = Kind {
        table: "scores",
        context: "deltalogic 2026-11-21 score key v1",
        noun: "score",
    };
    fn content(&self) -> Vec<u8> {
        canonical(&(Id(self.model).hex(), Id(self.prompt).hex(), &self.label))
    }
    fn references(&self) -> Vec<(Kind, Id)> {
        vec![
            (ModelRecord::KIND, Id(self.model)),
            (PromptRecord::KIND, Id(self.prompt)),
        ]
    }
}

/// Whether two runs of log-probs are the same bits (what a recomputation must give).
pub fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
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
            Self::KIND,
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
    const KIND: Kind = Kind {
        table: "generations",
        context: "deltalogic 2026-11-23 generation key v1",
        noun: "generation",
    };
    fn content(&self) -> Vec<u8> {
        canonical(&(
            Id(self.model).hex(),
            Id(self.prompt).hex(),
            "greedy",
            &self.decoding,
        ))
    }
    fn references(&self) -> Vec<(Kind, Id)> {
        vec![
            (ModelRecord::KIND, Id(self.model)),
            (PromptRecord::KIND, Id(self.prompt)),
        ]
    }
}
