//! Runs jobs as a prefix tree: jobs sorted by their context tokens, every shared prefix computed
//! once, and the tree's branches run side by side. At each job's context the caller's work runs
//! from the context's state (scoring label continuations, or handing the state to the calling
//! thread, where generations run stepped together). The forward tokens computed equal the
//! distinct tokens of the tree: its lower bound.
//!
//! # Why branches run side by side
//! A prompt's prefill alternates wide products, which the kernels split over the rayon pool, with
//! row-by-row steps (norms, rotations, copies) that run on one thread, and a product's parts do not
//! end at the same time. One path at a time therefore leaves cores idle: SmolLM2 int8 prefills 400
//! tokens at 620 tok/s on one thread and only 880 on two. So one *lane* per pool thread walks the
//! tree. A lane that reaches a branch point keeps one branch and leaves the others on a shared
//! stack for any idle lane. While every pool thread has a lane walking, each lane computes on a
//! pool of one thread of its own: one core each, no hand-offs. While fewer walk (the tree's first
//! prefix, its last branch), a lane splits its products over the shared pool. On the main job
//! (100 episodes, SmolLM2 int8, 2 cores) one path at a time took 136.9 s, lanes sharing the pool
//! 113.9 s, lanes on their own pools 85.7 s. A score's bits depend only on its tokens
//! (`tests/suite/numerics.rs`), so which lane computes it changes nothing but the order results arrive
//! in.
//!
//! Lanes are threads outside the shared pool, not tasks in it, so that a pool thread waiting
//! inside a product can only pick up other products, never a whole branch: at most one path per
//! lane is live, which bounds memory by the lane count.
//!
//! # Recurrent layers (issue 44)
//! A hybrid model's state (Qwen3.5's: `model::block::transformer::State`) holds, beside the
//! attention layers' keys and values, each gated delta-net layer's state and convolution window
//! after the state's last position, behind shared pointers. A branch left on the stack holds a
//! clone of its branch point's state, so it continues from exactly the recurrent state a straight
//! run reaches there (the recurrence runs token by token, `model::block::delta_net`: the same bits
//! however the positions were split). The branches left at one branch point share one snapshot
//! (`DeltaNet::snapshot_bytes`, 20.2 MB for Qwen3.5-0.8B's 18 recurrent layers).
//!
//! Those snapshots are bounded by a byte budget ([`run`]'s `budget`: `Execution::snapshot_budget`,
//! the command line's `--snapshot-budget`, [`DEFAULT_SNAPSHOT_MIB`] by default). A snapshot is kept while the ones kept and still held
//! (by a branch on the stack or as a lane's nearest kept ancestor) fit in it. Past it, a branch
//! point's snapshot is not kept: its branches hold the lane's nearest kept ancestor (the state
//! its current branch started from, or the empty state) and first run again the tokens from
//! there to the branch point, through the same prefill, so the same bits; those tokens are
//! counted as replayed (`TreeStats::replayed_tokens`, part of the forward tokens). Lanes walk
//! depth first, so the snapshots not kept are the deepest of a full budget: those shared by the
//! fewest jobs, whose replay is the shortest from a kept ancestor. A branch's replay is at most
//! its depth less its nearest kept ancestor's. Not counted in the budget: each lane's own
//! current state and the work's (a label's, or up to 16 generations' stepped together), a few per
//! lane.

use super::language_model::Prefill;
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

/// What a lane's error says when it only stopped because of an error elsewhere.
const STOPPED: &str = "the run stopped on an earlier error";

