//! Greedy generation from a prompt's state: at each step the most likely token (ties to the
//! lowest id), its log-probability from a log-softmax summed in one fixed order, the text
//! decoded from every token so far and checked for stop strings. The logits' bits depend only on
//! the tokens (the model's kernels fix every reduction order), so the tokens, log-probs and text
//! depend only on the model, the prompt and the decoding.

use super::language_model::Generation;
use super::records::StopReason;
use crate::benchmarks::Decoding;
use anyhow::{bail, Context, Result};
use std::fmt::Display;

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
    let mut alone = Lockstep::new(model);
    alone.join("the prompt", state.clone(), decoding)?;
    loop {
        if let Some((_, g)) = alone.step()?.pop() {
            return Ok(g);
        }
    }
}

/// Greedy generations stepped together. Each step runs the LM head once over every live
/// generation's last row and the blocks once over all their chosen tokens, so an engine that
/// reads its weights once per product (`Generation::step`) reads them once per step for all of
/// them: a decode step is bound by reading the weights, so several generations cost little more
/// than one. A generation's tokens, log-probs and text are those of decoding it alone (the
/// model's batched calls give the bits of one at a time); it leaves at the step it ends, and
/// another can join between any two steps.
pub struct Lockstep<'a, M: Generation, K> {
    model: &'a M,
    ends: Vec<u32>,
    live: Vec<Live<'a, M::State, K>>,
}

/// A generation under way: its caller's key, its decoding, the state after its last token and
/// what it produced so far.
struct Live<'a, S, K> {
    key: K,
    decoding: &'a Decoding,
    state: S,
    out: Generated,
}

impl<'a, M: Generation, K: Display> Lockstep<'a, M, K> {
    pub fn new(model: &'a M) -> Self {
        Lockstep {
            model,
            ends: model.end_of_generation(),
            live: Vec::new(),
        }
    }

    /// Generations under way.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Starts a generation after `state` (which holds at least one token), known as `key`.
    pub fn join(&mut self, key: K, state: M::State, decoding: &'a Decoding) -> Result<()> {
        check(decoding).with_context(|| format!("generating after {key}"))?;
        self.live.push(Live {
            key,
            decoding,
            state,
            out: Generated {
                tokens: Vec::new(),
                logprobs: Vec::new(),
                text: String::new(),
                stop: StopReason::MaxTokens,
                forward_tokens: 0,
            },
        });
        Ok(())
    }

    /// One token of every generation under way; returns those that ended with it.
    pub fn step(&mut self) -> Result<Vec<(K, Generated)>> {
        if self.live.is_empty() {
            return Ok(Vec::new());
        }
        let states: Vec<&M::State> = self.live.iter().map(|g| &g.state).collect();
        let logits = self
            .model
            .next_logits_each(&states)
            .with_context(|| self.describe())?;
        let mut ended = Vec::new();
        let mut going = Vec::with_capacity(self.live.len());
        for (mut g, logits) in std::mem::take(&mut self.live).into_iter().zip(logits) {
            let (token, logprob) =
                pick(&logits).with_context(|| format!("generating after {}", g.key))?;
            let out = &mut g.out;
            out.tokens.push(token);
            out.logprobs.push(logprob);
            if self.ends.binary_search(&token).is_ok() {
                out.stop = StopReason::EndToken;
                ended.push((g.key, g.out));
                continue;
            }
            out.text = self
                .model
                .decode(&out.tokens)
                .with_context(|| format!("generating after {}", g.key))?;
            if let Some(cut) = g
                .decoding
                .stop
                .iter()
                .filter_map(|s| out.text.find(s))
                .min()
            {
                out.text.truncate(cut);
                out.stop = StopReason::StopString;
                ended.push((g.key, g.out));
            } else if out.tokens.len() >= g.decoding.max_tokens as usize {
                ended.push((g.key, g.out));
            } else {
                going.push(g);
            }
        }
        if !going.is_empty() {
            let states: Vec<&M::State> = going.iter().map(|g| &g.state).collect();
            let tokens: Vec<u32> = going
                .iter()
                .map(|g| g.out.tokens[g.out.tokens.len() - 1])
                .collect();
            let next = self.model.step(&states, &tokens);
            self.live = going;
            let next = next.with_context(|| self.describe())?;
            for (g, state) in self.live.iter_mut().zip(next) {
                g.state = state;
                g.out.forward_tokens += 1;
            }
        }
        Ok(ended)
    }

    fn describe(&self) -> String {
        let keys: Vec<String> = self.live.iter().map(|g| g.key.to_string()).collect();
        format!("generating after {}", keys.join(", "))
    }
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
    use super::*;
    use crate::eval::Prefill;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A model over 8 tokens whose state is the tokens seen; token 0 ends a generation, token t
    /// reads as the letter `a + t`. It counts its batched calls and the states in them.
    #[derive(Default)]
    struct Letters {
        calls: AtomicUsize,
        rows: AtomicUsize,
    }

