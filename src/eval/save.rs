//! The one save path of both engines (our own in `compute`, a server in `served`): a computed
//! score or generation is refused if a log-prob is not finite, counted in the run's report,
//! batched with its prompt and committed every [`BATCH`] records, each commit after the engine's
//! check that its files are those of its fingerprint. Records are built here too
//! ([`Computation`]), so a score or a generation holds the same fields whoever computed it.

use super::generate;
use super::pending::Pending;
use super::records::{GenerationRecord, PromptRecord, ScoreRecord};
use crate::benchmarks::Decoding;
use crate::store::{Id, Store};
use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Scores committed per write transaction: an interrupted run loses at most this many.
pub const BATCH: usize = 24;

/// What a run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScoreReport {
    pub items: usize,
    pub scores_needed: usize,
    pub scores_found_in_cache: usize,
    pub scores_computed: usize,
    pub generations_needed: usize,
    pub generations_found_in_cache: usize,
    pub generations_computed: usize,
    /// Tokens of the computed generations: one per generated log-prob, whichever engine computed
    /// them (a served generation holds no token ids).
    pub generated_tokens: u64,
    pub forward_tokens: u64,
    /// A served model's answers cross-checked while it was asked (`served::compute`): the first
    /// score of each turn, one in `probe::CROSS_CHECK_EVERY` and the last; none for our engine.
    pub cross_checks: u64,
    /// Distinct tokens of the prefix tree of the computed requests: the lower bound.
    pub tree_tokens: u64,
    /// Of `forward_tokens`, those run again because a hybrid model's recurrent state at a branch
    /// point was past the snapshot budget (`tree`): `forward_tokens` = `tree_tokens` + these.
    pub replayed_tokens: u64,
    /// The most bytes of recurrent snapshots the prefix tree kept at once.
    pub snapshot_peak_bytes: u64,
    pub seconds: f64,
}

/// Progress of a run (a terminal bar, or nothing).
pub trait Progress {
    fn start(&mut self, total: u64, cached: u64);
    fn advance(&mut self, done: u64, tokens: u64);
    fn finish(&mut self);
}

/// No progress output (tests, `--json`).
pub struct Quiet;

impl Progress for Quiet {
    fn start(&mut self, _: u64, _: u64) {}
    fn advance(&mut self, _: u64, _: u64) {}
    fn finish(&mut self) {}
}

/// A computed record on its way to the batch.
pub(super) enum Computed {
    Score(ScoreRecord),
    Generation(GenerationRecord),
}

/// Who computed a record, with what, how long it took and when: what every computed score and
/// generation records beside its values.
pub(super) struct Computation<'a> {
    model: Id,
    backend: &'a str,
    micros: u64,
    at: u64,
}

impl<'a> Computation<'a> {
    /// A computation by `model` on `backend` started at `started`, dated `at` (Unix seconds).
    pub(super) fn of(model: Id, backend: &'a str, started: Instant, at: u64) -> Computation<'a> {
        Computation {
            model,
            backend,
            micros: started.elapsed().as_micros() as u64,
            at,
        }
    }

    pub(super) fn score(
        &self,
        prompt: Id,
        label: &str,
        tokens: Vec<u32>,
        logprobs: Vec<f32>,
    ) -> ScoreRecord {
        ScoreRecord {
            model: self.model.0,
            prompt: prompt.0,
            label: label.to_string(),
            tokens,
            logprobs,
            chars: label.chars().count() as u32,
            bytes: label.len() as u32,
            backend: self.backend.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            compute_micros: self.micros,
            computed_at: self.at,
        }
    }

    pub(super) fn generation(
        &self,
        prompt: Id,
        decoding: &Decoding,
        g: generate::Generated,
    ) -> GenerationRecord {
        GenerationRecord {
            model: self.model.0,
            prompt: prompt.0,
            decoding: decoding.clone(),
            tokens: g.tokens,
            logprobs: g.logprobs,
            text: g.text,
            stop: g.stop,
            backend: self.backend.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            compute_micros: self.micros,
            computed_at: self.at,
        }
    }
}

/// Records computed and not yet committed.
#[derive(Default)]
struct Batch {
    prompts: BTreeMap<Id, String>,
    scores: Vec<ScoreRecord>,
    generations: Vec<GenerationRecord>,
}

impl Batch {
    fn len(&self) -> usize {
        self.scores.len() + self.generations.len()
    }

    fn flush(&mut self, reg: &Store) -> Result<()> {
        reg.write(|w| {
            for text in self.prompts.values() {
                w.put(&PromptRecord { text: text.clone() })?;
            }
            for s in &self.scores {
                w.put(s)?;
            }
            for g in &self.generations {
                w.put(g)?;
            }
            Ok(())
        })?;
        *self = Batch::default();
        Ok(())
    }
}

/// Refuses to commit a batch computed by a model whose files changed since it was loaded: its
/// scores may be of other weights, and would be stored under the old fingerprint. The batch is
/// dropped (earlier batches were committed before the change was made, each after the same
/// check).
fn unchanged(files: &dyn Fn(bool) -> Result<()>, batch: &Batch, rehash: bool) -> Result<()> {
    files(rehash).map_err(|e| {
        anyhow!(
            "{e:#}; the {} record(s) computed since the last commit were discarded (those \
             committed before were computed before the change). Register the new file with \
             `deltalogic model add` to score with it",
            batch.len()
        )
    })
}

/// Refuses a non-finite log-prob: it would be stored and read back as an answer.
fn finite(logprobs: &[f32], what: &str, prompt: Id) -> Result<()> {
    if let Some(bad) = logprobs.iter().find(|x| !x.is_finite()) {
        bail!(
            "the model gave the non-finite log-prob {bad} for {what} after prompt {}; nothing of \
             it was stored",
            prompt.short()
        );
    }
    Ok(())
}

/// The date every record of one computation carries: now, in Unix seconds.
pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Where the records an engine computes go.
pub(super) struct Saver<'a> {
    reg: &'a Store,
    reqs: &'a [Pending],
    /// The engine's check of its files (`Prefill::check_files`; a server has none): cheap before
    /// each commit, `rehash` before the last.
    files: &'a dyn Fn(bool) -> Result<()>,
    batch: Batch,
    report: &'a mut ScoreReport,
    progress: &'a mut dyn Progress,
}

