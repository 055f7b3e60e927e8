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

/// Whether generations draft tokens and verify them (speculative decoding) where no compute flag
/// says otherwise: in the commands that recompute a stored generation to check it (audit, cache
/// checks, export). Speculation changes how fast a generation comes, never its bits; commands that
/// run the engine take `--no-speculate` (`cli::Compute`) and pass it down as a value.
pub const SPECULATE_BY_DEFAULT: bool = true;

/// Drafted tokens a generation proposes in one pass, at most: with its chosen token a run of
/// 9, short of the 16 positions where the KV cache turns to the block layout
/// (`Transformer::extend_each`).
pub const MAX_DRAFT: usize = 8;

/// Drafted tokens in one pass of the lockstep, over all its generations. A pass over a few rows
/// costs about what one row does (it reads the weights once), but 16 rows already make a pass
/// about 4× one row's time (`compute::LOCKSTEP`'s figures): drafts then cost compute, so a full
/// lockstep drafts little.
pub const PASS_DRAFTS: usize = 16;

/// Decodes greedily after `state` (which holds at least one token), drafting tokens and
/// verifying them if `speculate`.
pub fn greedy<M: Generation>(
    model: &M,
    state: &M::State,
    decoding: &Decoding,
    speculate: bool,
) -> Result<Generated> {
    greedy_after(model, state, &[], decoding, speculate)
}

/// Decodes greedily after `state`, which holds `prompt`'s tokens (or ends with them): drafts
/// (if `speculate`) are looked up in them as well as in the generated text.
pub fn greedy_after<M: Generation>(
    model: &M,
    state: &M::State,
    prompt: &[u32],
    decoding: &Decoding,
    speculate: bool,
) -> Result<Generated> {
    let mut alone = Lockstep::new(model, speculate);
    alone.join_after("the prompt", state.clone(), prompt, decoding)?;
    loop {
        if let Some((_, g)) = alone.step()?.pop() {
            return Ok(g);
        }
    }
}

/// Greedy generations stepped together. Each step runs the blocks once over every live
/// generation's tokens and the LM head once over all their rows (`Generation::extend_each`), so
/// an engine that reads its weights once per product reads them once per step for all of them: a
/// decode step is bound by reading the weights, so several generations cost little more than one.
/// A generation's tokens, log-probs and text are those of decoding it alone (the model's batched
/// calls give the bits of one at a time); it leaves at the step it ends, and another can join
/// between any two steps.
///
/// Speculative decoding (if the lockstep is made with `speculate`): a generation's run in a step is the
/// token it chose last, then up to `MAX_DRAFT` tokens drafted by looking its last few tokens up in
/// its prompt and its text so far (`Drafter`). The logits after each position are those decoding
/// one token at a time would compute, so each drafted token that equals the argmax before it is
/// the token plain decoding chooses there: it is taken, with its log-prob from those logits, and
/// the first that differs is replaced by the model's own choice. The state keeps the accepted
/// positions only. Each taken token goes through the same end, stop-string and length checks as
/// in plain decoding, one at a time, so a generation ends at the same token and text; tokens
/// verified past its end are dropped.
pub struct Lockstep<'a, M: Generation, K> {
    model: &'a M,
    ends: Vec<u32>,
    speculate: bool,
    drafts: Drafts,
    live: Vec<Live<'a, M::State, K>>,
}

/// What speculative decoding did over a lockstep's steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drafts {
    /// Passes of the model (steps with a generation under way).
    pub passes: u64,
    /// Tokens chosen, all generations together.
    pub tokens: u64,
    /// Tokens drafted, and those of them accepted.
    pub drafted: u64,
    pub accepted: u64,
}

/// A generation under way: the state after the tokens run so far, and the rest.
struct Live<'a, S, K> {
    state: S,
    going: Going<'a, K>,
}

/// A generation's bookkeeping: its caller's key, its decoding, the prompt's tokens then the
/// generated ones (where drafts are looked up), its drafter and what it produced so far. The last
/// generated token is chosen but not yet run through the model.
struct Going<'a, K> {
    key: K,
    decoding: &'a Decoding,
    context: Vec<u32>,
    drafter: Drafter,
    out: Generated,
    ended: bool,
}

