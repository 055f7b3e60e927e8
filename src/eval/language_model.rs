//! The model contract: what the runner, the prefix tree and greedy generation ask of a causal
//! language model. Our engine (`model::scorer`) and the tests' stand-ins implement it; a served
//! model is asked through `served` instead (see `engine::Engine`).

use anyhow::Result;

/// What every use of a causal language model needs: states, tokens prefilled onto one, the name
/// of its numerics, and a check of its files. The prefix tree (`tree`) needs no more; it walks
/// branches on several threads at once, so a model is shared between them and its states move
/// across them.
pub trait Prefill: Sync {
    type State: Clone + Send + Sync;
    /// The backend name recorded with every score and generation.
    fn backend(&self) -> &str;
    fn empty_state(&self) -> Self::State;
    fn prefill(&self, state: &Self::State, tokens: &[u32]) -> Result<Self::State>;
    /// Checks that the files the model was loaded from are still those of its fingerprint:
    /// cheaply (their identity on disk) before every commit of its scores, and with `rehash`
    /// (their bytes hashed again) before the last. A model read from no registered file has
    /// nothing to check.
    fn check_files(&self, rehash: bool) -> Result<()> {
        let _ = rehash;
        Ok(())
    }
}

/// Constrained label scoring: each label's per-token log-probs after a context.
pub trait Scoring: Prefill {
    /// The context's tokens and each label's tokens, such that the context's tokens are a
    /// prefix of the tokens of context+label (an error otherwise, never shifted tokens).
    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)>;
    fn score_continuation(&self, state: &Self::State, tokens: &[u32]) -> Result<Vec<f32>>;
}

/// Greedy generation after a prompt.
pub trait Generation: Prefill {
    /// The tokens of a generation's prompt.
    fn tokenize(&self, text: &str) -> Result<Vec<u32>>;
    /// The logits of the token after `state` (which holds at least one token).
    fn next_logits(&self, state: &Self::State) -> Result<Vec<f32>>;
    /// `next_logits` after each of `states`: what one lockstep step of several generations asks
    /// (`generate::Lockstep`). One at a time unless the model does better; whatever it does,
    /// the bits are those of one at a time.
    fn next_logits_each(&self, states: &[&Self::State]) -> Result<Vec<Vec<f32>>> {
        states.iter().map(|s| self.next_logits(s)).collect()
    }
    /// Each of `states` extended by its one of `tokens` (the other half of a lockstep step), with
    /// the bits of `prefill` one at a time.
    fn step(&self, states: &[&Self::State], tokens: &[u32]) -> Result<Vec<Self::State>> {
        states
            .iter()
            .zip(tokens)
            .map(|(s, t)| self.prefill(s, std::slice::from_ref(t)))
            .collect()
    }
    /// The text of generated tokens.
    fn decode(&self, tokens: &[u32]) -> Result<String>;
    /// The tokens that end a generation, sorted.
    fn end_of_generation(&self) -> Vec<u32>;
}

/// A model the runner asks: a benchmark's turns may score labels or generate.
pub trait LanguageModel: Scoring + Generation {}

impl<M: Scoring + Generation> LanguageModel for M {}