/// The recurrent snapshots' byte budget when none is set, in MiB: 50 of Qwen3.5-0.8B's (20.2 MB
/// each), 20 of Qwen3.5-9B's.
pub const DEFAULT_SNAPSHOT_MIB: u64 = 1024;

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
    /// Tokens run again from a kept ancestor because a branch point's recurrent snapshot was
    /// past the budget (module docs): `forward_tokens` = `tree_tokens` + these.
    pub replayed_tokens: u64,
    /// The most bytes of recurrent snapshots kept at once (0 for a model without recurrent
    /// layers).
    pub snapshot_peak_bytes: u64,
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Runs every job. `work(tag, state)` runs on a lane for each tag, with the state of its job's
/// context, and returns its output and the tokens it ran through the model itself;
/// `done(tag, output, forward tokens so far)` receives each output on the calling thread, in the
/// order they finish; at most one output per lane waits for it. The first error (from `work`,
/// `done` or the model) stops the run and is returned. `threads` is the size of the pool the
/// model's kernels run on (the command line's `--threads`): as many lanes walk at most.
/// `budget`: the bytes of recurrent snapshots kept at most (module docs); no bit of a score or
/// generation depends on it, only the tokens replayed.
pub fn run<M, T, W, D>(
    model: &M,
    mut jobs: Vec<Job>,
    threads: usize,
    budget: u64,
    work: W,
    mut done: D,
) -> Result<TreeStats>
where
    M: Prefill,
    T: Send,
    W: Fn(usize, &M::State) -> Result<(T, u64)> + Sync,
    D: FnMut(usize, T, u64) -> Result<()>,
{
    jobs.sort_by(|a, b| a.context.cmp(&b.context));
    let mut stats = TreeStats {
        tree_tokens: distinct_tokens(&jobs),
        ..TreeStats::default()
    };
    if jobs.is_empty() {
        return Ok(stats);
    }
    let lanes = threads.clamp(1, jobs.len());
    // Bounded: a lane waits while the caller is busy with earlier outputs, so outputs that hold
    // much (a generation's prompt state, for one) do not pile up unread.
    let (tx, rx) = mpsc::sync_channel(lanes);
    let walk = Walk {
        model,
        work: &work,
        threads,
        forward: AtomicU64::new(0),
        replayed: AtomicU64::new(0),
        snapshots: Arc::new(Snapshots {
            budget,
            held: Mutex::new((0, 0)),
        }),
        stack: Mutex::new(Stack {
            branches: vec![Branch {
                jobs: &jobs,
                depth: 0,
                from: Kept {
                    state: model.empty_state(),
                    at: 0,
                    _charge: None,
                },
            }],
            walking: 0,
            error: None,
        }),
        wake: Condvar::new(),
    };
    std::thread::scope(|s| -> Result<()> {
        for _ in 0..lanes {
            let (walk, tx) = (&walk, tx.clone());
            s.spawn(move || walk.lane(&tx));
        }
        drop(tx);
        // The channel closes when every lane has ended.
        let mut received = Ok(());
        for (tag, output, ran) in &rx {
            stats.tree_tokens += ran;
            if let Err(e) = done(tag, output, walk.forward.load(Ordering::Relaxed)) {
                received = Err(e);
                walk.stop(anyhow!(STOPPED));
                break;
            }
        }
        drop(rx);
        // An error of `done` came first; the lanes' error then only says they stopped.
        received?;
        Ok(())
    })?;
    if let Some(e) = walk
        .stack
        .into_inner()
        .expect("no lane panics holding the stack")
        .error
    {
        return Err(e);
    }
    stats.forward_tokens = walk.forward.into_inner();
    stats.replayed_tokens = walk.replayed.into_inner();
    stats.snapshot_peak_bytes = walk
        .snapshots
        .held
        .lock()
        .expect("no lane panics holding the snapshots' count")
        .1;
    Ok(stats)
}

/// Distinct context tokens of sorted jobs: each context less what it shares with the one before.
fn distinct_tokens(jobs: &[Job]) -> u64 {
    let shared = jobs
        .windows(2)
        .map(|w| common_prefix(&w[0].context, &w[1].context));
    let total: usize = jobs.iter().map(|j| j.context.len()).sum();
    (total - shared.sum::<usize>()) as u64
}

/// Sorted jobs that share their first `depth` tokens, and the kept state they continue from:
/// that of those tokens, or of the first `from.at` of them when the branch point's snapshot was
/// past the budget.
struct Branch<'a, S> {
    jobs: &'a [Job],
    depth: usize,
    from: Kept<S>,
}

/// A state kept to continue from: its position, and the budget's charge for its recurrent
/// snapshot (none for the empty state or a model without recurrent layers).
#[derive(Clone)]
struct Kept<S> {
    state: S,
    at: usize,
    /// Held for its `Drop`, which gives the bytes back.
    _charge: Option<Arc<Charge>>,
}

/// The recurrent snapshots kept: the budget, and the bytes held now and at most.
struct Snapshots {
    budget: u64,
    held: Mutex<(u64, u64)>,
}

