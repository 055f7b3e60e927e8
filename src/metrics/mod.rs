//! Metric machinery every benchmark shares: proportions over conditioning sets, values derived
//! from them, means of per-unit scores, and seeded 95% percentile bootstrap intervals. A metric
//! whose conditioning set is empty has `n = 0` and no value (never NaN); the same rows, seed and
//! resample count always give the same intervals. Benchmark-specific formulas live in each
//! benchmark's folder (`crate::benchmarks::*::metrics`).

use crate::rng::{Below, Rng};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::{Arc, Mutex, PoisonError};

/// A proportion (or, for the revision gap, a difference of proportions) with its 95% interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metric {
    /// `None` when the conditioning set is empty.
    pub value: Option<f64>,
    /// The size of the conditioning set.
    pub n: usize,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

/// For each proportion: is the row in its conditioning set, and does the event hold.
pub type Outcome<const N: usize> = [(bool, bool); N];

/// A value computed from the proportions (the revision gap, BREU): from the proportions of the
/// rows and of every resample alike. Its n is the sum of the sizes of the sets it names.
pub struct Derived {
    pub value: fn(&[Option<f64>]) -> Option<f64>,
    pub n_of: &'static [usize],
}

struct Counts<const N: usize> {
    hits: [usize; N],
    totals: [usize; N],
}

impl<const N: usize> Counts<N> {
    fn new() -> Self {
        Counts {
            hits: [0; N],
            totals: [0; N],
        }
    }

    fn add(&mut self, o: &Outcome<N>) {
        for (k, &(in_condition, event)) in o.iter().enumerate() {
            if in_condition {
                self.totals[k] += 1;
                self.hits[k] += usize::from(event);
            }
        }
    }

    /// The N proportions, then the derived values; `None` over an empty conditioning set.
    fn values(&self, derived: &[Derived]) -> Vec<Option<f64>> {
        let mut v: Vec<Option<f64>> = self
            .hits
            .iter()
            .zip(&self.totals)
            .map(|(&hits, &total)| (total > 0).then(|| hits as f64 / total as f64))
            .collect();
        for d in derived {
            let x = (d.value)(&v[..N]);
            v.push(x);
        }
        v
    }

    /// Conditioning-set sizes, in the order of [`Counts::values`].
    fn sizes(&self, derived: &[Derived]) -> Vec<usize> {
        let mut n = self.totals.to_vec();
        n.extend(
            derived
                .iter()
                .map(|d| d.n_of.iter().map(|&k| self.totals[k]).sum::<usize>()),
        );
        n
    }
}

/// Proportions (and values derived from them) with 95% percentile bootstrap intervals from
/// `resamples` resamples of the rows' outcomes (0: no intervals): the N proportions, then the
/// derived values, in order.
pub fn estimate<const N: usize>(
    outcomes: &[Outcome<N>],
    derived: &[Derived],
    seed: u64,
    resamples: usize,
) -> Vec<Metric> {
    let mut counts = Counts::<N>::new();
    outcomes.iter().for_each(|o| counts.add(o));
    let values = counts.values(derived);
    let sizes = counts.sizes(derived);
    let mut samples = bootstrap(outcomes, derived, seed, resamples);
    (0..values.len())
        .map(|k| {
            let (lo, hi) = interval(&mut samples[k]);
            Metric {
                value: values[k],
                n: sizes[k],
                lo,
                hi,
            }
        })
        .collect()
}

/// The metric values over each resample. A resample in which a metric's conditioning set is
/// empty gives no value for it (it is left out, not counted as 0).
fn bootstrap<const N: usize>(
    outcomes: &[Outcome<N>],
    derived: &[Derived],
    seed: u64,
    resamples: usize,
) -> Vec<Vec<f64>> {
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); N + derived.len()];
    if outcomes.is_empty() {
        return samples;
    }
    let per_resample = match multiplicities(seed, outcomes.len(), resamples) {
        Some(m) => by_multiplicities(outcomes, derived, &m),
        None => by_draws(outcomes, derived, seed, resamples),
    };
    for values in per_resample {
        for (s, v) in samples.iter_mut().zip(values) {
            s.extend(v);
        }
    }
    samples
}

/// The stream every proportion's bootstrap draws from.
const BOOTSTRAP_STREAM: &str = "metrics/bootstrap";

/// Each resample's values, counting its rows as they are drawn.
fn by_draws<const N: usize>(
    outcomes: &[Outcome<N>],
    derived: &[Derived],
    seed: u64,
    resamples: usize,
) -> Vec<Vec<Option<f64>>> {
    let each = |draws: &mut Draws| {
        let mut counts = Counts::<N>::new();
        draws.for_each(|i| counts.add(&outcomes[i]));
        counts.values(derived)
    };
    resample(seed, BOOTSTRAP_STREAM, outcomes.len(), resamples, each)
}

