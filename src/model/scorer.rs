//! Constrained label scoring: the log-probability of each candidate continuation (label) after a
//! context, computing the context once and every label from a fork of its KV cache.
//!
//! # Label boundary rule
//! A label's tokens are the tokens of `context + label` that follow the context's own tokens, and
//! the context's tokens must be an exact prefix of them. When a BPE merge crosses the boundary
//! (say the context ends in a space and the label starts with a word) the prefix breaks and the
//! label is refused with an error, never scored with shifted tokens. Labels therefore carry their
//! leading space (`" True"`), as byte-level BPE pre-tokenizers start a word at its space.

use std::path::{Path, PathBuf};

use super::config::HfJson;
use super::gguf::Gguf;
use super::tokenizer::Tokenizer;
use super::transformer::{Blocks, RawTensor, State, TensorFile, Transformer};
use super::{hf, llama, phi3, qwen2, qwen3, ModelError};

/// The scores of one label.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LabelScore {
    pub label: String,
    pub tokens: Vec<u32>,
    /// Natural-log probability of each token given everything before it.
    pub logprobs: Vec<f32>,
}

impl LabelScore {
    pub fn sum(&self) -> f32 {
        self.logprobs.iter().sum()
    }

    pub fn mean(&self) -> f32 {
        self.sum() / self.logprobs.len() as f32
    }
}

/// The numerics a model runs with, named in its registry record and fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// f32 weights and activations in `model::kernels`' fixed operation order: the same bits on
    /// every path, thread count and vector unit. Quantised GGUF weights stay quantised and are
    /// dequantised a tile at a time (`model::qmatmul`), which gives the same bits. The default
    /// for float weights. (Named after burn's flex backend, which ran this arithmetic before and
    /// whose reductions chose their order by shape and CPU.)
    Flex,
    /// Quantised GGUF weights (Q4_0 to Q8_0 and the k-quants Q4_K, Q5_K, Q6_K) stay quantised,
    /// repacked, and multiply activations quantised to 8 bits as llama.cpp does
    /// (`model::qmatmul`), with the same bits on every path; float weights multiply as `Flex`.
    /// The default for GGUF files with quantised weights.
    Int8,
}

/// Sizes the global rayon pool the kernels run on. Once per process: later calls with
/// another count fail rather than silently keep the first.
pub fn set_threads(n: usize) -> Result<(), ModelError> {
    if rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .is_err()
        && rayon::current_num_threads() != n
    {
        return Err(ModelError::Scoring(format!(
            "the thread pool already runs {} threads, cannot switch to {n}",
            rayon::current_num_threads()
        )));
    }
    Ok(())
}

pub struct Scorer {
    model: Transformer,
    tokenizer: Tokenizer,
    path: PathBuf,
}

impl Scorer {
    /// Opens a GGUF file or a Hugging Face model directory.
    pub fn open(path: &Path, backend: Backend) -> Result<Scorer, ModelError> {
        let (model, tokenizer) = if path.is_dir() {
            open_hf(path)?
        } else {
            open_gguf(path, backend == Backend::Int8)?
        };
        if tokenizer.vocab_size() > model.config().vocab_size {
            return Err(ModelError::Tokenizer {
                path: path.to_path_buf(),
                detail: format!(
                    "{} tokens, more than the model's vocabulary of {}",
                    tokenizer.vocab_size(),
                    model.config().vocab_size
                ),
            });
        }
        Ok(Scorer {
            model,
            tokenizer,
            path: path.to_path_buf(),
        })
    }

