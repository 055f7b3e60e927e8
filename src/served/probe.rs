//! The conformance probe a server passes before it is registered. Servers misreport echoed
//! log-probs: llama-cpp-python's server (0.3.36) reports each prompt token's log-prob under the
//! distribution that follows it, and llama.cpp's `llama-server` refuses `echo` outright. The probe
//! asks the server for the greedy next token of a few contexts, then for the echoed log-prob of
//! that same token as the continuation of the same context: a conforming server gives the same
//! number both ways (one computation, two routes).

use super::completions::{self, Echoed};
use super::Endpoint;
use anyhow::{bail, Context, Result};
use serde::Serialize;

/// Contexts whose greedy next token is a whole word for any tokenizer of the field.
const CONTEXTS: [&str; 3] = [
    "The capital of France is",
    "If it rains, the grass gets wet. It rains. So the grass is",
    "One, two, three, four,",
];

/// What the probe measured: registered with the model.
#[derive(Clone, Debug, Serialize)]
pub struct Probed {
    pub contexts: usize,
    /// Largest |echoed log-prob − completion log-prob| over the contexts.
    pub max_abs_diff: f32,
    pub tolerance: f32,
}

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "echo agrees with completions on {} contexts: max |Δ log-prob| {:.2e} (tolerance {:.0e})",
            self.contexts, self.max_abs_diff, self.tolerance
        )
    }
}

/// Runs the probe; an error names the context and what disagreed.
pub fn run(endpoint: &Endpoint, tolerance: f32) -> Result<Probed> {
    let mut max_abs_diff = 0f32;
    for context in CONTEXTS {
        let what = || {
            format!(
                "the conformance probe of {} on {context:?}",
                endpoint.base()
            )
        };
        let (url, json) = endpoint
            .complete(completions::greedy_request(context, 1, &[]))
            .with_context(what)?;
        let next = completions::read_greedy(&url, &json, 1, &[]).with_context(what)?;
        let ([token], [completed]) = (&next.tokens[..], &next.logprobs[..]) else {
            bail!(
                "{}: the one-token completion gave {} tokens",
                what(),
                next.tokens.len()
            );
        };
        if token.is_empty() || next.text != *token {
            bail!(
                "{}: the completion's text {:?} is not its token {token:?}",
                what(),
                next.text
            );
        }
        let (url, json) = endpoint
            .complete(completions::score_request(context, token))
            .with_context(what)?;
        let Echoed { tokens, logprobs } =
            completions::read_score(&url, &json, context, token).with_context(what)?;
        if tokens != [token.clone()] {
            bail!(
                "{}: the completion's token {token:?} is echoed as the tokens {tokens:?}",
                what()
            );
        }
        let diff = (logprobs[0] - completed).abs();
        if diff.is_nan() || diff > tolerance {
            bail!(
                "{}: the server is not conforming: as a completion, {token:?} has the log-prob \
                 {completed}, but echoed after the same context it has {} (|Δ| {diff:.3e} > \
                 {tolerance:.0e}). Its echoed log-probs are not the model's; scores read from them \
                 would be wrong",
                what(),
                logprobs[0]
            );
        }
        max_abs_diff = max_abs_diff.max(diff);
    }
    Ok(Probed {
        contexts: CONTEXTS.len(),
        max_abs_diff,
        tolerance,
    })
}
