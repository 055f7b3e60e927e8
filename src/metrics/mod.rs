//! Metric machinery every benchmark shares: proportions over conditioning sets, values derived
//! from them, means of per-unit scores, and seeded 95% percentile bootstrap intervals. A metric
//! whose conditioning set is empty has `n = 0` and no value (never NaN); the same rows, seed and
//! resample count always give the same intervals. Benchmark-specific formulas live in each
//! benchmark's folder (`crate::benchmarks::*::metrics`).

use crate::rng::Rng;
use serde::Serialize;

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
    let mut rng = Rng::derive(seed, "metrics/bootstrap");
    for _ in 0..resamples {
        let mut counts = Counts::<N>::new();
        for _ in 0..outcomes.len() {
            counts.add(&outcomes[rng.below(outcomes.len())]);
        }
        for (s, v) in samples.iter_mut().zip(counts.values(derived)) {
            s.extend(v);
        }
    }
    samples
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
        let mut rng = Rng::derive(seed, stream);
        for _ in 0..resamples {
            let mut draw = (0..values.len()).map(|_| values[rng.below(values.len())]);
            samples.extend(mean(&mut draw));
        }
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
    fn percentile_interpolates() {
        let s = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&s, 0.0), 0.0);
        assert_eq!(percentile(&s, 0.5), 2.0);
        assert!((percentile(&s, 0.975) - 3.9).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.025), 7.0);
    }
}
