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

use super::config::{Config, HfJson};
use super::gguf::Gguf;
use super::quant::{self, GgmlType};
use super::tokenizer::Tokenizer;
use super::transformer::Naming;
use super::transformer::{Blocks, RawTensor, State, TensorDesc, TensorFile, Transformer};
use super::{gemma2, gemma3, hf, llama, phi3, qwen2, qwen3, ModelError};
// Issue 43.
use super::{mistral3, olmo2, smollm3};

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
        vocabulary_fits(path, &tokenizer, model.config())?;
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

    /// `next_logits` after each of `states`, with the LM head read once for all of them.
    pub fn next_logits_each(&self, states: &[&State]) -> Result<Vec<Vec<f32>>, ModelError> {
        self.model.next_logits_each(states)
    }

    /// Each of `states` extended by its one of `tokens` in one pass, the weights read once for
    /// all of them (the bits of `prefill` one at a time).
    pub fn step(&self, states: &[&State], tokens: &[u32]) -> Result<Vec<State>, ModelError> {
        self.model.step(states, tokens)
    }
}

/// The Hugging Face architectures understood, as `architectures[0]` names them.
pub const HF_SUPPORTED: &str = "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, \
    Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, SmolLM3ForCausalLM, \
    Olmo2ForCausalLM, Ministral3ForCausalLM";
/// The GGUF architectures understood.
pub const GGUF_SUPPORTED: &str =
    "llama, qwen2, qwen3, phi3, gemma2, gemma3, smollm3, olmo2, mistral3";

/// The config of a Hugging Face model directory.
pub fn hf_config(dir: &Path) -> Result<Config, ModelError> {
    let json = HfJson::read(&dir.join("config.json"))?;
    let arch = json
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(|a| a.as_str())
        .or_else(|| json.get("model_type").and_then(|m| m.as_str()))
        .unwrap_or("")
        .to_string();
    match arch.as_str() {
        "LlamaForCausalLM" | "llama" => llama::config_from_hf(&json),
        "Qwen2ForCausalLM" | "qwen2" => qwen2::config_from_hf(&json),
        "Qwen3ForCausalLM" | "qwen3" => qwen3::config_from_hf(&json),
        "Phi3ForCausalLM" | "phi3" => phi3::config_from_hf(&json),
        "Gemma2ForCausalLM" | "gemma2" => gemma2::config_from_hf(&json),
        "Gemma3ForCausalLM" | "gemma3_text" => gemma3::config_from_hf(&json),
        // Issue 43.
        "SmolLM3ForCausalLM" | "smollm3" => smollm3::config_from_hf(&json),
        "Olmo2ForCausalLM" | "olmo2" => olmo2::config_from_hf(&json),
        "Ministral3ForCausalLM" | "ministral3" => mistral3::config_from_hf(&json),
        mistral3::MULTIMODAL => Err(mistral3::refuse_multimodal(&json)),
        _ => Err(ModelError::UnknownArchitecture {
            path: json.path.clone(),
            arch,
            supported: HF_SUPPORTED,
        }),
    }
}

/// Runs `f` over a Hugging Face directory's weights as the transformer reads them: the file
/// wrapped as its architecture needs (phi3 fuses matrices, llama orders its q/k rows for the
/// other RoPE layout, Gemma stores its norms as offsets from 1) and the naming.
pub(crate) fn with_hf<R>(
    weights: &hf::Weights,
    cfg: &Config,
    f: impl FnOnce(&dyn TensorFile, Naming) -> Result<R, ModelError>,
) -> Result<R, ModelError> {
    match cfg.arch.as_str() {
        "phi3" => f(&phi3::Unfused::new(weights, cfg), phi3::hf_name),
        // Issue 43: smollm3 and mistral3 are converted as llama.
        "llama" | "smollm3" | "mistral3" => {
            let reordered = llama::GgufOrder {
                inner: weights,
                heads: cfg.heads,
                kv_heads: cfg.kv_heads,
            };
            f(&reordered, llama::hf_name)
        }
        "gemma2" | "gemma3" => f(&gemma2::NormsPlusOne { inner: weights }, gemma2::hf_name),
        _ => f(weights, llama::hf_name),
    }
}

fn open_hf(dir: &Path) -> Result<(Transformer, Tokenizer), ModelError> {
    let cfg = hf_config(dir)?;
    let tokenizer = Tokenizer::from_hf_file(dir.join("tokenizer.json"))?;
    let weights = hf::Weights::open(dir)?;
    let model = with_hf(&weights, &cfg, |file, naming| {
        Transformer::load(cfg.clone(), file, naming, &[], false)
    })?;
    Ok((model, tokenizer))
}