impl<'a, M: Generation, K: Display> Lockstep<'a, M, K> {
    /// A lockstep whose generations draft tokens and verify them if `speculate` (the command
    /// line's `--no-speculate` turns it off), or decode one token a pass.
    pub fn new(model: &'a M, speculate: bool) -> Self {
        Lockstep {
            model,
            ends: model.end_of_generation(),
            speculate,
            drafts: Drafts::default(),
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

    /// What speculation did so far.
    pub fn drafts(&self) -> Drafts {
        self.drafts
    }

    /// Starts a generation after `state` (which holds at least one token), known as `key`;
    /// drafts come from its generated text only.
    pub fn join(&mut self, key: K, state: M::State, decoding: &'a Decoding) -> Result<()> {
        self.join_after(key, state, &[], decoding)
    }

    /// Starts a generation after `state`, which holds `prompt`'s tokens (or ends with them);
    /// drafts come from them and from the generated text.
    pub fn join_after(
        &mut self,
        key: K,
        state: M::State,
        prompt: &[u32],
        decoding: &'a Decoding,
    ) -> Result<()> {
        check(decoding).with_context(|| format!("generating after {key}"))?;
        self.live.push(Live {
            state,
            going: Going {
                key,
                decoding,
                context: prompt.to_vec(),
                drafter: Drafter::default(),
                out: Generated {
                    tokens: Vec::new(),
                    logprobs: Vec::new(),
                    text: String::new(),
                    stop: StopReason::MaxTokens,
                    forward_tokens: 0,
                },
                ended: false,
            },
        });
        Ok(())
    }

    /// One pass of the model over every generation under way: each takes at least one token,
    /// more when its drafted ones are accepted. Returns those that ended.
    pub fn step(&mut self) -> Result<Vec<(K, Generated)>> {
        if self.live.is_empty() {
            return Ok(Vec::new());
        }
        // Each generation's run: the token it chose last (none before its first), then its draft.
        let mut budget = if self.speculate { PASS_DRAFTS } else { 0 };
        let runs: Vec<Vec<u32>> = self
            .live
            .iter_mut()
            .map(|g| {
                let g = &mut g.going;
                let Some(&last) = g.out.tokens.last() else {
                    return Vec::new();
                };
                // A pass takes at most the draft and one token more.
                let left = g.decoding.max_tokens as usize - g.out.tokens.len();
                let room = MAX_DRAFT.min(budget).min(left - 1);
                let mut run = vec![last];
                run.extend(g.drafter.draft(&g.context, room));
                budget -= run.len() - 1;
                run
            })
            .collect();
        // The states are handed to the model (which may advance one no one else holds in
        // place) and come back extended.
        let (states, mut goings): (Vec<M::State>, Vec<Going<K>>) = std::mem::take(&mut self.live)
            .into_iter()
            .map(|g| (g.state, g.going))
            .unzip();
        let refs: Vec<&[u32]> = runs.iter().map(Vec::as_slice).collect();
        let (model, ends) = (self.model, &self.ends);
        let generations = goings.len();
        let mut failed = None;
        let mut keep = |i: usize, logits: &[f32]| -> usize {
            let run = refs[i];
            match goings[i].take(model, ends, run, logits, generations) {
                Ok(n) => n,
                Err(e) => {
                    failed.get_or_insert(e);
                    run.len()
                }
            }
        };
        let next = model.extend_each(states, &refs, &mut keep);
        if let Some(e) = failed {
            return Err(e);
        }
        let next = next.with_context(|| describe(&goings))?;
        self.drafts.passes += 1;
        let mut ended = Vec::new();
        for ((going, state), run) in goings.into_iter().zip(next).zip(&runs) {
            self.drafts.drafted += run.len().saturating_sub(1) as u64;
            self.drafts.accepted += going.drafter.last_accepted as u64;
            if going.ended {
                let mut out = going.out;
                // As plain decoding counts: every chosen token but the last was run.
                out.forward_tokens = out.tokens.len() as u64 - 1;
                self.drafts.tokens += out.tokens.len() as u64;
                ended.push((going.key, out));
            } else {
                self.live.push(Live { state, going });
            }
        }
        Ok(ended)
    }
}

/// What a failed step names: the generations under way.
fn describe<K: Display>(goings: &[Going<K>]) -> String {
    let keys: Vec<String> = goings.iter().map(|g| g.key.to_string()).collect();
    format!("generating after {}", keys.join(", "))
}

impl<K: Display> Going<'_, K> {
    /// Takes the tokens the logits after `run` choose (`run`: the token chosen last, then the
    /// draft) in a pass of `generations`; returns how many of `run`'s tokens the state keeps.
    fn take<M: Generation>(
        &mut self,
        model: &M,
        ends: &[u32],
        run: &[u32],
        logits: &[f32],
        generations: usize,
    ) -> Result<usize> {
        let rows = run.len().max(1);
        let vocab = logits.len() / rows;
        let (mut accepted, mut used) = (0, 0);
        for (j, row) in logits.chunks_exact(vocab).enumerate() {
            let (token, logprob) =
                pick(row).with_context(|| format!("generating after {}", self.key))?;
            self.push(model, ends, token, logprob)
                .with_context(|| format!("generating after {}", self.key))?;
            used = j + 1;
            // Row `j` follows `run[..=j]`: the draft for the token it chooses is `run[j + 1]`.
            let matched = run.get(j + 1) == Some(&token);
            accepted += usize::from(matched);
            if self.ended || !matched {
                break;
            }
        }
        self.drafter
            .update(run.len().saturating_sub(1), accepted, generations);
        // The state keeps the run's tokens up to the last row used (none of an empty run).
        Ok(used.min(run.len()))
    }

    /// Takes one token as plain decoding does: its end, stop-string and length checks.
    fn push<M: Generation>(
        &mut self,
        model: &M,
        ends: &[u32],
        token: u32,
        logprob: f32,
    ) -> Result<()> {
        let out = &mut self.out;
        out.tokens.push(token);
        out.logprobs.push(logprob);
        self.context.push(token);
        if ends.binary_search(&token).is_ok() {
            out.stop = StopReason::EndToken;
            self.ended = true;
            return Ok(());
        }
        out.text = model.decode(&out.tokens)?;
        if let Some(cut) = self
            .decoding
            .stop
            .iter()
            .filter_map(|s| out.text.find(s))
            .min()
        {
            out.text.truncate(cut);
            out.stop = StopReason::StopString;
            self.ended = true;
        } else if out.tokens.len() >= self.decoding.max_tokens as usize {
            self.ended = true;
        }
        Ok(())
    }
}

/// Prompt-lookup drafting: the tokens that followed the latest earlier occurrence of the last
/// `n` tokens of the context (`n` from 3 down to 1). What these models write is often copied from
/// their prompt (a rewritten argument, a calculation carried on), so a draft is often right. It
/// backs off when its drafts miss: a rejected draft costs a pass more rows, so its drafts start
/// at [`FIRST_WINDOW`] tokens, double after a pass that took them all (up to [`MAX_DRAFT`]) and
/// shrink to what was taken plus one after a pass that missed; and after two passes in a row
/// whose drafts all missed, or a pass after which its recent drafts no longer pay in a pass of
/// as many generations as this one ([`PASS_ROWS`]), it rests for a number of passes that
/// doubles with each such rest (up to 64) and resets when an accepted draft pays.
struct Drafter {
    /// Passes in a row whose drafts were all rejected.
    misses: u32,
    /// Drafted tokens, and those accepted, each pass's weighing [`DECAY`] times the one before.
    seen: f32,
    taken: f32,
    /// Passes left before drafting again, and the next rest's length.
    resting: u32,
    rest: u32,
    /// Drafted tokens accepted in the last pass.
    last_accepted: usize,
    /// The most tokens the next draft holds.
    window: usize,
}

/// The first drafts' length: a generation that copies little from its prompt (a calculation
/// carried on) pays at most this many rejected rows a pass before the window shrinks.
const FIRST_WINDOW: usize = 2;

impl Default for Drafter {
    fn default() -> Drafter {
        Drafter {
            misses: 0,
            seen: 0.0,
            taken: 0.0,
            resting: 0,
            rest: 0,
            last_accepted: 0,
            window: FIRST_WINDOW,
        }
    }
}

/// The longest n-gram looked up.
const NGRAM: usize = 3;

/// What a pass costs beyond its rows, in rows: a pass of `n` rows takes about the time of
/// `PASS_ROWS + n` rows, so a drafted row pays, in a pass of `n` generations, when drafts are
/// accepted at a rate of at least `n / (n + PASS_ROWS)` (one token more for `n + PASS_ROWS`
/// rows' time against `n` tokens for that time). Measured on 2 cores: SmolLM2 Q4_1 prefilled
/// 880 tok/s and decoded 300–390 alone, a fixed cost of 1.3–1.9 rows; Qwen2.5-Coder-1.5B
/// decoded 41 tok/s alone and 172 in all with 16 together, about 4 rows (`compute::LOCKSTEP`).
/// The small model's figure: on larger ones it drafts a little less than would pay.
const PASS_ROWS: usize = 2;

/// The weight of a pass's drafts against the next one's in a drafter's acceptance: recent
/// passes count, as a generation turns from copying its prompt to writing its own text.
const DECAY: f32 = 0.5;

impl Drafter {
    /// Up to `room` drafted tokens after `context`.
    fn draft(&mut self, context: &[u32], room: usize) -> Vec<u32> {
        self.last_accepted = 0;
        if self.resting > 0 {
            self.resting -= 1;
            return Vec::new();
        }
        let room = room.min(self.window);
        if room == 0 {
            return Vec::new();
        }
        let len = context.len();
        for n in (1..=NGRAM.min(len.saturating_sub(1))).rev() {
            let tail = &context[len - n..];
            // The latest occurrence before the tail itself.
            if let Some(at) = (0..len - n).rev().find(|&i| &context[i..i + n] == tail) {
                let from = at + n;
                return context[from..len.min(from + room)].to_vec();
            }
        }
        Vec::new()
    }

