//! A deterministic stand-in language model for testing the cache and the prefix tree without
//! model weights: tokens are bytes, and a token's log-prob is a hash of everything before it.
//! It counts the tokens it is asked to run, so tests can check what was computed.

use anyhow::{bail, Result};
use deltalogic::scoring::LanguageModel;
use std::cell::Cell;

pub struct ByteModel {
    pub name: &'static str,
    pub forward_tokens: Cell<u64>,
}

impl ByteModel {
    pub fn new(name: &'static str) -> ByteModel {
        ByteModel {
            name,
            forward_tokens: Cell::new(0),
        }
    }

    fn logprob(&self, before: &[u32], token: u32) -> f32 {
        let mut h = blake3::Hasher::new();
        h.update(self.name.as_bytes());
        for t in before.iter().rev().take(16) {
            h.update(&t.to_le_bytes());
        }
        h.update(&token.to_le_bytes());
        -(f32::from(h.finalize().as_bytes()[0]) / 64.0) - 0.01
    }
}

impl LanguageModel for ByteModel {
    type State = Vec<u32>;

    fn backend(&self) -> &str {
        "test-bytes"
    }

    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)> {
        if context.is_empty() {
            bail!("empty context");
        }
        let bytes = |s: &str| s.bytes().map(u32::from).collect::<Vec<_>>();
        Ok((bytes(context), labels.iter().map(|l| bytes(l)).collect()))
    }

    fn empty_state(&self) -> Vec<u32> {
        Vec::new()
    }

    fn prefill(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<u32>> {
        self.forward_tokens
            .set(self.forward_tokens.get() + tokens.len() as u64);
        Ok(state.iter().chain(tokens).copied().collect())
    }

    fn score_continuation(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<f32>> {
        self.forward_tokens
            .set(self.forward_tokens.get() + tokens.len() as u64);
        let mut seen = state.clone();
        let mut out = Vec::new();
        for &t in tokens {
            out.push(self.logprob(&seen, t));
            seen.push(t);
        }
        Ok(out)
    }
}