    impl Letters {
        fn logits(state: &[u32]) -> Vec<f32> {
            let h = state
                .iter()
                .fold(17u64, |h, &t| h.wrapping_mul(31).wrapping_add(u64::from(t)));
            (0..8u64).map(|t| ((h + 5 * t) % 13) as f32 / 3.0).collect()
        }
    }

    impl Prefill for Letters {
        type State = Vec<u32>;
        fn backend(&self) -> &str {
            "letters"
        }
        fn empty_state(&self) -> Vec<u32> {
            Vec::new()
        }
        fn prefill(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<u32>> {
            Ok([state.as_slice(), tokens].concat())
        }
    }

    impl Generation for Letters {
        fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
            Ok(text.bytes().map(|b| u32::from(b - b'a')).collect())
        }
        fn next_logits(&self, state: &Vec<u32>) -> Result<Vec<f32>> {
            Ok(Self::logits(state))
        }
        fn next_logits_each(&self, states: &[&Vec<u32>]) -> Result<Vec<Vec<f32>>> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.rows.fetch_add(states.len(), Ordering::Relaxed);
            Ok(states.iter().map(|s| Self::logits(s)).collect())
        }
        fn decode(&self, tokens: &[u32]) -> Result<String> {
            Ok(tokens.iter().map(|&t| char::from(b'a' + t as u8)).collect())
        }
        fn end_of_generation(&self) -> Vec<u32> {
            vec![0]
        }
    }

    /// Greedy decoding written out plainly, one generation at a time.
    fn plainly(model: &Letters, prompt: &[u32], decoding: &Decoding) -> Generated {
        let mut seen = prompt.to_vec();
        let (mut tokens, mut logprobs) = (Vec::new(), Vec::new());
        let mut stop = StopReason::MaxTokens;
        let mut text = String::new();
        while tokens.len() < decoding.max_tokens as usize {
            let (t, lp) = pick(&Letters::logits(&seen)).unwrap();
            tokens.push(t);
            logprobs.push(lp);
            if t == 0 {
                stop = StopReason::EndToken;
                break;
            }
            text = model.decode(&tokens).unwrap();
            if let Some(cut) = decoding.stop.iter().filter_map(|s| text.find(s)).min() {
                text.truncate(cut);
                stop = StopReason::StopString;
                break;
            }
            seen.push(t);
        }
        let forward_tokens = (tokens.len() - 1) as u64;
        Generated {
            tokens,
            logprobs,
            text,
            stop,
            forward_tokens,
        }
    }

    #[test]
    fn generations_stepped_together_equal_each_alone_and_share_each_step() {
        let model = Letters::default();
        let decodings = [
            Decoding {
                max_tokens: 40,
                stop: Vec::new(),
            },
            Decoding {
                max_tokens: 40,
                stop: vec!["c".into(), "fg".into()],
            },
            Decoding {
                max_tokens: 3,
                stop: Vec::new(),
            },
        ];
        let prompts: Vec<Vec<u32>> = (0..12u32).map(|i| vec![i % 8, (i * 3) % 8, 1]).collect();
        let mut lockstep = Lockstep::new(&model);
        let mut ended = Vec::new();
        let mut steps = 0;
        for (i, p) in prompts.iter().enumerate() {
            // Joining between steps, the way the runner adds prompts as the tree reaches them.
            lockstep.join(i, p.clone(), &decodings[i % 3]).unwrap();
            if i % 2 == 1 {
                ended.extend(lockstep.step().unwrap());
                steps += 1;
            }
        }
        while !lockstep.is_empty() {
            ended.extend(lockstep.step().unwrap());
            steps += 1;
        }
        assert_eq!(ended.len(), prompts.len());
        let mut stops = std::collections::BTreeSet::new();
        for (i, g) in &ended {
            assert_eq!(
                g,
                &plainly(&model, &prompts[*i], &decodings[i % 3]),
                "prompt {i}"
            );
            stops.insert(format!("{:?}", g.stop));
        }
        assert_eq!(stops.len(), 3, "every way to end is covered: {stops:?}");
        // One batched call per step, each over every generation then under way.
        assert_eq!(model.calls.load(Ordering::Relaxed), steps);
        let tokens: usize = ended.iter().map(|(_, g)| g.tokens.len()).sum();
        assert_eq!(model.rows.load(Ordering::Relaxed), tokens);
        assert!(lockstep.step().unwrap().is_empty());
    }

    #[test]
    fn a_decoding_that_cannot_end_is_refused_when_it_joins() {
        let model = Letters::default();
        let mut lockstep = Lockstep::new(&model);
        let never = Decoding {
            max_tokens: 0,
            stop: Vec::new(),
        };
        let e = lockstep.join("prompt 1f", vec![1], &never).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "generating after prompt 1f: a generation needs max_tokens of at least 1"
        );
        assert!(lockstep.is_empty());
    }

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
