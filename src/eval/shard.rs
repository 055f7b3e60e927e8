//! `score --shard I/N`: the I-th of N disjoint parts of a set, for scoring on many machines.
//!
//! The parts are contiguous runs of the items sorted by their first prompt, so items that share
//! a prefix (the same premises, the same question over other premises) land in the same part
//! and the prefix tree of each part still computes their shared tokens once. A cut between two
//! parts is placed, near the balanced position, where neighbouring prompts share the least, so
//! the forward tokens summed over the parts stay close to one run's. All turns of an item stay
//! with it (the runner asks them in turn). The parts depend only on the set, the template and N.
//!
//! A part (`eval::run_part`) stores its scores and generations, never a result: a result is one record over the
//! whole set, and a partial one would be reported as if it were. After `cache merge` of the N
//! part stores, `score` without `--shard` finds every record cached, computes nothing and writes
//! the full result — the same record as a single run's.

use crate::benchmarks::prompts::TemplateRecord;
use crate::benchmarks::{Answer, Prepared, Request};
use crate::logic::Label;
use crate::store::Id;
use anyhow::{bail, Context, Result};
use std::str::FromStr;

/// The `index`-th (from 0, as Slurm's `SLURM_ARRAY_TASK_ID`) of `count` parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N` with `0 <= I < N <= MAX_SHARDS`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "`{s}` is not a shard: give I/N with 0 <= I < N and N from 1 to {} (e.g. 0/4)",
                crate::bounds::MAX_SHARDS
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index >= count || count > crate::bounds::MAX_SHARDS {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// How far (as a fraction of a part's size) a cut may move from the balanced position to find
/// neighbours that share less: parts stay within ±25% of each other's size.
const SLACK_DIVISOR: usize = 8;

/// The items (indices into `prepared.items()`) of every part, each part in the set's order.
pub fn parts(prepared: &dyn Prepared, count: usize) -> Result<Vec<Vec<usize>>> {
    if count == 0 {
        bail!("a set cannot be split into 0 parts");
    }
    let n = prepared.items().len();
    let keys = (0..n)
        .map(|i| {
            let request = prepared
                .request(i, 0, &[])
                .with_context(|| format!("item {}, turn 1", prepared.items()[i].short()))?;
            Ok(match request {
                Request::Score { prompt, .. } | Request::Generate { prompt, .. } => prompt,
            })
        })
        .collect::<Result<Vec<String>>>()?;
    // Sorted by prompt; equal prompts by item id (the set's order), so the order is total.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]).then(a.cmp(&b)));
    // shared[k]: bytes the prompts at positions k-1 and k have in common.
    let shared = |k: usize| common_prefix(&keys[order[k - 1]], &keys[order[k]]);
    let slack = (n / count / SLACK_DIVISOR).max(1);
    let mut cuts = vec![0];
    for j in 1..count {
        let prev = *cuts.last().expect("starts with 0");
        let balanced = j * n / count;
        let (lo, hi) = (
            (prev + 1).max(balanced.saturating_sub(slack)),
            (n.saturating_sub(1)).min(balanced + slack),
        );
        let cut = (lo..=hi)
            .min_by_key(|&k| (shared(k), k.abs_diff(balanced), k))
            .unwrap_or_else(|| balanced.clamp(prev, n));
        cuts.push(cut);
    }
    cuts.push(n);
    Ok(cuts
        .windows(2)
        .map(|w| {
            let mut part = order[w[0]..w[1]].to_vec();
            part.sort_unstable();
            part
        })
        .collect())
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// A part of a prepared set: the runner sees only its items.
struct Part {
    whole: Box<dyn Prepared>,
    keep: Vec<usize>,
    ids: Vec<Id>,
}

impl Prepared for Part {
    fn template(&self) -> TemplateRecord {
        self.whole.template()
    }
    fn items(&self) -> &[Id] {
        &self.ids
    }
    fn turns(&self) -> usize {
        self.whole.turns()
    }
    fn request(&self, item: usize, turn: usize, earlier: &[Answer]) -> Result<Request> {
        self.whole.request(self.keep[item], turn, earlier)
    }
    fn content_free(
        &self,
        item: usize,
        turn: usize,
        earlier: &[Answer],
        filler: &str,
    ) -> Result<Option<Request>> {
        self.whole
            .content_free(self.keep[item], turn, earlier, filler)
    }
    fn target(&self, item: usize, turn: usize) -> Option<Label> {
        self.whole.target(self.keep[item], turn)
    }
}

/// The part `shard` of a prepared set.
pub(super) fn select(whole: Box<dyn Prepared>, shard: Shard) -> Result<Box<dyn Prepared>> {
    let keep = parts(&*whole, shard.count)?.swap_remove(shard.index);
    let ids = keep.iter().map(|&i| whole.items()[i]).collect();
    Ok(Box::new(Part { whole, keep, ids }))
}