impl<'a> Saver<'a> {
    /// A saver for `records` records to compute for `reqs`; the progress starts with them.
    pub(super) fn start(
        reg: &'a Store,
        reqs: &'a [Pending],
        files: &'a dyn Fn(bool) -> Result<()>,
        records: usize,
        report: &'a mut ScoreReport,
        progress: &'a mut dyn Progress,
    ) -> Saver<'a> {
        progress.start(
            records as u64,
            (report.scores_found_in_cache + report.generations_found_in_cache) as u64,
        );
        Saver {
            reg,
            reqs,
            files,
            batch: Batch::default(),
            report,
            progress,
        }
    }

    /// Takes the computed record of request `req`; `tokens` ran through the model for it since
    /// the last record was taken.
    pub(super) fn take(&mut self, req: usize, record: Computed, tokens: u64) -> Result<()> {
        match record {
            Computed::Score(s) => {
                finite(&s.logprobs, &format!("label {:?}", s.label), Id(s.prompt))?;
                self.report.scores_computed += 1;
                self.batch.scores.push(s);
            }
            Computed::Generation(g) => {
                finite(&g.logprobs, "a generated token", Id(g.prompt))?;
                self.report.generations_computed += 1;
                self.report.generated_tokens += g.logprobs.len() as u64;
                self.batch.generations.push(g);
            }
        }
        let (text, id) = self.reqs[req].prompt();
        self.batch
            .prompts
            .entry(id)
            .or_insert_with(|| text.to_string());
        self.progress.advance(1, tokens);
        if self.batch.len() >= BATCH {
            self.commit(false)?;
        }
        Ok(())
    }

    /// The run's report, for what the engine counts beside the records.
    pub(super) fn report(&mut self) -> &mut ScoreReport {
        self.report
    }

    /// Commits the records not yet committed, after the last check of the engine's files, and
    /// ends the progress: how many records that commit held.
    pub(super) fn finish(mut self) -> Result<usize> {
        let last = self.batch.len();
        self.commit(true)?;
        self.progress.finish();
        Ok(last)
    }

    fn commit(&mut self, rehash: bool) -> Result<()> {
        unchanged(self.files, &self.batch, rehash)?;
        self.batch.flush(self.reg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::{Request, Role};
    use crate::eval::records::StopReason;
    use crate::store::Record;

    /// A generation counts one token per log-prob whichever engine computed it: ours keeps its
    /// token ids, a server's has none, and both ran three tokens.
    #[test]
    fn generated_tokens_are_counted_by_their_log_probs() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
        let decoding = Decoding {
            max_tokens: 8,
            stop: vec![],
        };
        let model = Id([7; 32]);
        let request = Request::Generate {
            by: Role::Subject,
            prompt: "Once".to_string(),
            decoding: decoding.clone(),
        };
        let reqs = [Pending::new(model, model, request).unwrap()];
        let prompt = reqs[0].prompt().1;
        let mut report = ScoreReport::default();
        let files = |_| Ok(());
        let mut quiet = Quiet;
        let mut saver = Saver::start(&reg, &reqs, &files, 2, &mut report, &mut quiet);
        for (backend, tokens) in [("ours", vec![5, 6, 0]), ("served", vec![])] {
            let g = generate::Generated {
                tokens,
                logprobs: vec![-0.5, -1.0, -0.25],
                text: "ab".to_string(),
                stop: StopReason::EndToken,
                forward_tokens: 2,
            };
            let by = Computation::of(model, backend, Instant::now(), now());
            saver
                .take(
                    0,
                    Computed::Generation(by.generation(prompt, &decoding, g)),
                    0,
                )
                .unwrap();
        }
        assert_eq!(saver.finish().unwrap(), 2);
        assert_eq!(report.generations_computed, 2);
        assert_eq!(report.generated_tokens, 6);
        assert_eq!(reg.count(GenerationRecord::KIND).unwrap(), 1, "one key");
    }

    /// A non-finite log-prob is refused on the save path, for either engine: nothing is stored.
    #[test]
    fn a_non_finite_log_prob_is_refused_and_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
        let model = Id([7; 32]);
        let request = Request::Score {
            by: Role::Subject,
            prompt: "Label:".to_string(),
            labels: vec![(" True".to_string(), crate::logic::Label::True)],
        };
        let reqs = [Pending::new(model, model, request).unwrap()];
        let prompt = reqs[0].prompt().1;
        let mut report = ScoreReport::default();
        let files = |_| Ok(());
        let mut quiet = Quiet;
        let mut saver = Saver::start(&reg, &reqs, &files, 1, &mut report, &mut quiet);
        let by = Computation::of(model, "served", Instant::now(), now());
        let score = by.score(prompt, " True", vec![], vec![-0.5, f32::NAN]);
        let err = saver.take(0, Computed::Score(score), 0).unwrap_err();
        assert!(
            format!("{err}").contains("non-finite log-prob NaN for label \" True\""),
            "{err}"
        );
        assert_eq!(saver.finish().unwrap(), 0);
        assert_eq!(report.scores_computed, 0);
        assert_eq!(reg.count(ScoreRecord::KIND).unwrap(), 0);
    }
}
