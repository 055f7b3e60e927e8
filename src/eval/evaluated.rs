//! Evaluations kept in the store. A result's evaluation by its benchmark (metrics and seeded
//! bootstrap intervals) is a pure function of what the result's id covers — every row's item,
//! answers and keys —, of records that never change once stored (items, generations: content
//! addressed), of the evaluation code and of the seed. So it is kept under the hash of
//! (result id, benchmark, the benchmark's [`Benchmark::evaluator`] version, [`VERSION`], seed):
//! a later report reads it back instead of reading every item and drawing every resample again.
//! A change to any of these is another key, so a kept evaluation is never stale; one that the key
//! no longer names is never read (and harmless). A kept evaluation is derived, never trusted
//! from elsewhere: a merge does not bring them in (the receiving store's next report makes its
//! own), and `cache verify` recomputes every one ([`verify`]).

use super::pending::answered;
use crate::benchmarks::{Benchmark, Catalogue, Evaluation, Group};
use crate::metrics::Metric;
use crate::store::{canonical, decode, Id, Kind, Record, ResultRecord, Store, StoredSet};
use anyhow::{anyhow, Context, Result};
use serde::Serialize;

/// The version of what every benchmark's evaluation shares: this record's encoding and the
/// metric machinery (`metrics`: proportions, bootstrap; `benchmarks::RESAMPLES`;
/// `benchmarks::question`'s accuracy evaluation). Bump it when any of them changes an output;
/// a benchmark's own formulas have its [`Benchmark::evaluator`].
pub const VERSION: u32 = 1;

/// Rows of a result re-read on every report that uses its kept evaluation (see [`Kept::get`]).
const CHECKED_ROWS: usize = 64;

/// One result's evaluation: its key (result, benchmark, versions, seed) and what the
/// benchmark computed (its items, groups and own metric structure). What every evaluation of a
/// benchmark shares — columns, note, figure panel, findings — is its code's, not kept.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct EvaluationRecord {
    pub result: [u8; 32],
    pub benchmark: String,
    pub evaluator: u32,
    pub version: u32,
    pub seed: u64,
    pub n: u64,
    pub groups: Vec<KeptGroup>,
    /// The benchmark's own metric structure as JSON text (parsed back bit for bit: serde_json's
    /// `float_roundtrip`).
    pub metrics: String,
}

#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct KeptGroup {
    pub by: String,
    pub value: String,
    pub metrics: Vec<Option<KeptMetric>>,
}

#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct KeptMetric {
    pub value: Option<f64>,
    pub n: u64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

/// What an evaluation's key hashes.
#[derive(Serialize)]
struct Key<'a> {
    result: String,
    benchmark: &'a str,
    evaluator: u32,
    version: u32,
    seed: u64,
}

impl Record for EvaluationRecord {
    const KIND: Kind = Kind {
        table: "evaluations",
        context: "deltalogic 2026-11-26 result evaluation v1",
        noun: "evaluation",
    };
    /// Its key only, as a score's: what was computed is the value, which the checksum covers
    /// and [`verify`] recomputes.
    fn content(&self) -> Vec<u8> {
        canonical(&Key {
            result: Id(self.result).hex(),
            benchmark: &self.benchmark,
            evaluator: self.evaluator,
            version: self.version,
            seed: self.seed,
        })
    }
    fn references(&self) -> Vec<(Kind, Id)> {
        vec![(ResultRecord::KIND, Id(self.result))]
    }
}

impl EvaluationRecord {
    fn new(benchmark: &dyn Benchmark, result: Id, seed: u64, e: &Evaluation) -> EvaluationRecord {
        EvaluationRecord {
            result: result.0,
            benchmark: benchmark.name().to_string(),
            evaluator: benchmark.evaluator(),
            version: VERSION,
            seed,
            n: e.n as u64,
            groups: e
                .groups
                .iter()
                .map(|g| KeptGroup {
                    by: g.by.clone(),
                    value: g.value.clone(),
                    metrics: g
                        .metrics
                        .iter()
                        .map(|m| {
                            m.as_ref().map(|m| KeptMetric {
                                value: m.value,
                                n: m.n as u64,
                                lo: m.lo,
                                hi: m.hi,
                            })
                        })
                        .collect(),
                })
                .collect(),
            metrics: e.metrics.to_string(),
        }
    }

