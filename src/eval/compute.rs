//! The compute path: the missing records of one turn's requests, per model, each model loaded on
//! first need; our own engine walks the prefix tree (`tree`), scoring labels on its lanes and
//! stepping generations together on the calling thread (`generate::Lockstep`), a served model is
//! asked over HTTP (`served::compute`). Both hand their records to the one save path (`save`).

use super::engine::{prompt_tokens, Engine};
use super::generate;
use super::language_model::LanguageModel;
use super::pending::Pending;
use super::records::ScoreRecord;
use super::save::{self, Computation, Computed, Progress, Saver, ScoreReport};
use super::served;
use super::tree;
use crate::benchmarks::prompts::TemplateRecord;
use crate::benchmarks::Decoding;
use crate::store::{Id, Store};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// How a run computes the records the store lacks: the command line's compute flags. None of it
/// changes a bit of a score or a generation, only the time and memory they take.
#[derive(Clone, Copy, Debug)]
pub struct Execution {
    /// The size of the pool our engine's kernels run on (the command line's `--threads`, which
    /// sizes it): as many branches of the prefix tree are walked at once.
    pub threads: usize,
    /// Whether generations draft tokens and verify them (speculative decoding; the command line's
    /// `--no-speculate` turns it off).
    pub speculate: bool,
    /// Bytes the prefix tree may keep of a hybrid model's recurrent states at its branch points
    /// (the command line's `--snapshot-budget`): past it branches replay tokens.
    pub snapshot_budget: u64,
}

impl Execution {
    /// The command line's `--threads` when not given: this machine kind's two cores.
    pub const DEFAULT_THREADS: usize = 2;
}

impl Default for Execution {
    /// The command line's defaults.
    fn default() -> Execution {
        Execution {
            threads: Execution::DEFAULT_THREADS,
            speculate: true,
            snapshot_budget: super::tree::DEFAULT_SNAPSHOT_MIB << 20,
        }
    }
}

/// Computes the missing records of batches of requests, loading each model on first need.
pub(super) struct Computer<'a, M, L: FnMut(Id) -> Result<Engine<M>>> {
    reg: &'a Store,
    models: BTreeMap<Id, Engine<M>>,
    load: L,
    execution: Execution,
}

impl<'a, M: LanguageModel, L: FnMut(Id) -> Result<Engine<M>>> Computer<'a, M, L> {
    /// A computer for one run: the template is stored first, so every result it leads to names
    /// a template the store holds.
    pub(super) fn start(
        reg: &'a Store,
        load: L,
        execution: Execution,
        template: &TemplateRecord,
    ) -> Result<Computer<'a, M, L>> {
        reg.write(|w| {
            w.put(template)?;
            Ok(())
        })?;
        Ok(Computer {
            reg,
            models: BTreeMap::new(),
            load,
            execution,
        })
    }

    pub(super) fn ensure(
        &mut self,
        reqs: &[Pending],
        report: &mut ScoreReport,
        progress: &mut dyn Progress,
    ) -> Result<()> {
        // Per model, the missing slots of each request; a key asked twice is computed once.
        let mut missing: BTreeMap<Id, Vec<(usize, Vec<usize>)>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for (i, r) in reqs.iter().enumerate() {
            let keys = r.keys();
            let (needed, cached) = match r {
                Pending::Score { .. } => {
                    (&mut report.scores_needed, &mut report.scores_found_in_cache)
                }
                Pending::Generate { .. } => (
                    &mut report.generations_needed,
                    &mut report.generations_found_in_cache,
                ),
            };
            let slots: Vec<usize> = r
                .missing(self.reg)?
                .into_iter()
                .filter(|&j| seen.insert(keys[j]))
                .collect();
            // A key asked twice in a batch is computed once, and found the second time.
            *needed += keys.len();
            *cached += keys.len() - slots.len();
            if !slots.is_empty() {
                missing.entry(r.model()).or_default().push((i, slots));
            }
        }
        for (model_id, slots) in missing {
            if !self.models.contains_key(&model_id) {
                let m = (self.load)(model_id)?;
                self.models.insert(model_id, m);
            }
            match &self.models[&model_id] {
                Engine::Local(m) => compute(
                    self.reg,
                    m,
                    model_id,
                    self.execution,
                    reqs,
                    &slots,
                    report,
                    progress,
                )?,
                Engine::Served(s) => {
                    served::compute(self.reg, s, model_id, reqs, &slots, report, progress)?
                }
            }
        }
        Ok(())
    }
}