/// Each resample's values from how often it drew each row: the same integer counts as
/// [`by_draws`], hence the same values, as sums of multiplicities over masks.
fn by_multiplicities<const N: usize>(
    outcomes: &[Outcome<N>],
    derived: &[Derived],
    multiplicities: &[Vec<u8>],
) -> Vec<Vec<Option<f64>>> {
    let mask = |keep: &dyn Fn(&Outcome<N>) -> bool| -> Vec<u8> {
        outcomes
            .iter()
            .map(|o| if keep(o) { 0xFF } else { 0 })
            .collect()
    };
    // A resample draws n rows: a proportion over every row has n of them in its set.
    let every = |k: usize| outcomes.iter().all(|o| o[k].0);
    let masks: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..N)
        .map(|k| {
            let inside = (!every(k)).then(|| mask(&|o| o[k].0));
            (inside, mask(&|o| o[k].0 && o[k].1))
        })
        .collect();
    multiplicities
        .par_iter()
        .map(|m| {
            let mut counts = Counts::<N>::new();
            for (k, (inside, hit)) in masks.iter().enumerate() {
                counts.totals[k] = inside.as_ref().map_or(m.len(), |i| masked_sum(m, i));
                counts.hits[k] = masked_sum(m, hit);
            }
            counts.values(derived)
        })
        .collect()
}

/// Σ m[i] over the rows whose mask byte is 0xFF.
fn masked_sum(m: &[u8], mask: &[u8]) -> usize {
    // In blocks whose sum fits a u32, so the compiler keeps the loop in vector registers.
    m.chunks(1 << 16)
        .zip(mask.chunks(1 << 16))
        .map(|(m, mask)| {
            m.iter()
                .zip(mask)
                .map(|(&x, &k)| u32::from(x & k))
                .sum::<u32>() as usize
        })
        .sum()
}

/// Bytes of multiplicities a process keeps (one byte per row and resample).
const MULTIPLICITY_BUDGET: usize = 512 << 20;

type Multiplicities = Arc<Vec<Vec<u8>>>;

/// (seed, rows, resamples).
type Stream = (u64, usize, usize);

/// Multiplicities computed so far; `None`: a count passed 255.
static MEMO: Mutex<Vec<(Stream, Option<Multiplicities>)>> = Mutex::new(Vec::new());

/// How often each of `n` rows is drawn in each resample of the bootstrap stream. They depend on
/// the seed, the row count and the resample count only, so every result of a set (one per
/// model, template and normalisation) and every group of the same size shares them: a report
/// computes them once and each estimate sums them over its own masks, instead of drawing
/// every index again (a report over 3 results of 112,000 rows drew 1.3 billion). `None` when
/// they would pass the budget or a count does not fit a byte: then the caller draws.
fn multiplicities(seed: u64, n: usize, resamples: usize) -> Option<Multiplicities> {
    let key = (seed, n, resamples);
    {
        let memo = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, m)) = memo.iter().find(|(k, _)| *k == key) {
            return m.clone();
        }
        let held: usize = memo
            .iter()
            .filter_map(|((_, n, r), m)| m.as_ref().map(|_| n * r))
            .sum();
        if held + n * resamples > MULTIPLICITY_BUDGET {
            return None;
        }
    }
    // Drawn without the lock: the draws run on the thread pool, which may be running callers.
    let each = |draws: &mut Draws| {
        let mut m = vec![0u8; n];
        let mut fits = true;
        for i in draws {
            let (count, over) = m[i].overflowing_add(1);
            m[i] = count;
            fits &= !over;
        }
        fits.then_some(m)
    };
    let m: Option<Vec<Vec<u8>>> = resample(seed, BOOTSTRAP_STREAM, n, resamples, each)
        .into_iter()
        .collect();
    let mut memo = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    // Another caller may have drawn the same meanwhile: keep one copy.
    if let Some((_, kept)) = memo.iter().find(|(k, _)| *k == key) {
        return kept.clone();
    }
    let m = m.map(Arc::new);
    memo.push((key, m.clone()));
    m
}

/// The `n` row indices of one resample, drawn in order from the seeded stream.
struct Draws {
    rng: Rng,
    below: Below,
    left: usize,
    /// A raw draw was rejected: the stream moved more than one step per index.
    rejected: bool,
}

impl Iterator for Draws {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        self.left = self.left.checked_sub(1)?;
        let (i, rejected) = self.below.draw(&mut self.rng);
        self.rejected |= rejected;
        Some(i)
    }
}

/// Resamples per parallel task.
const CHUNK: usize = 25;

/// `each` over `resamples` resamples of `n` rows, with exactly the indices that `Rng::below(n)`
/// would draw one after another from the stream `(seed, stream)`, resample after resample.
///
/// Resample r starts r·n raw draws into the stream unless an earlier raw draw was rejected
/// (probability below n / 2⁶⁴ per draw), so chunks of resamples run in parallel, each from its
/// computed start. A rejection inside a chunk shifts every later chunk: then all resamples are
/// drawn again in sequence, so the values never depend on the chunking or the thread count.
fn resample<T: Send>(
    seed: u64,
    stream: &str,
    n: usize,
    resamples: usize,
    each: impl Fn(&mut Draws) -> T + Sync,
) -> Vec<T> {
    resample_from(Rng::derive(seed, stream), Below::new(n), n, resamples, each)
}