    /// The id of the evaluation of `result` by `benchmark` under `seed`, as this build computes it.
    fn key(benchmark: &dyn Benchmark, result: Id, seed: u64) -> Id {
        Id::derive(
            Self::KIND,
            &canonical(&Key {
                result: result.hex(),
                benchmark: benchmark.name(),
                evaluator: benchmark.evaluator(),
                version: VERSION,
                seed,
            }),
        )
    }

    /// The evaluation it keeps. What its benchmark's evaluations share is `'static` data of the
    /// benchmark's code, not of any item: it is taken from the benchmark's evaluation of no items.
    fn evaluation(&self, reg: &Store, benchmark: &dyn Benchmark) -> Result<Evaluation> {
        let shared = benchmark.evaluate(reg, &[], self.seed)?;
        Ok(Evaluation {
            n: usize::try_from(self.n)?,
            groups: self
                .groups
                .iter()
                .map(|g| {
                    Ok(Group {
                        by: g.by.clone(),
                        value: g.value.clone(),
                        metrics: g
                            .metrics
                            .iter()
                            .map(|m| {
                                m.as_ref()
                                    .map(|m| {
                                        Ok(Metric {
                                            value: m.value,
                                            n: usize::try_from(m.n)?,
                                            lo: m.lo,
                                            hi: m.hi,
                                        })
                                    })
                                    .transpose()
                            })
                            .collect::<Result<_>>()?,
                    })
                })
                .collect::<Result<_>>()?,
            metrics: serde_json::from_str(&self.metrics)?,
            ..shared
        })
    }
}

/// A result's evaluation computed from its rows: every row's answers read (`answered` refuses
/// a scored turn whose scores the store lacks), then the benchmark's metrics.
fn compute(
    reg: &Store,
    benchmark: &dyn Benchmark,
    result: &ResultRecord,
    seed: u64,
) -> Result<Evaluation> {
    let answered = result
        .rows
        .iter()
        .map(|row| answered(reg, row))
        .collect::<Result<Vec<_>>>()?;
    benchmark.evaluate(reg, &answered, seed)
}

/// The evaluations a report reads and makes. Those it computes are kept when it is done
/// ([`Kept::keep`]), in one transaction, if the store is open for writing; a read-only store is
/// only read.
pub struct Kept<'s> {
    reg: &'s Store,
    computed: Vec<EvaluationRecord>,
}