/// What one slot of a request computes after its prompt's state.
enum Work {
    Score {
        req: usize,
        slot: usize,
        tokens: Vec<u32>,
    },
    Generate {
        req: usize,
        /// The prompt's tokens, where the generation's drafts are looked up.
        prompt: Vec<u32>,
    },
}

impl Work {
    /// The request the work answers.
    fn req(&self) -> usize {
        match self {
            Work::Score { req, .. } | Work::Generate { req, .. } => *req,
        }
    }
}

/// What one piece of work gave, on its way from a lane of the tree to the calling thread: a
/// score, or the state of a generation's prompt, to start the generation from.
enum Reached<S> {
    Score(Box<ScoreRecord>),
    Prompt(S),
}

#[allow(clippy::too_many_arguments)]
fn compute<M: LanguageModel>(
    reg: &Store,
    model: &M,
    model_id: Id,
    execution: Execution,
    reqs: &[Pending],
    missing: &[(usize, Vec<usize>)],
    report: &mut ScoreReport,
    progress: &mut dyn Progress,
) -> Result<()> {
    let mut jobs = Vec::new();
    let mut work = Vec::new();
    for (i, slots) in missing {
        let r = &reqs[*i];
        let mut job = tree::Job {
            context: Vec::new(),
            tags: Vec::new(),
        };
        match r {
            Pending::Score {
                prompt,
                prompt_id,
                labels,
                ..
            } => {
                let (context, label_tokens) = model
                    .split_tokens(prompt, labels)
                    .with_context(|| format!("prompt {}", prompt_id.short()))?;
                job.context = context;
                for &slot in slots {
                    job.tags.push(work.len());
                    work.push(Work::Score {
                        req: *i,
                        slot,
                        tokens: label_tokens[slot].clone(),
                    });
                }
            }
            Pending::Generate {
                prompt, prompt_id, ..
            } => {
                job.context = prompt_tokens(model, prompt)
                    .with_context(|| format!("prompt {}", prompt_id.short()))?;
                job.tags.push(work.len());
                work.push(Work::Generate {
                    req: *i,
                    prompt: job.context.clone(),
                });
            }
        }
        jobs.push(job);
    }
    let now = save::now();
    let files = |rehash| model.check_files(rehash);
    let mut sink = Sink {
        saver: Saver::start(reg, reqs, &files, work.len(), report, progress),
        model,
        model_id,
        now,
        reqs,
        work: &work,
        reported_tokens: 0,
        generated_forward: 0,
    };
    let mut lockstep = generate::Lockstep::new(model, execution.speculate);
    let stats = tree::run(
        model,
        jobs,
        execution.threads,
        execution.snapshot_budget,
        |tag, state| -> Result<(Reached<M::State>, u64)> {
            let t = Instant::now();
            Ok(match &work[tag] {
                Work::Score { req, slot, tokens } => {
                    let Pending::Score {
                        labels, prompt_id, ..
                    } = &reqs[*req]
                    else {
                        unreachable!("score work comes from score requests")
                    };
                    let label = &labels[*slot];
                    let logprobs = model.score_continuation(state, tokens)?;
                    let by = Computation::of(model_id, model.backend(), t, now);
                    let score = by.score(*prompt_id, label, tokens.clone(), logprobs);
                    (Reached::Score(Box::new(score)), tokens.len() as u64)
                }
                // Generations run on the calling thread, stepped together (`Lockstep`).
                Work::Generate { .. } => (Reached::Prompt(state.clone()), 0),
            })
        },
        |tag, computed, forward| {
            match computed {
                Reached::Score(s) => sink.take(tag, Computed::Score(*s), forward),
                Reached::Prompt(state) => {
                    let (prompt_id, decoding) = reqs[work[tag].req()].generation();
                    let waiting = Waiting {
                        tag,
                        prompt: prompt_id,
                        started: Instant::now(),
                    };
                    let Work::Generate { prompt, .. } = &work[tag] else {
                        unreachable!("a prompt's state is reached for generation work")
                    };
                    lockstep.join_after(waiting, state, prompt, decoding)?;
                    // Full: step until a place is free. The lanes meanwhile wait with at most
                    // one prompt state each (`tree::run`), which bounds memory.
                    while lockstep.len() >= LOCKSTEP {
                        sink.step(&mut lockstep, forward)?;
                    }
                    Ok(())
                }
            }
        },
    )?;
    while !lockstep.is_empty() {
        sink.step(&mut lockstep, stats.forward_tokens)?;
    }
    let generated = sink.generated_forward;
    let report = sink.saver.report();
    report.forward_tokens += stats.forward_tokens + generated;
    report.tree_tokens += stats.tree_tokens + generated;
    report.replayed_tokens += stats.replayed_tokens;
    report.snapshot_peak_bytes = report.snapshot_peak_bytes.max(stats.snapshot_peak_bytes);
    sink.saver.finish()?;
    Ok(())
}

