//! Runs jobs as a prefix tree: jobs sorted by their context tokens, a stack of KV states along
//! the current path, and every shared prefix computed once. At each job's context the caller's
//! work runs from the context's state (scoring label continuations, or greedy generation). The forward tokens
//! computed equal the distinct tokens of the tree (its lower bound) unless the bound on kept
//! states forces a recomputation.

use super::LanguageModel;
use anyhow::Result;
use serde::Serialize;

/// States kept at once along the current path; each holds a KV cache, so this bounds memory.
pub const MAX_KEPT_STATES: usize = 16;

/// One context and the caller's tags of the work to run after it.
pub struct Job {
    pub context: Vec<u32>,
    pub tags: Vec<usize>,
}

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct TreeStats {
    /// Tokens run through the model (context prefills plus the work after them: label
    /// continuations, generated tokens).
    pub forward_tokens: u64,
    /// Distinct tokens of the tree: distinct context prefixes plus the work after them.
    pub tree_tokens: u64,
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Runs every job: `work(tag, state, forward tokens so far)` is called for each tag with the
/// state of its job's context, and returns the tokens it ran through the model itself.
pub fn run<M: LanguageModel>(
    model: &M,
    mut jobs: Vec<Job>,
    mut work: impl FnMut(usize, &M::State, u64) -> Result<u64>,
) -> Result<TreeStats> {
    jobs.sort_by(|a, b| a.context.cmp(&b.context));
    // shared[i]: tokens job i has in common with job i + 1.
    let shared: Vec<usize> = jobs
        .windows(2)
        .map(|w| common_prefix(&w[0].context, &w[1].context))
        .collect();
    let mut stats = TreeStats::default();
    let mut stack: Vec<(usize, M::State)> = Vec::new();
    for i in 0..jobs.len() {
        let ctx = &jobs[i].context;
        let shared_prev = if i > 0 { shared[i - 1] } else { 0 };
        stats.tree_tokens += (ctx.len() - shared_prev) as u64;
        while stack.last().is_some_and(|(len, _)| *len > shared_prev) {
            stack.pop();
        }
        // Keep a state at every depth where a later job branches off this one's path, then the
        // full context.
        for depth in branch_points(&shared, i, stack.last().map_or(0, |(l, _)| *l), ctx.len()) {
            let state = extend(model, &stack, ctx, depth, &mut stats)?;
            push(&mut stack, depth, state);
        }
        let (_, state) = stack.last().expect("the full context was just pushed");
        for &tag in &jobs[i].tags {
            let ran = work(tag, state, stats.forward_tokens)?;
            stats.tree_tokens += ran;
            stats.forward_tokens += ran;
        }
    }
    Ok(stats)
}

/// The depths, deeper than `from` and short of `len`, at which later jobs leave job `i`'s path,
/// in increasing order, followed by `len` itself (when deeper than `from`).
fn branch_points(shared: &[usize], i: usize, from: usize, len: usize) -> Vec<usize> {
    let mut depths = vec![];
    let mut m = usize::MAX;
    for &s in &shared[i.min(shared.len())..] {
        m = m.min(s);
        if m <= from {
            break;
        }
        if m < len && depths.last() != Some(&m) {
            depths.push(m);
        }
    }
    depths.reverse();
    if len > from {
        depths.push(len);
    }
    depths
}

/// The state of `ctx[..to]`, from the deepest kept state (or the empty state).
fn extend<M: LanguageModel>(
    model: &M,
    stack: &[(usize, M::State)],
    ctx: &[u32],
    to: usize,
    stats: &mut TreeStats,
) -> Result<M::State> {
    let (from, state) = match stack.last() {
        Some((len, state)) => (*len, model.prefill(state, &ctx[*len..to])?),
        None => (0, model.prefill(&model.empty_state(), &ctx[..to])?),
    };
    stats.forward_tokens += (to - from) as u64;
    Ok(state)
}

fn push<S>(stack: &mut Vec<(usize, S)>, len: usize, state: S) {
    if stack.len() == MAX_KEPT_STATES {
        // Drop the shallowest: later jobs that need it recompute from the empty state.
        stack.remove(0);
    }
    stack.push((len, state));
}
