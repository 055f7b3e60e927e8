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
    /// Bytes of `state` that a state continuing from it does not share: a recurrent layer's
    /// state, which each prefill replaces, unlike attention's keys and values, which it extends.
    /// What the prefix tree's snapshot budget counts (`tree`); none by default.
    fn snapshot_bytes(&self, state: &Self::State) -> u64 {
        let _ = state;
        0
    }
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
    /// Each of `states` extended by its run of `runs` in one pass: what one lockstep step asks
    /// (`generate::Lockstep`: per generation the token it chose last, then any drafted ones).
    /// `keep(i, logits)` gets run `i`'s logits after each of its tokens, `[len, vocab]` (an empty
    /// run: those after its state, one row), and says how many of its tokens the state returned
    /// for it holds (0 for an empty run). One token at a time unless the model does better;
    /// whatever it does, the bits are those of `prefill` one token at a time then `next_logits`.
    /// The states are handed over, so that a model may advance one no one else holds in place.
    fn extend_each(
        &self,
        states: Vec<Self::State>,
        runs: &[&[u32]],
        keep: &mut dyn FnMut(usize, &[f32]) -> usize,
    ) -> Result<Vec<Self::State>> {
        let mut out = Vec::with_capacity(states.len());
        for (i, (state, run)) in states.into_iter().zip(runs).enumerate() {
            let (mut each, mut logits) = (Vec::with_capacity(run.len()), Vec::new());
            if run.is_empty() {
                logits = self.next_logits(&state)?;
            }
            for token in run.iter() {
                let s = self.prefill(each.last().unwrap_or(&state), std::slice::from_ref(token))?;
                logits.extend(self.next_logits(&s)?);
                each.push(s);
            }
            match keep(i, &logits) {
                0 => out.push(state),
                n => out.push(each.swap_remove(n - 1)),
            }
        }
        Ok(out)
    }
    /// The text of generated tokens.
    fn decode(&self, tokens: &[u32]) -> Result<String>;
    /// The tokens that end a generation, sorted.
    fn end_of_generation(&self) -> Vec<u32>;
}

/// A model the runner asks: a benchmark's turns may score labels or generate.
pub trait LanguageModel: Scoring + Generation {}

impl<M: Scoring + Generation> LanguageModel for M {}