/// A charge of `bytes` if they fit in the budget beside those held.
fn charge(snapshots: &Arc<Snapshots>, bytes: u64) -> Option<Charge> {
    let mut held = snapshots
        .held
        .lock()
        .expect("no lane panics holding the count");
    if held.0 + bytes > snapshots.budget {
        return None;
    }
    held.0 += bytes;
    held.1 = held.1.max(held.0);
    Some(Charge {
        bytes,
        of: Arc::clone(snapshots),
    })
}

/// One kept snapshot's bytes, given back when the last state holding it is dropped.
struct Charge {
    bytes: u64,
    of: Arc<Snapshots>,
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Ok(mut held) = self.of.held.lock() {
            held.0 -= self.bytes;
        }
    }
}

/// Branches left for any lane, and how many lanes are walking one.
struct Stack<'a, S> {
    branches: Vec<Branch<'a, S>>,
    walking: usize,
    error: Option<anyhow::Error>,
}

struct Walk<'a, M: Prefill, W> {
    model: &'a M,
    work: &'a W,
    /// Threads of the shared pool.
    threads: usize,
    forward: AtomicU64,
    replayed: AtomicU64,
    snapshots: Arc<Snapshots>,
    stack: Mutex<Stack<'a, M::State>>,
    wake: Condvar,
}

type Sent<T> = mpsc::SyncSender<(usize, T, u64)>;