/// Generations stepped together, at most. A decode step reads every weight, so several cost
/// little more than one: Qwen2.5-Coder-1.5B Q4_K_M int8 on 2 cores generated 41, 104, 124, 172,
/// 198 and 211 tok/s in all with 1, 4, 8, 16, 24 and 32 together (`bench --parallel`). Each
/// generation holds its own prompt's keys and values (Qwen3-4B: 288 KiB a position), which is why
/// it stops at 16.
pub const LOCKSTEP: usize = 16;

/// A generation in the lockstep: its work's tag, its prompt and when it started.
struct Waiting {
    tag: usize,
    prompt: Id,
    started: Instant,
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "prompt {}", self.prompt.short())
    }
}

impl Waiting {
    /// The record of what the generation gave; its compute time is its wall time in the
    /// lockstep, shared with the generations stepped beside it.
    fn record(
        &self,
        model: Id,
        backend: &str,
        now: u64,
        decoding: &Decoding,
        g: generate::Generated,
    ) -> Computed {
        let by = Computation::of(model, backend, self.started, now);
        Computed::Generation(by.generation(self.prompt, decoding, g))
    }
}

/// Our engine's side of the save path: the forward tokens each record took, for the progress.
struct Sink<'a, M> {
    saver: Saver<'a>,
    model: &'a M,
    model_id: Id,
    now: u64,
    reqs: &'a [Pending],
    work: &'a [Work],
    reported_tokens: u64,
    /// Forward tokens of the generations that ended, which the tree does not count.
    generated_forward: u64,
}

impl<'a, M: LanguageModel> Sink<'a, M> {
    /// One step of the lockstep; the generations that ended with it are taken. `tree_forward`
    /// counts the tokens the tree has run so far.
    fn step(
        &mut self,
        lockstep: &mut generate::Lockstep<'a, M, Waiting>,
        tree_forward: u64,
    ) -> Result<()> {
        for (w, g) in lockstep.step()? {
            self.generated_forward += g.forward_tokens;
            let (_, decoding) = self.reqs[self.work[w.tag].req()].generation();
            let record = w.record(self.model_id, self.model.backend(), self.now, decoding, g);
            self.take(w.tag, record, tree_forward)?;
        }
        Ok(())
    }

    /// Takes the record of work `tag`; `tree_forward` counts the tokens the tree has run so far.
    fn take(&mut self, tag: usize, record: Computed, tree_forward: u64) -> Result<()> {
        let forward = tree_forward + self.generated_forward;
        let tokens = forward - self.reported_tokens;
        self.reported_tokens = forward;
        self.saver.take(self.work[tag].req(), record, tokens)
    }
}
