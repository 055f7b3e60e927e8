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

use crate::model::block::config::Config;
use crate::model::block::transformer::{
    Blocks, Naming, RawTensor, State, TensorDesc, TensorFile, Transformer,
};
use crate::model::family::read::HfJson;
use crate::model::family::{self, Families, Family, FAMILIES};
use crate::model::format::gguf::Gguf;
use crate::model::format::hf;
use crate::model::format::quant::{self, GgmlType};
use crate::model::tokenize::Tokenizer;
use crate::model::ModelError;

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
    /// f32 weights and activations in `model::numerics::kernels`' fixed operation order: the
    /// same bits on every path, thread count and vector unit. Quantised GGUF weights stay
    /// quantised and are dequantised a tile at a time (`model::numerics::qmatmul`), which gives
    /// the same bits. The default for float weights. (Named after burn's flex backend, which ran
    /// this arithmetic before and whose reductions chose their order by shape and CPU.)
    Flex,
    /// Quantised GGUF weights (Q4_0 to Q8_0, the k-quants Q4_K, Q5_K, Q6_K, MXFP4) stay quantised,
    /// repacked, and multiply activations quantised to 8 bits as llama.cpp does
    /// (`model::numerics::qmatmul`), with the same bits on every path; float weights multiply as
    /// `Flex`. The default for GGUF files with quantised weights.
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
    /// Opens a GGUF file or a Hugging Face model directory of a built-in family.
    pub fn open(path: &Path, backend: Backend) -> Result<Scorer, ModelError> {
        Self::open_in(&FAMILIES, path, backend)
    }

    /// Opens a model of one of `families`. A Hugging Face directory's float weights run in f32
    /// in either mode, as a GGUF file's do; its MXFP4 experts (gpt-oss) are quantised, and
    /// multiply as `backend` says.
    pub fn open_in(
        families: &Families,
        path: &Path,
        backend: Backend,
    ) -> Result<Scorer, ModelError> {
        let opened = Opened::open(families, path)?;
        let integer = backend == Backend::Int8;
        let model = opened.with(|file, naming, extra| {
            Transformer::load(opened.cfg.clone(), file, naming, extra, integer)
        })?;
        vocabulary_fits(path, &opened.tokenizer, model.config())?;
        Ok(Scorer {
            model,
            tokenizer: opened.tokenizer,
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
                let label = crate::model::tokenize::plain(label);
                let full = self.tokenize(&format!(
                    "{context}{}{label}",
                    crate::model::tokenize::MARKUP_CLOSE
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

    /// Each of `states` extended by its run of `runs` in one pass, the LM head over every
    /// position, each state cut back to the tokens `keep` accepts (`Transformer::extend_each`).
    pub fn extend_each(
        &self,
        states: Vec<State>,
        runs: &[&[u32]],
        keep: &mut dyn FnMut(usize, &[f32]) -> usize,
    ) -> Result<Vec<State>, ModelError> {
        self.model.extend_each(states, runs, keep)
    }

    /// Each of `states` extended by its one of `tokens` in one pass, the weights read once for
    /// all of them (the bits of `prefill` one at a time).
    pub fn step(&self, states: &[&State], tokens: &[u32]) -> Result<Vec<State>, ModelError> {
        self.model.step(states, tokens)
    }
}

/// The config of a Hugging Face model directory, and its family.
pub fn hf_config(
    families: &Families,
    dir: &Path,
) -> Result<(Config, &'static dyn Family), ModelError> {
    let json = HfJson::read(&dir.join("config.json"))?;
    let family = families.of_hf(&json)?;
    Ok((family.config_from_hf(&json)?, family))
}

/// The config of a GGUF file, and its family.
pub fn gguf_config(
    families: &Families,
    g: &Gguf,
) -> Result<(Config, &'static dyn Family), ModelError> {
    let family = families.of_gguf(g)?;
    Ok((family.config_from_gguf(g)?, family))
}

/// A model file or directory as the transformer reads it: its config, its tokenizer and its
/// tensors through the family's view, named as the family names them, with the tensors the
/// family's config reader took (`extra`).
struct Opened {
    cfg: Config,
    tokenizer: Tokenizer,
    family: &'static dyn Family,
    source: Source,
}

enum Source {
    Gguf(Gguf),
    Hf(hf::Weights),
}

impl Opened {
    fn open(families: &Families, path: &Path) -> Result<Opened, ModelError> {
        if path.is_dir() {
            let (cfg, family) = hf_config(families, path)?;
            let tokenizer = Tokenizer::from_hf_file(path.join("tokenizer.json"))?;
            let source = Source::Hf(hf::Weights::open(path)?);
            Ok(Opened {
                cfg,
                tokenizer,
                family,
                source,
            })
        } else {
            let g = Gguf::open(path)?;
            let (cfg, family) = gguf_config(families, &g)?;
            let tokenizer = Tokenizer::from_gguf(&g)?;
            Ok(Opened {
                cfg,
                tokenizer,
                family,
                source: Source::Gguf(g),
            })
        }
    }

    /// Runs `f` over the tensors as the block reads them: the view, the naming, the extra
    /// tensors.
    fn with<R>(
        &self,
        f: impl FnOnce(&dyn TensorFile, Naming, &[&str]) -> Result<R, ModelError>,
    ) -> Result<R, ModelError> {
        match &self.source {
            Source::Gguf(g) => {
                let view = self.family.gguf_view(g, &self.cfg);
                let naming = family::gguf_naming(self.family, g);
                f(view.as_ref(), naming, self.family.gguf_extra_tensors())
            }
            Source::Hf(w) => {
                let view = self.family.hf_view(w, &self.cfg);
                f(view.as_ref(), self.family.hf_naming(), &[])
            }
        }
    }
}

/// Everything `Scorer::open` checks, without reading the weights' data: the config, every
/// tensor's presence, shape and type, no tensor left unread, the tokenizer and its vocabulary.
/// Returns the config and the tokenizer (what `model inspect` describes).
pub fn check(path: &Path) -> Result<(Config, Tokenizer), ModelError> {
    check_in(&FAMILIES, path)
}

/// [`check`] with the families of `families`.
pub fn check_in(families: &Families, path: &Path) -> Result<(Config, Tokenizer), ModelError> {
    let opened = Opened::open(families, path)?;
    opened.with(|file, naming, extra| Transformer::check(&opened.cfg, file, naming, extra))?;
    vocabulary_fits(path, &opened.tokenizer, &opened.cfg)?;
    Ok((opened.cfg, opened.tokenizer))
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
