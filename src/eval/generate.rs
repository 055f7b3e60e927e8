//! Greedy generation from a prompt's state: at each step the most likely token (ties to the
//! lowest id), its log-probability from a log-softmax summed in one fixed order, the text
//! decoded from every token so far and checked for stop strings. The logits' bits depend only on
//! the tokens (the model's kernels fix every reduction order), so the tokens, log-probs and text
//! depend only on the model, the prompt and the decoding.

use super::records::StopReason;
use super::Generation;
use crate::benchmarks::Decoding;
use anyhow::{bail, Result};

/// What a greedy decoding produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Generated {
    pub tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
    pub text: String,
    pub stop: StopReason,
    /// Tokens run through the model (each chosen token but the last).
    pub forward_tokens: u64,
}

/// Refuses a decoding that could not end or could never stop on its strings.
pub fn check(decoding: &Decoding) -> Result<()> {
    if decoding.max_tokens == 0 {
        bail!("a generation needs max_tokens of at least 1");
    }
    if decoding.stop.iter().any(String::is_empty) {
        bail!("an empty stop string would stop every generation before its first token");
    }
    Ok(())
}

/// Decodes greedily after `state` (which holds at least one token).
pub fn greedy<M: Generation>(
    model: &M,
    state: &M::State,
    decoding: &Decoding,
) -> Result<Generated> {
    check(decoding)?;
    let ends = model.end_of_generation();
    let mut out = Generated {
        tokens: Vec::new(),
        logprobs: Vec::new(),
        text: String::new(),
        stop: StopReason::MaxTokens,
        forward_tokens: 0,
    };
    let mut next: Option<M::State> = None;
    for step in 0..decoding.max_tokens {
        let current = next.as_ref().unwrap_or(state);
        let (token, logprob) = pick(&model.next_logits(current)?)?;
        out.tokens.push(token);
        out.logprobs.push(logprob);
        if ends.binary_search(&token).is_ok() {
            out.stop = StopReason::EndToken;
            break;
        }
        out.text = model.decode(&out.tokens)?;
        if let Some(cut) = decoding.stop.iter().filter_map(|s| out.text.find(s)).min() {
            out.text.truncate(cut);
            out.stop = StopReason::StopString;
            break;
        }
        if step + 1 < decoding.max_tokens {
            next = Some(model.prefill(current, &[token])?);
            out.forward_tokens += 1;
        }
    }
    Ok(out)
}

/// The most likely token (ties to the lowest id) and its log-probability.
fn pick(logits: &[f32]) -> Result<(u32, f32)> {
    let Some(first) = logits.first() else {
        bail!("the model gave no logits");
    };
    let (mut best, mut max) = (0usize, *first);
    for (i, &x) in logits.iter().enumerate() {
        if !x.is_finite() {
            bail!("the model gave the non-finite logit {x} for token {i}");
        }
        if x > max {
            (best, max) = (i, x);
        }
    }
    let sum: f64 = logits
        .iter()
        .map(|&x| (f64::from(x) - f64::from(max)).exp())
        .sum();
    Ok((best as u32, (-sum.ln()) as f32))
}

#[cfg(test)]
mod tests {
    use super::pick;

    #[test]
    fn picks_the_lowest_id_among_ties_and_its_log_softmax() {
        let (token, lp) = pick(&[1.0, 3.0, 3.0, -2.0]).unwrap();
        assert_eq!(token, 1);
        let z: f64 = [1.0f64, 3.0, 3.0, -2.0].iter().map(|x| x.exp()).sum();
        assert!((f64::from(lp) - (3.0 - z.ln())).abs() < 1e-6);
        assert!(pick(&[0.0, f32::NAN]).is_err());
        assert!(pick(&[]).is_err());
    }
}