impl<'a, M, T, W> Walk<'a, M, W>
where
    M: Prefill,
    T: Send,
    W: Fn(usize, &M::State) -> Result<(T, u64)> + Sync,
{
    /// Walks branches until none is left and no lane can leave more, or the run stops.
    fn lane(&self, tx: &Sent<T>) {
        // A pool of one thread for this lane alone (`on_lane`); without it the lane always
        // shares the pool, which gives the same results, more slowly.
        let own = rayon::ThreadPoolBuilder::new().num_threads(1).build().ok();
        while let Some(branch) = self.take() {
            let walked = self.walk(branch, own.as_ref(), tx);
            let mut stack = self.stack.lock().expect("no lane panics holding the stack");
            stack.walking -= 1;
            if let Err(e) = walked {
                stack.error.get_or_insert(e);
                stack.branches.clear();
            }
            if stack.walking == 0 || stack.error.is_some() {
                self.wake.notify_all();
            }
        }
    }

    /// The next branch to walk; `None` when the stack is empty and no lane is walking, or the
    /// run has failed.
    fn take(&self) -> Option<Branch<'a, M::State>> {
        let mut stack = self.stack.lock().expect("no lane panics holding the stack");
        loop {
            if stack.error.is_some() {
                return None;
            }
            if let Some(b) = stack.branches.pop() {
                stack.walking += 1;
                return Some(b);
            }
            if stack.walking == 0 {
                return None;
            }
            stack = self
                .wake
                .wait(stack)
                .expect("no lane panics holding the stack");
        }
    }

    fn stop(&self, e: anyhow::Error) {
        let mut stack = self.stack.lock().expect("no lane panics holding the stack");
        stack.error.get_or_insert(e);
        stack.branches.clear();
        self.wake.notify_all();
    }

    fn stopped(&self) -> bool {
        self.stack
            .lock()
            .expect("no lane panics holding the stack")
            .error
            .is_some()
    }

    /// Runs `f` on the lane's own pool while at least as many lanes walk as the shared pool has
    /// threads (every core has a lane), and on the shared pool otherwise (module docs).
    fn on_lane<R: Send>(&self, own: Option<&rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
        let busy = self
            .stack
            .lock()
            .expect("no lane panics holding the stack")
            .walking;
        match own {
            Some(pool) if busy >= self.threads => pool.install(f),
            _ => f(),
        }
    }

    /// Walks one branch down to its leaves: runs again what its kept state lacks, prefills to
    /// where its jobs part, runs the work of the jobs whose context ends there, leaves all but
    /// the first sub-branch on the stack and goes on with that one.
    fn walk(
        &self,
        b: Branch<'a, M::State>,
        own: Option<&rayon::ThreadPool>,
        tx: &Sent<T>,
    ) -> Result<()> {
        let Branch {
            mut jobs,
            mut depth,
            from,
        } = b;
        // What the branch's first prefill runs again, from its kept state to its branch point.
        self.replayed
            .fetch_add((depth - from.at) as u64, Ordering::Relaxed);
        let mut state = from.state.clone();
        // The nearest kept state on this lane's path: where a snapshot past the budget replays
        // from.
        let mut anchor = from;
        let mut at = anchor.at;
        loop {
            if self.stopped() {
                return Ok(());
            }
            let first = &jobs[0].context;
            let shared = common_prefix(first, &jobs[jobs.len() - 1].context);
            if shared > at {
                let tokens = &first[at..shared];
                state = self.on_lane(own, || self.model.prefill(&state, tokens))?;
                self.forward
                    .fetch_add((shared - at) as u64, Ordering::Relaxed);
                at = shared;
            }
            depth = at;
            // A context that ends here sorts before every context it is a prefix of.
            let ends = jobs.partition_point(|j| j.context.len() == depth);
            for &tag in jobs[..ends].iter().flat_map(|j| &j.tags) {
                let (output, ran) = self.on_lane(own, || (self.work)(tag, &state))?;
                self.forward.fetch_add(ran, Ordering::Relaxed);
                tx.send((tag, output, ran)).map_err(|_| anyhow!(STOPPED))?;
            }
            let mut parts = jobs[ends..].chunk_by(|x, y| x.context[depth] == y.context[depth]);
            let Some(next) = parts.next() else {
                return Ok(());
            };
            let rest: Vec<_> = parts.collect();
            if !rest.is_empty() {
                let bytes = self.model.snapshot_bytes(&state);
                let kept = if bytes == 0 {
                    None
                } else {
                    charge(&self.snapshots, bytes).map(Arc::new)
                };
                if bytes == 0 || kept.is_some() {
                    anchor = Kept {
                        state: state.clone(),
                        at: depth,
                        _charge: kept,
                    };
                }
                let mut stack = self.stack.lock().expect("no lane panics holding the stack");
                // Reversed, so that lanes take the branches in order: depth first, which keeps
                // few states alive.
                for jobs in rest.into_iter().rev() {
                    stack.branches.push(Branch {
                        jobs,
                        depth,
                        from: anchor.clone(),
                    });
                }
                self.wake.notify_all();
            }
            jobs = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A model whose state is the tokens it has seen; it counts the tokens it prefills and
    /// fails on a chosen token. A state of any token has `snapshot` bytes that a continuation
    /// does not share, as a recurrent layer's.
    struct Echo {
        prefilled: AtomicU64,
        fails_on: Option<u32>,
        snapshot: u64,
    }

    impl Prefill for Echo {
        type State = Vec<u32>;
        fn backend(&self) -> &str {
            "echo"
        }
        fn empty_state(&self) -> Vec<u32> {
            Vec::new()
        }
        fn prefill(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<u32>> {
            if let Some(bad) = self.fails_on.filter(|t| tokens.contains(t)) {
                anyhow::bail!("token {bad} refused");
            }
            self.prefilled
                .fetch_add(tokens.len() as u64, Ordering::Relaxed);
            Ok([state.as_slice(), tokens].concat())
        }
        fn snapshot_bytes(&self, state: &Vec<u32>) -> u64 {
            if state.is_empty() {
                0
            } else {
                self.snapshot
            }
        }
    }

    fn echo(fails_on: Option<u32>) -> Echo {
        Echo {
            prefilled: AtomicU64::new(0),
            fails_on,
            snapshot: 0,
        }
    }

    /// Contexts with every shape the walk must handle: shared prefixes at several depths, a
    /// context that is a prefix of others, the same context twice, one branching at its first
    /// token, and a chain of contexts each extending the one before.
    fn contexts() -> Vec<Vec<u32>> {
        let mut c = vec![
            vec![1, 2, 3, 4, 5],
            vec![1, 2, 3],
            vec![1, 2, 3, 9, 9, 9],
            vec![1, 2, 7],
            vec![1, 2, 3, 4, 6],
            vec![1, 2, 3, 4, 5],
            vec![8],
            vec![1, 5, 5, 5, 5, 5, 5, 5],
        ];
        c.extend((1..40).map(|n| [vec![6; n], vec![n as u32]].concat()));
        c.extend((1..40).map(|n| vec![4; n]));
        c
    }

    /// A job per context, tagged with its index.
    fn one_tag_each(contexts: Vec<Vec<u32>>) -> Vec<Job> {
        contexts
            .into_iter()
            .enumerate()
            .map(|(i, context)| Job {
                context,
                tags: vec![i],
            })
            .collect()
    }

    #[test]
    fn every_job_runs_once_from_its_own_context_and_the_tree_is_computed_once() {
        let model = echo(None);
        let contexts = contexts();
        let jobs = contexts
            .iter()
            .enumerate()
            .map(|(i, c)| Job {
                context: c.clone(),
                // Two pieces of work per job, told apart by their tags.
                tags: vec![2 * i, 2 * i + 1],
            })
            .collect();
        let mut seen = BTreeMap::new();
        let stats = run(
            &model,
            jobs,
            2,
            u64::MAX,
            |tag, state: &Vec<u32>| Ok((state.clone(), 1 + (tag % 2) as u64)),
            |tag, state, _| {
                assert!(seen.insert(tag, state).is_none(), "tag {tag} ran twice");
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen.len(), 2 * contexts.len());
        for (tag, state) in &seen {
            assert_eq!(
                state,
                &contexts[tag / 2],
                "tag {tag} ran from another context"
            );
        }
        let distinct: std::collections::BTreeSet<&[u32]> = contexts
            .iter()
            .flat_map(|c| (1..=c.len()).map(move |n| &c[..n]))
            .collect();
        // Each job's two tags ran 1 and 2 tokens.
        let work = 3 * contexts.len() as u64;
        assert_eq!(
            model.prefilled.load(Ordering::Relaxed),
            distinct.len() as u64
        );
        assert_eq!(stats.tree_tokens, distinct.len() as u64 + work);
        assert_eq!(stats.forward_tokens, stats.tree_tokens);
    }

    /// With recurrent snapshots of 100 bytes and a budget of none, two or all of them: every job
    /// still runs from its own context; the snapshots kept never pass the budget; what is not
    /// kept is replayed, and counted, so forward tokens = distinct tokens + replayed.
    #[test]
    fn snapshots_past_the_budget_are_replayed_from_a_kept_ancestor() {
        let contexts = contexts();
        let mut replayed = Vec::new();
        for budget in [0, 250, u64::MAX] {
            let model = Echo {
                snapshot: 100,
                ..echo(None)
            };
            let mut seen = BTreeMap::new();
            let stats = run(
                &model,
                one_tag_each(contexts.clone()),
                2,
                budget,
                |_, state: &Vec<u32>| Ok((state.clone(), 0)),
                |tag, state, _| {
                    assert!(seen.insert(tag, state).is_none(), "tag {tag} ran twice");
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen.len(), contexts.len());
            for (tag, state) in &seen {
                assert_eq!(state, &contexts[*tag], "budget {budget}: tag {tag}");
            }
            assert_eq!(
                stats.forward_tokens,
                stats.tree_tokens + stats.replayed_tokens,
                "budget {budget}: {stats:?}"
            );
            assert_eq!(
                model.prefilled.load(Ordering::Relaxed),
                stats.forward_tokens
            );
            assert!(stats.snapshot_peak_bytes <= budget, "{stats:?}");
            replayed.push(stats.replayed_tokens);
        }
        // None kept replays most, two kept less, all kept nothing.
        assert!(replayed[0] > replayed[1], "{replayed:?}");
        assert!(replayed[1] > 0, "{replayed:?}");
        assert_eq!(replayed[2], 0);
    }

    #[test]
    fn a_model_error_in_one_branch_stops_the_run_and_is_returned() {
        let model = echo(Some(99));
        let mut contexts = contexts();
        contexts.push(vec![1, 2, 3, 99]);
        let jobs = one_tag_each(contexts);
        let e = run(
            &model,
            jobs,
            2,
            u64::MAX,
            |_, _| Ok(((), 0)),
            |_, (), _| Ok(()),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "token 99 refused");
    }

    #[test]
    fn an_error_of_the_receiver_stops_the_run_and_is_returned() {
        let model = echo(None);
        let jobs = one_tag_each(contexts());
        let mut received = 0;
        let e = run(
            &model,
            jobs,
            2,
            u64::MAX,
            |_, _| Ok(((), 0)),
            |_, (), _| {
                received += 1;
                match received {
                    3 => anyhow::bail!("the store is full"),
                    _ => Ok(()),
                }
            },
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "the store is full");
        assert_eq!(received, 3, "nothing is received after the error");
    }

    #[test]
    fn no_jobs_compute_nothing() {
        let model = echo(None);
        let stats = run(
            &model,
            vec![],
            2,
            u64::MAX,
            |_, _| Ok(((), 1)),
            |_, (), _| Ok(()),
        )
        .unwrap();
        assert_eq!(stats, TreeStats::default());
        assert_eq!(model.prefilled.load(Ordering::Relaxed), 0);
    }
}