impl<'s> Kept<'s> {
    pub fn new(reg: &'s Store) -> Kept<'s> {
        Kept {
            reg,
            computed: Vec::new(),
        }
    }

    /// The evaluation of result `id` by `benchmark` under `seed`: the kept one if the store has
    /// it, else computed.
    ///
    /// A kept evaluation was made by a report that found every score of the result in this
    /// store, and no command removes a score. A store can
    /// still lose scores below us (a damaged or hand-edited file): a sample of
    /// [`CHECKED_ROWS`] rows spread over the result is read again, as a report without the
    /// kept evaluation would, so a lost scores table is refused as before; `cache verify`
    /// checks every row.
    pub fn get(
        &mut self,
        benchmark: &dyn Benchmark,
        id: Id,
        result: &ResultRecord,
        seed: u64,
    ) -> Result<Evaluation> {
        let key = EvaluationRecord::key(benchmark, id, seed);
        if let Some(kept) = self.reg.get::<EvaluationRecord>(&key)? {
            let step = result.rows.len().div_ceil(CHECKED_ROWS).max(1);
            for row in result.rows.iter().step_by(step) {
                answered(self.reg, row)?;
            }
            return kept.evaluation(self.reg, benchmark);
        }
        let evaluation = compute(self.reg, benchmark, result, seed)?;
        self.computed
            .push(EvaluationRecord::new(benchmark, id, seed, &evaluation));
        Ok(evaluation)
    }

    /// Stores the evaluations computed, when the store is open for writing.
    pub fn keep(self) -> Result<()> {
        if self.computed.is_empty() || !self.reg.writable() {
            return Ok(());
        }
        self.reg.write(|w| {
            for record in &self.computed {
                w.put(record)?;
            }
            Ok(())
        })
    }
}

/// Recomputes every kept evaluation of the current versions from its result: the problems, one
/// per evaluation that names no stored result or differs from its recomputation (a forged or
/// damaged value: its checksum is not a signature). Evaluations of other versions are never
/// read and not checked; records that do not decode are left to `cache::verify`.
pub fn verify(reg: &Store, benchmarks: Catalogue) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for (id, body) in reg.scan(EvaluationRecord::KIND)? {
        let Ok(body) = body else { continue };
        let Ok(kept) = decode::<EvaluationRecord>(&body, reg.path(), &id) else {
            continue;
        };
        let Ok(named) = benchmarks.named(&kept.benchmark) else {
            continue;
        };
        let result = Id(kept.result);
        if EvaluationRecord::key(named, result, kept.seed) != id {
            continue;
        }
        // Bit for bit: the archive a recomputation would keep is the one kept.
        let recomputed = reg
            .get::<ResultRecord>(&result)?
            .ok_or_else(|| anyhow!("it names result {}, which the store lacks", result.short()))
            .and_then(|r| {
                let set = reg.get::<StoredSet>(&Id(r.set))?.with_context(|| {
                    format!("its result names a missing set {}", Id(r.set).short())
                })?;
                let benchmark = benchmarks.named(&set.benchmark)?;
                let evaluation = compute(reg, benchmark, &r, kept.seed)?;
                let fresh = EvaluationRecord::new(benchmark, result, kept.seed, &evaluation);
                Ok(rkyv::to_bytes::<rkyv::rancor::Error>(&fresh)?)
            });
        let problem = match recomputed {
            Ok(fresh) if fresh.as_slice() == body.as_slice() => continue,
            Ok(_) => "differs from its recomputation".to_string(),
            Err(e) => format!("cannot be recomputed: {e:#}"),
        };
        problems.push(format!(
            "{}: evaluation {} of result {} {problem}",
            reg.path().display(),
            id.short(),
            result.short()
        ));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept evaluation takes what its benchmark's evaluations share from the evaluation of no
    /// items: every built-in benchmark must make one.
    #[test]
    fn every_benchmark_evaluates_no_items() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
        for benchmark in crate::benchmarks::ALL.iter() {
            let e = benchmark.evaluate(&reg, &[], 7).unwrap();
            assert_eq!(e.n, 0, "{}", benchmark.name());
        }
    }

    /// The key names the evaluation: another seed or another version is another record.
    #[test]
    fn the_key_covers_result_benchmark_versions_and_seed() {
        let b = crate::benchmarks::ALL.named("static").unwrap();
        let key = |result: u8, seed| EvaluationRecord::key(b, Id([result; 32]), seed);
        assert_ne!(key(1, 7), key(2, 7));
        assert_ne!(key(1, 7), key(1, 8));
        let record = EvaluationRecord {
            result: [1; 32],
            benchmark: "static".into(),
            evaluator: b.evaluator(),
            version: VERSION,
            seed: 7,
            n: 0,
            groups: Vec::new(),
            metrics: "null".into(),
        };
        assert_eq!(record.id(), key(1, 7));
        let older = EvaluationRecord {
            version: VERSION - 1,
            ..record
        };
        assert_ne!(older.id(), key(1, 7));
    }
}
