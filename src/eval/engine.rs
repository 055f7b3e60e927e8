//! What computes a model's scores and generations (our engine on its files, or a server), and a
//! record computed anew from the empty state: how an audit or a merge checks a stored one.

use super::generate;
use super::language_model::{Generation, LanguageModel, Scoring};
use super::served;
use crate::benchmarks::Decoding;
use anyhow::{bail, Result};

/// What computes a model's scores and generations: our own engine on its files, or the server
/// of a served model.
pub enum Engine<M> {
    Local(M),
    Served(served::Served),
}

impl<M: LanguageModel> Engine<M> {
    /// One label's log-probs after a prompt, computed anew: how an audit or a merge checks a
    /// stored score.
    pub fn rescore(&self, prompt: &str, label: &str) -> Result<Vec<f32>> {
        match self {
            Engine::Local(m) => rescore(m, prompt, label),
            Engine::Served(s) => Ok(s.score(prompt, label)?.logprobs),
        }
    }

    /// A generation computed anew; our engine drafts tokens and verifies them if `speculate` (a
    /// server decodes as it does).
    pub fn regenerate(
        &self,
        prompt: &str,
        decoding: &Decoding,
        speculate: bool,
    ) -> Result<generate::Generated> {
        match self {
            Engine::Local(m) => regenerate(m, prompt, decoding, speculate),
            Engine::Served(s) => s.regenerate(prompt, decoding),
        }
    }

    /// The largest |Δ log-prob| between a stored record and its recomputation that is not a
    /// difference: none for our engine, `served` for a server.
    pub fn tolerance(&self, served: f32) -> f32 {
        match self {
            Engine::Local(_) => SCORE_TOLERANCE,
            Engine::Served(_) => served,
        }
    }
}

/// Largest |difference| accepted between a stored log-prob and the same score recomputed from the
/// empty state (a merge's sample): none. The model's kernels fix every reduction order, so a
/// score's bits depend only on its prompt and label tokens, not on the prefix-tree path, the
/// thread count or the CPU's vector unit (`tests/suite/numerics.rs`).
pub const SCORE_TOLERANCE: f32 = 0.0;

/// One label's log-probs after a prompt, computed from the empty state: how an audit or a merge
/// checks a stored score.
pub fn rescore<M: Scoring>(model: &M, prompt: &str, label: &str) -> Result<Vec<f32>> {
    let (ctx, labels) = model.split_tokens(prompt, &[label.to_string()])?;
    let state = model.prefill(&model.empty_state(), &ctx)?;
    model.score_continuation(&state, &labels[0])
}

/// A generation computed from the empty state, drafting tokens and verifying them if `speculate`:
/// how an audit or a merge checks a stored one.
pub fn regenerate<M: Generation>(
    model: &M,
    prompt: &str,
    decoding: &Decoding,
    speculate: bool,
) -> Result<generate::Generated> {
    let tokens = prompt_tokens(model, prompt)?;
    let state = model.prefill(&model.empty_state(), &tokens)?;
    generate::greedy_after(model, &state, &tokens, decoding, speculate)
}

/// A generation prompt's tokens; an empty one conditions on nothing and is refused.
pub(super) fn prompt_tokens<M: Generation>(model: &M, prompt: &str) -> Result<Vec<u32>> {
    let tokens = model.tokenize(prompt)?;
    if tokens.is_empty() {
        bail!("the prompt is empty: nothing to generate from");
    }
    Ok(tokens)
}