/// The config of a GGUF file.
pub fn gguf_config(g: &Gguf) -> Result<Config, ModelError> {
    match g.architecture()? {
        "llama" => llama::config_from_gguf(g),
        "qwen2" => qwen2::config_from_gguf(g),
        "qwen3" => qwen3::config_from_gguf(g),
        "phi3" => phi3::config_from_gguf(g),
        "gemma2" => gemma2::config_from_gguf(g),
        "gemma3" => gemma3::config_from_gguf(g),
        // Issue 43.
        "smollm3" => smollm3::config_from_gguf(g),
        "olmo2" => olmo2::config_from_gguf(g),
        "mistral3" => mistral3::config_from_gguf(g),
        other => Err(ModelError::UnknownArchitecture {
            path: g.path().to_path_buf(),
            arch: other.to_string(),
            supported: GGUF_SUPPORTED,
        }),
    }
}

/// Runs `f` over a GGUF file as the transformer reads it: wrapped, named, and with the tensors
/// the family's config reader took (`extra`).
fn with_gguf<R>(
    g: &Gguf,
    cfg: &Config,
    f: impl FnOnce(&dyn TensorFile, Naming, &[&str]) -> Result<R, ModelError>,
) -> Result<R, ModelError> {
    match cfg.arch.as_str() {
        "phi3" => {
            let naming: Naming = match g.tensor_info("blk.0.attn_qkv.weight") {
                Some(_) => phi3::gguf_name_fused,
                None => phi3::gguf_name_split,
            };
            f(
                &phi3::Unfused::new(g, cfg),
                naming,
                phi3::GGUF_EXTRA_TENSORS,
            )
        }
        // Issue 43: mistral3 reads Llama 3's rope_freqs.weight too.
        "llama" | "mistral3" => f(g, llama::gguf_name, llama::GGUF_EXTRA_TENSORS),
        "gemma2" | "gemma3" => f(g, gemma2::gguf_name, &[]),
        _ => f(g, llama::gguf_name, &[]),
    }
}

fn open_gguf(path: &Path, integer: bool) -> Result<(Transformer, Tokenizer), ModelError> {
    let g = Gguf::open(path)?;
    let cfg = gguf_config(&g)?;
    let tokenizer = Tokenizer::from_gguf(&g)?;
    let model = with_gguf(&g, &cfg, |file, naming, extra| {
        Transformer::load(cfg.clone(), file, naming, extra, integer)
    })?;
    Ok((model, tokenizer))
}

/// Everything `Scorer::open` checks, without reading the weights' data: the config, every
/// tensor's presence, shape and type, no tensor left unread, the tokenizer and its vocabulary.
/// Returns the config and the tokenizer (what `model inspect` describes).
pub fn check(path: &Path) -> Result<(Config, Tokenizer), ModelError> {
    let (cfg, tokenizer) = if path.is_dir() {
        let cfg = hf_config(path)?;
        let tokenizer = Tokenizer::from_hf_file(path.join("tokenizer.json"))?;
        let weights = hf::Weights::open(path)?;
        with_hf(&weights, &cfg, |file, naming| {
            Transformer::check(&cfg, file, naming, &[])
        })?;
        (cfg, tokenizer)
    } else {
        let g = Gguf::open(path)?;
        let cfg = gguf_config(&g)?;
        let tokenizer = Tokenizer::from_gguf(&g)?;
        with_gguf(&g, &cfg, |file, naming, extra| {
            Transformer::check(&cfg, file, naming, extra)
        })?;
        (cfg, tokenizer)
    };
    vocabulary_fits(path, &tokenizer, &cfg)?;
    Ok((cfg, tokenizer))
}

fn vocabulary_fits(path: &Path, tokenizer: &Tokenizer, cfg: &Config) -> Result<(), ModelError> {
    if tokenizer.vocab_size() > cfg.vocab_size {
        return Err(ModelError::Tokenizer {
            path: path.to_path_buf(),
            detail: format!(
                "{} tokens, more than the model's vocabulary of {}",
                tokenizer.vocab_size(),
                cfg.vocab_size
            ),
        });
    }
    Ok(())
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

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        let Some(info) = self.tensor_info(name) else {
            return Ok(None);
        };
        let ty = quant::type_name(info.type_id);
        if GgmlType::from_id(info.type_id).is_none() {
            return Err(ModelError::UnsupportedType {
                path: Gguf::path(self).to_path_buf(),
                tensor: name.to_string(),
                ty,
            });
        }
        Ok(Some(TensorDesc {
            shape: info.shape(),
            ty,
        }))
    }

    fn names(&self) -> Vec<String> {
        self.tensor_names().map(str::to_string).collect()
    }
}
