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
pub const CONTEXTS: [&str; 3] = [
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

/// Requests the probe sends: a completion and an echo per context.
pub const REQUESTS: u64 = 2 * CONTEXTS.len() as u64;

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
        let next = endpoint.greedy(context, 1, &[]).with_context(what)?;
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
        let Echoed {
            tokens, logprobs, ..
        } = endpoint.score(context, token).with_context(what)?;
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

/// A run's answers cross-checked: the first, then one in this many.
pub const CROSS_CHECK_EVERY: u64 = 32;

/// Cross-checks one scoring answer while a run goes on, as the probe checks a server before it
/// is registered, but on the answer itself: at a position of its echoed prompt where a word
/// begins (or where the label does), chosen by `pick`, the greedy next token of the text before
/// it is asked as a one-token completion. When that is the echoed token, the two log-probs must
/// agree within `tolerance`; when it is another, its log-prob must be at least the echoed one's
/// (the greedy token is the likeliest). A server whose echo is shifted, or which forges echoed
/// log-probs after it passed the probe, fails it.
pub fn cross_check(endpoint: &Endpoint, echoed: &Echoed, pick: u64, tolerance: f32) -> Result<()> {
    let tokens = &echoed.prompt_tokens;
    let label_start = tokens.len() - echoed.tokens.len();
    // Where a word begins, the text before it is tokenized alone as it is within the prompt.
    let candidates: Vec<usize> = (1..tokens.len())
        .filter(|&k| k == label_start || tokens[k].starts_with(' '))
        .collect();
    let k = candidates[(pick % candidates.len() as u64) as usize];
    let url = endpoint.base();
    let echoed_lp = completions::logprob(url, echoed.prompt_logprobs[k], k, &tokens[k])
        .with_context(|| format!("{url}: the echoed prompt of an answer, cross-checked"))?;
    let prefix: String = tokens[..k].concat();
    let next = endpoint
        .greedy(&prefix, 1, &[])
        .with_context(|| format!("{url}: cross-checking an answer at its token {k}"))?;
    // The end token as the greedy one: its log-prob is not given, so nothing to compare.
    let ([token], [greedy_lp]) = (&next.tokens[..], &next.logprobs[..]) else {
        return Ok(());
    };
    let (same, diff) = (*token == tokens[k], (greedy_lp - echoed_lp).abs());
    let consistent = if same {
        diff <= tolerance
    } else {
        *greedy_lp >= echoed_lp - tolerance
    };
    if consistent {
        return Ok(());
    }
    let before: String = prefix
        .chars()
        .skip(prefix.chars().count().saturating_sub(40))
        .collect();
    // The server's tokens are quoted: redacted as all its words are.
    Err(endpoint.redacted(anyhow::anyhow!(
        "{url}: a scoring answer failed its cross-check: after …{before:?}, the server's greedy \
         token {token:?} has the log-prob {greedy_lp} as a completion, but its echo gives {:?} \
         the log-prob {echoed_lp} ({}; tolerance {tolerance:.0e}). Its echoed log-probs are not \
         its model's now; no more is asked. Scores this run stored before this check came from \
         the same server: check them with `deltalogic audit RESULT --verify N`",
        tokens[k],
        if same {
            format!("the same token, |Δ| {diff:.3e}")
        } else {
            "another token, more likely than the greedy one".to_string()
        },
    )))
}