    pub fn model(&self) -> &Transformer {
        &self.model
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A prompt's tokens: control tokens only where its template marked its own markup (see
    /// `tokenizer`'s module docs); everything else, items and generations, is plain text.
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.tokenizer.encode_prompt(text)
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The text of `tokens` (special tokens written out).
    pub fn decode(&self, tokens: &[u32]) -> Result<String, ModelError> {
        self.tokenizer.decode(tokens)
    }

    /// The tokens that end a generation.
    pub fn end_of_generation(&self) -> Vec<u32> {
        self.tokenizer.end_of_generation()
    }

    /// The context's tokens and each label's tokens under the boundary rule (module docs).
    pub fn split_tokens(
        &self,
        context: &str,
        labels: &[String],
    ) -> Result<(Vec<u32>, Vec<Vec<u32>>), ModelError> {
        let ctx = self.tokenize(context)?;
        if ctx.is_empty() {
            return Err(ModelError::Scoring(
                "the context is empty: nothing to condition on".into(),
            ));
        }
        let labels = labels
            .iter()
            .map(|label| {
                // A label is plain text: a closing mark keeps it out of any markup the context
                // leaves open, and marks in it are dropped.
                let label = super::tokenizer::plain(label);
                let full = self.tokenize(&format!(
                    "{context}{}{label}",
                    super::tokenizer::MARKUP_CLOSE
                ))?;
                match full.strip_prefix(ctx.as_slice()) {
                    Some(rest) if !rest.is_empty() => Ok(rest.to_vec()),
                    Some(_) => Err(ModelError::Scoring(format!(
                        "label {label:?} has no tokens"
                    ))),
                    None => Err(ModelError::Scoring(format!(
                        "label {label:?}: the context's tokens are not a prefix of the tokens of \
                         context+label (a token spans the boundary); start the label with its \
                         separating space instead of ending the context with it"
                    ))),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok((ctx, labels))
    }

    /// Scores each label after `context`: one pass over the context, then one short pass per
    /// label from a fork of the context's state.
    pub fn score(&self, context: &str, labels: &[String]) -> Result<Vec<LabelScore>, ModelError> {
        let (ctx, label_tokens) = self.split_tokens(context, labels)?;
        let state = self.prefill(&self.empty_state(), &ctx)?;
        labels
            .iter()
            .zip(label_tokens)
            .map(|(label, tokens)| {
                let logprobs = self.score_continuation(&state, &tokens)?;
                Ok(LabelScore {
                    label: label.clone(),
                    tokens,
                    logprobs,
                })
            })
            .collect()
    }

    /// The state before any token.
    pub fn empty_state(&self) -> State {
        self.model.empty_state()
    }

    /// `state` extended by `tokens`; `state` stays valid, so a prefix tree can branch from it.
    pub fn prefill(&self, state: &State, tokens: &[u32]) -> Result<State, ModelError> {
        self.model.prefill(state, tokens)
    }

    /// Log-probability of each of `tokens` following `state` (which must hold at least one
    /// token). Leaves `state` untouched.
    pub fn score_continuation(
        &self,
        state: &State,
        tokens: &[u32],
    ) -> Result<Vec<f32>, ModelError> {
        self.model.score_continuation(state, tokens)
    }

    /// The logits of the next token after `state` (which must hold at least one token): with
    /// `prefill` of one token, a decode step.
    pub fn next_logits(&self, state: &State) -> Result<Vec<f32>, ModelError> {
        self.model.next_logits(state)
    }
}

fn open_hf(dir: &Path) -> Result<(Transformer, Tokenizer), ModelError> {
    let json = HfJson::read(&dir.join("config.json"))?;
    let arch = json
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(|a| a.as_str())
        .or_else(|| json.get("model_type").and_then(|m| m.as_str()))
        .unwrap_or("")
        .to_string();
    let unknown = || ModelError::UnknownArchitecture {
        path: json.path.clone(),
        arch: arch.clone(),
        supported: "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM",
    };
    let cfg = match arch.as_str() {
        "LlamaForCausalLM" | "llama" => llama::config_from_hf(&json)?,
        "Qwen2ForCausalLM" | "qwen2" => qwen2::config_from_hf(&json)?,
        "Qwen3ForCausalLM" | "qwen3" => qwen3::config_from_hf(&json)?,
        "Phi3ForCausalLM" | "phi3" => phi3::config_from_hf(&json)?,
        _ => return Err(unknown()),
    };
    let tokenizer = Tokenizer::from_hf_file(dir.join("tokenizer.json"))?;
    let weights = hf::Weights::open(dir)?;
    // How each architecture's files differ from the canonical weights: phi3 fuses matrices,
    // llama orders its q/k rows for the other RoPE layout.
    let model = match cfg.arch.as_str() {
        "phi3" => {
            let unfused = phi3::Unfused::new(&weights, &cfg);
            Transformer::load(cfg, &unfused, phi3::hf_name, false)?
        }
        "llama" => {
            let reordered = llama::GgufOrder {
                inner: &weights,
                heads: cfg.heads,
                kv_heads: cfg.kv_heads,
            };
            Transformer::load(cfg, &reordered, llama::hf_name, false)?
        }
        _ => Transformer::load(cfg, &weights, llama::hf_name, false)?,
    };
    Ok((model, tokenizer))
}

fn open_gguf(path: &Path, integer: bool) -> Result<(Transformer, Tokenizer), ModelError> {
    let g = Gguf::open(path)?;
    let cfg = match g.architecture()? {
        "llama" => llama::config_from_gguf(&g)?,
        "qwen2" => qwen2::config_from_gguf(&g)?,
        "qwen3" => qwen3::config_from_gguf(&g)?,
        other => {
            return Err(ModelError::UnknownArchitecture {
                path: path.to_path_buf(),
                arch: other.to_string(),
                supported: "llama, qwen2, qwen3",
            })
        }
    };
    let tokenizer = Tokenizer::from_gguf(&g)?;
    let model = Transformer::load(cfg, &g, llama::gguf_name, integer)?;
    Ok((model, tokenizer))
}

impl TensorFile for Gguf {
    fn path(&self) -> &Path {
        Gguf::path(self)
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        if self.tensor_info(name).is_none() {
            return Ok(None);
        }
        let (shape, data) = self.tensor_f32(name)?;
        Ok(Some(RawTensor { shape, data }))
    }

    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        Ok(self.tensor_blocks(name))
    }
}