    /// A pass's outcome: `accepted` of `drafted` tokens taken, in a pass of `generations`.
    fn update(&mut self, drafted: usize, accepted: usize, generations: usize) {
        self.last_accepted = accepted;
        if drafted == 0 {
            return;
        }
        self.window = match accepted == drafted {
            true => (2 * self.window).min(MAX_DRAFT),
            false => accepted + 1,
        };
        self.seen = self.seen * DECAY + drafted as f32;
        self.taken = self.taken * DECAY + accepted as f32;
        let pays = self.taken * (generations + PASS_ROWS) as f32 >= self.seen * generations as f32;
        match accepted {
            0 => self.misses += 1,
            _ => self.misses = 0,
        }
        if pays && accepted > 0 {
            self.rest = 0;
            return;
        }
        if !pays || self.misses >= 2 {
            self.rest = (self.rest * 2).clamp(4, 64);
            self.resting = self.rest;
            self.misses = 0;
        }
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
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A model over 8 tokens whose state is the tokens seen; token 0 ends a generation, token t
    /// reads as the letter `a + t`. Its logits hash the last `memory` tokens seen: a short memory
    /// makes its text repeat, so drafts are accepted. It counts its batched calls and their rows.
    struct Letters {
        memory: usize,
        calls: AtomicUsize,
        rows: AtomicUsize,
    }

    impl Letters {
        fn new(memory: usize) -> Letters {
            Letters {
                memory,
                calls: AtomicUsize::new(0),
                rows: AtomicUsize::new(0),
            }
        }

        fn logits(&self, state: &[u32]) -> Vec<f32> {
            let h = state[state.len().saturating_sub(self.memory)..]
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
            Ok(self.logits(state))
        }
        fn extend_each(
            &self,
            states: Vec<Vec<u32>>,
            runs: &[&[u32]],
            keep: &mut dyn FnMut(usize, &[f32]) -> usize,
        ) -> Result<Vec<Vec<u32>>> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let mut out = Vec::new();
            for (i, (state, run)) in states.into_iter().zip(runs).enumerate() {
                let mut logits = Vec::new();
                let mut seen = state.clone();
                if run.is_empty() {
                    logits.extend(self.logits(&seen));
                }
                for &t in run.iter() {
                    seen.push(t);
                    logits.extend(self.logits(&seen));
                }
                self.rows.fetch_add(logits.len() / 8, Ordering::Relaxed);
                let n = keep(i, &logits);
                out.push([state.as_slice(), &run[..n]].concat());
            }
            Ok(out)
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
            let (t, lp) = pick(&model.logits(&seen)).unwrap();
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

    /// Twelve generations joining a lockstep two by two between steps, the way the runner adds
    /// prompts as the tree reaches them, run to their ends: each one's output, the steps taken
    /// and what speculation did.
    fn lockstep(model: &Letters, speculate: bool) -> (Vec<(usize, Generated)>, usize, Drafts) {
        let decodings = decodings();
        let mut lockstep = Lockstep::new(model, speculate);
        let mut ended = Vec::new();
        let mut steps = 0;
        for (i, p) in prompts().iter().enumerate() {
            lockstep
                .join_after(i, p.clone(), p, &decodings[i % 3])
                .unwrap();
            if i % 2 == 1 {
                ended.extend(lockstep.step().unwrap());
                steps += 1;
            }
        }
        while !lockstep.is_empty() {
            ended.extend(lockstep.step().unwrap());
            steps += 1;
        }
        assert!(lockstep.step().unwrap().is_empty());
        (ended, steps, lockstep.drafts())
    }

    fn decodings() -> [Decoding; 3] {
        [
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
        ]
    }

    fn prompts() -> Vec<Vec<u32>> {
        (0..12u32).map(|i| vec![i % 8, (i * 3) % 8, 1]).collect()
    }

    /// Each of `ended` is what plain decoding alone gives; returns the ways they ended.
    fn each_as_alone(model: &Letters, ended: &[(usize, Generated)]) -> BTreeSet<String> {
        assert_eq!(ended.len(), prompts().len());
        let mut stops = BTreeSet::new();
        for (i, g) in ended {
            assert_eq!(
                g,
                &plainly(model, &prompts()[*i], &decodings()[i % 3]),
                "prompt {i}"
            );
            stops.insert(format!("{:?}", g.stop));
        }
        stops
    }

    #[test]
    fn generations_stepped_together_equal_each_alone_and_share_each_step() {
        let model = Letters::new(usize::MAX);
        let (ended, steps, drafts) = lockstep(&model, false);
        let stops = each_as_alone(&model, &ended);
        assert_eq!(stops.len(), 3, "every way to end is covered: {stops:?}");
        // One batched call per step, each with one row per generation then under way.
        assert_eq!(model.calls.load(Ordering::Relaxed), steps);
        let tokens: usize = ended.iter().map(|(_, g)| g.tokens.len()).sum();
        assert_eq!(model.rows.load(Ordering::Relaxed), tokens);
        assert_eq!(drafts.drafted, 0);
        assert_eq!(drafts.tokens, tokens as u64);
    }

    #[test]
    fn speculation_takes_several_tokens_a_step_with_the_bits_of_plain_decoding() {
        let mut stops = BTreeSet::new();
        for memory in [1, 2, 3, 5, usize::MAX] {
            let model = Letters::new(memory);
            let (ended, steps, drafts) = lockstep(&model, true);
            stops.extend(each_as_alone(&model, &ended));
            assert_eq!(model.calls.load(Ordering::Relaxed), steps);
            let plain = Letters::new(memory);
            let (_, plain_steps, _) = lockstep(&plain, false);
            assert!(drafts.accepted <= drafts.drafted);
            if memory == 2 {
                // A short memory repeats its text: drafts are taken and steps saved.
                assert!(drafts.accepted > 0, "memory {memory}: {drafts:?}");
                assert!(
                    steps < plain_steps,
                    "memory {memory}: {steps} vs {plain_steps}"
                );
            }
            assert!(
                steps <= plain_steps,
                "memory {memory}: {steps} vs {plain_steps}"
            );
        }
        assert_eq!(stops.len(), 3, "every way to end is covered: {stops:?}");
    }

    #[test]
    fn drafts_are_what_followed_the_latest_match_of_the_longest_tail() {
        let mut d = Drafter::default();
        // The tail "7 2 3" comes nowhere before; "2 3" last came before "5 7 2 3".
        let context = [1, 2, 3, 4, 9, 2, 3, 5, 7, 2, 3];
        // The first drafts are short; a pass that takes them all doubles the window.
        assert_eq!(d.draft(&context, 8), vec![5, 7]);
        d.update(2, 2, 1);
        assert_eq!(d.draft(&context, 8), vec![5, 7, 2, 3]);
        assert_eq!(d.draft(&context, 2), vec![5, 7]);
        // One that misses shrinks it to what was taken plus one.
        d.update(4, 1, 1);
        assert_eq!(d.draft(&context, 8), vec![5, 7]);
        d.update(2, 2, 1);
        d.update(4, 4, 1);
        assert_eq!(d.draft(&[1, 2, 3, 1, 2], 8), vec![3, 1, 2]);
        assert_eq!(d.draft(&[4, 5, 6], 8), Vec::<u32>::new());
        // Two passes whose drafts all missed: it rests, then drafts again.
        d.update(3, 0, 1);
        d.update(3, 0, 1);
        let rest = (0..100)
            .take_while(|_| d.draft(&context, 8).is_empty())
            .count();
        assert_eq!(rest, 4);
    }

    #[test]
    fn a_drafter_taking_half_its_drafts_drafts_on_alone_and_rests_in_a_full_lockstep() {
        let context = [1, 2, 3, 4, 1, 2, 3];
        for (rows, rests) in [(1, false), (16, true)] {
            let mut d = Drafter::default();
            let mut rested = false;
            for _ in 0..8 {
                let draft = d.draft(&context, 8);
                rested |= draft.is_empty();
                if !draft.is_empty() {
                    assert_eq!(draft, vec![4, 1]);
                    d.update(2, 1, rows);
                }
            }
            assert_eq!(rested, rests, "{rows} generations a pass");
        }
    }

    #[test]
    fn a_decoding_that_cannot_end_is_refused_when_it_joins() {
        let model = Letters::new(usize::MAX);
        let mut lockstep = Lockstep::new(&model, true);
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