/// [`resample`] from a stream's start, with `n` draws per resample from `below` (apart so that
/// a test can make rejections likely with a huge bound and few draws).
fn resample_from<T: Send>(
    start: Rng,
    below: Below,
    n: usize,
    resamples: usize,
    each: impl Fn(&mut Draws) -> T + Sync,
) -> Vec<T> {
    let run = |rng: Rng, count: usize| {
        let mut draws = Draws {
            rng,
            below,
            left: 0,
            rejected: false,
        };
        let out: Vec<T> = (0..count)
            .map(|_| {
                draws.left = n;
                let value = each(&mut draws);
                // Whatever `each` left undrawn is drawn, so the next resample starts in place.
                draws.by_ref().for_each(drop);
                value
            })
            .collect();
        (out, draws.rejected)
    };
    let chunks: Vec<(Vec<T>, bool)> = (0..resamples.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut rng = start.clone();
            rng.skip((c * CHUNK) as u64 * n as u64);
            run(rng, CHUNK.min(resamples - c * CHUNK))
        })
        .collect();
    let shifted = chunks.iter().rev().skip(1).any(|(_, rejected)| *rejected);
    if shifted {
        return run(start, resamples).0;
    }
    chunks.into_iter().flat_map(|(out, _)| out).collect()
}

/// The mean of per-unit scores (RobustLR: one weighted F1 per theory) with a 95% percentile
/// bootstrap interval over the units, from the seeded sub-stream `stream`.
pub fn mean_metric(values: &[f64], seed: u64, stream: &str, resamples: usize) -> Metric {
    let mean = |xs: &mut dyn Iterator<Item = f64>| {
        let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
        (n > 0).then(|| sum / n as f64)
    };
    let mut samples = Vec::new();
    if !values.is_empty() {
        let each = |draws: &mut Draws| mean(&mut draws.map(|i| values[i]));
        samples.extend(
            resample(seed, stream, values.len(), resamples, each)
                .into_iter()
                .flatten(),
        );
    }
    let (lo, hi) = interval(&mut samples);
    Metric {
        value: mean(&mut values.iter().copied()),
        n: values.len(),
        lo,
        hi,
    }
}

/// The 2.5th and 97.5th percentiles (linear interpolation between order statistics).
fn interval(samples: &mut [f64]) -> (Option<f64>, Option<f64>) {
    if samples.is_empty() {
        return (None, None);
    }
    samples.sort_by(f64::total_cmp);
    (
        Some(percentile(samples, 0.025)),
        Some(percentile(samples, 0.975)),
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = p * (sorted.len() - 1) as f64;
    let (below, above) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[below] + (sorted[above] - sorted[below]) * (rank - below as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_resamples_are_the_sequential_draws() {
        let sequential =
            |rng: &mut Rng, bound: usize, n: usize, resamples: usize| -> Vec<Vec<usize>> {
                (0..resamples)
                    .map(|_| (0..n).map(|_| rng.below(bound)).collect())
                    .collect()
            };
        for (bound, n) in [
            (1, 1),
            (7, 7),
            (1000, 1000),
            (1 << 63 | 1, 3),
            (usize::MAX / 3 * 2, 5),
        ] {
            // The last two bounds reject about half and a third of the raw draws: chunks
            // start in the wrong place and everything is drawn again in sequence.
            let resamples = 3 * CHUNK + 4;
            let got = resample_from(Rng::new(9), Below::new(bound), n, resamples, |d| {
                d.collect::<Vec<_>>()
            });
            assert_eq!(
                got,
                sequential(&mut Rng::new(9), bound, n, resamples),
                "{bound}"
            );
            // A closure that stops early leaves the stream where the next resample expects it.
            let firsts = resample_from(Rng::new(9), Below::new(bound), n, resamples, |d| d.next());
            let expected: Vec<Option<usize>> = got.iter().map(|r| r.first().copied()).collect();
            assert_eq!(firsts, expected);
        }
    }

    #[test]
    fn multiplicities_give_the_values_of_the_draws() {
        fn gap(v: &[Option<f64>]) -> Option<f64> {
            Some(v[0]? - v[1]?)
        }
        let derived = [Derived {
            value: gap,
            n_of: &[0, 1],
        }];
        let mut rng = Rng::new(5);
        for n in [1, 2, 9, 1000] {
            let outcomes: Vec<Outcome<2>> = (0..n)
                .map(|_| {
                    let mut o = || (rng.below(3) > 0, rng.below(2) == 0);
                    [(true, o().1), o()]
                })
                .collect();
            let resamples = 2 * CHUNK + 1;
            let m = multiplicities(11, n, resamples).expect("within the budget");
            assert_eq!(
                by_multiplicities(&outcomes, &derived, &m),
                by_draws(&outcomes, &derived, 11, resamples),
                "{n} rows"
            );
        }
    }

    #[test]
    fn percentile_interpolates() {
        let s = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&s, 0.0), 0.0);
        assert_eq!(percentile(&s, 0.5), 2.0);
        assert!((percentile(&s, 0.975) - 3.9).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.025), 7.0);
    }
}
