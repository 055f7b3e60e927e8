//! The DeltaLogic metrics, derived from one row per scored episode.
//!
//! With gold labels `y0`, `y1` and the model's answers `ŷ0` (original premises) and `ŷ1` (edited
//! premises):
//!
//! | metric | definition | conditioning set |
//! |---|---|---|
//! | initial accuracy | P(ŷ0 = y0) | all episodes |
//! | revision accuracy | P(ŷ1 = y1) | all episodes |
//! | revision gap | initial accuracy − revision accuracy (positive: the model does worse after the edit) | all episodes |
//! | inertia | P(ŷ1 = ŷ0 \| y1 ≠ y0, ŷ0 = y0) | gold changes and the first answer was right |
//! | over-flip | P(ŷ1 ≠ ŷ0 \| y1 = y0, ŷ0 = y0) | gold stays and the first answer was right |
//! | abstain | P(ŷ1 = Uncertain) | all episodes |
//!
//! A metric whose conditioning set is empty has `n = 0` and no value (never NaN). Intervals are
//! 95% percentile bootstrap intervals: episodes are resampled with replacement from a seeded
//! [`Rng`], so the same rows, seed and resample count always give the same intervals.

use crate::benchmarks::deltalogic::EditType;
use crate::benchmarks::view::{conditioning, within};
use crate::logic::Label;
use crate::metrics::{estimate, Derived, Metric, Outcome};
use serde::Serialize;
use std::collections::BTreeMap;

/// One scored episode: its gold labels and the model's answers before and after the edit.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The episode id (hex).
    pub episode: String,
    pub source: String,
    pub edit_type: EditType,
    pub y0: Label,
    pub y1: Label,
    pub pred0: Label,
    pub pred1: Label,
}

#[derive(Clone, Debug, Serialize)]
pub struct Metrics {
    /// Number of episodes.
    pub n: usize,
    pub initial_accuracy: Metric,
    pub revision_accuracy: Metric,
    pub revision_gap: Metric,
    pub inertia: Metric,
    pub over_flip: Metric,
    pub abstain: Metric,
}

impl Metrics {
    /// Stable keys of the metrics in Table 1 order (the JSON field names).
    pub const KEYS: [&'static str; 6] = [
        "initial_accuracy",
        "revision_accuracy",
        "revision_gap",
        "inertia",
        "over_flip",
        "abstain",
    ];

    /// The metrics in Table 1 order, with their [`Metrics::KEYS`].
    pub fn entries(&self) -> [(&'static str, &Metric); 6] {
        let metrics = [
            &self.initial_accuracy,
            &self.revision_accuracy,
            &self.revision_gap,
            &self.inertia,
            &self.over_flip,
            &self.abstain,
        ];
        std::array::from_fn(|i| (Self::KEYS[i], metrics[i]))
    }
}

/// The metrics overall, per edit type and per source. Only groups present in the rows appear;
/// keys are [`EditType::as_str`] and the source names.
#[derive(Clone, Debug, Serialize)]
pub struct Breakdown {
    pub overall: Metrics,
    pub by_edit_type: BTreeMap<String, Metrics>,
    pub by_source: BTreeMap<String, Metrics>,
}

/// The proportions counted directly from rows, in this order; the gap is derived from the first
/// two.
const INITIAL: usize = 0;
const REVISION: usize = 1;
const INERTIA: usize = 2;
const OVER_FLIP: usize = 3;
const ABSTAIN: usize = 4;
const RATES: usize = 5;
/// Index of the gap among the metrics [`estimate`] returns.
const GAP: usize = RATES;

fn outcome(r: &Row) -> Outcome<RATES> {
    let first_right = r.pred0 == r.y0;
    let kept = r.pred1 == r.pred0;
    let mut o = [(false, false); RATES];
    o[INITIAL] = (true, first_right);
    o[REVISION] = (true, r.pred1 == r.y1);
    o[INERTIA] = (r.y1 != r.y0 && first_right, kept);
    o[OVER_FLIP] = (r.y1 == r.y0 && first_right, !kept);
    o[ABSTAIN] = (true, r.pred1 == Label::Uncertain);
    o
}

const DELTALOGIC_DERIVED: [Derived; 1] = [Derived {
    value: |v| v[INITIAL].zip(v[REVISION]).map(|(i, r)| i - r),
    n_of: &[INITIAL],
}];

/// All metrics over `rows`, with 95% percentile bootstrap intervals from `resamples` resamples
/// (0: no intervals).
pub fn compute(rows: &[Row], seed: u64, resamples: usize) -> Metrics {
    let outcomes: Vec<Outcome<RATES>> = rows.iter().map(outcome).collect();
    let m = estimate(&outcomes, &DELTALOGIC_DERIVED, seed, resamples);
    Metrics {
        n: rows.len(),
        initial_accuracy: m[INITIAL].clone(),
        revision_accuracy: m[REVISION].clone(),
        revision_gap: m[GAP].clone(),
        inertia: m[INERTIA].clone(),
        over_flip: m[OVER_FLIP].clone(),
        abstain: m[ABSTAIN].clone(),
    }
}

/// The estimates of [`compute`] in [`Metrics::KEYS`] order.
const KEY_ORDER: [usize; 6] = [INITIAL, REVISION, GAP, INERTIA, OVER_FLIP, ABSTAIN];

/// The rows of each group of a [`Breakdown`], as positions in `rows`, in its order: overall,
/// then per edit type, then per source.
fn groups(rows: &[Row]) -> Vec<(&'static str, String, Vec<u32>)> {
    let by = |by: &'static str, key: fn(&Row) -> String| {
        let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (i, r) in rows.iter().enumerate() {
            groups.entry(key(r)).or_default().push(i as u32);
        }
        groups.into_iter().map(move |(k, g)| (by, k, g))
    };
    let mut out = vec![(
        "overall",
        "all".to_string(),
        (0..rows.len() as u32).collect(),
    )];
    out.extend(by("edit-type", |r| r.edit_type.as_str().to_string()));
    out.extend(by("source", |r| r.source.clone()));
    out
}

/// The metrics overall and per group; every group is bootstrapped on its own rows.
pub fn breakdown(rows: &[Row], seed: u64, resamples: usize) -> Breakdown {
    let mut b = Breakdown {
        overall: compute(rows, seed, resamples),
        by_edit_type: BTreeMap::new(),
        by_source: BTreeMap::new(),
    };
    for (by, value, at) in groups(rows).into_iter().skip(1) {
        let group: Vec<Row> = at.iter().map(|&i| rows[i as usize].clone()).collect();
        let m = compute(&group, seed, resamples);
        match by {
            "edit-type" => b.by_edit_type.insert(value, m),
            _ => b.by_source.insert(value, m),
        };
    }
    b
}

/// The rows each metric of each group of [`breakdown`] counts (its conditioning set), as
/// positions in `rows`, in [`Metrics::KEYS`] order; groups as the evaluation lists them.
pub fn counted(rows: &[Row]) -> Vec<Vec<Vec<u32>>> {
    groups(rows)
        .into_iter()
        .map(|(_, _, at)| {
            let outcomes: Vec<Outcome<RATES>> =
                at.iter().map(|&i| outcome(&rows[i as usize])).collect();
            let sets = conditioning(&outcomes, &DELTALOGIC_DERIVED);
            KEY_ORDER
                .iter()
                .map(|&k| within(&at, sets[k].clone()))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use EditType::*;
    use Label::{False as F, True as T, Uncertain as U};

    fn row(edit_type: EditType, y0: Label, y1: Label, pred0: Label, pred1: Label) -> Row {
        Row {
            episode: String::new(),
            source: "generated".into(),
            edit_type,
            y0,
            y1,
            pred0,
            pred1,
        }
    }

    const EMPTY: Metric = Metric {
        value: None,
        n: 0,
        lo: None,
        hi: None,
    };

    fn close(m: &Metric, value: f64, n: usize) {
        let v = m.value.expect("a value");
        assert!((v - value).abs() < 1e-12, "{v} != {value}");
        assert_eq!(m.n, n);
    }

    /// Six episodes, every case once or twice:
    /// 1. gold changes, first right, kept (inertia)       2. gold changes, first right, revised
    /// 3. gold changes, first wrong                       4. gold stays, first right, flipped
    /// 5. gold stays, first right, kept                   6. gold stays, first wrong, abstains
    fn six() -> Vec<Row> {
        vec![
            row(SupportRemoval, T, U, T, T),
            row(SupportInsertion, U, T, U, T),
            row(SupportInsertion, U, F, T, U),
            row(IrrelevantAddition, F, F, F, U),
            row(IrrelevantAddition, T, T, T, T),
            row(IrrelevantAddition, T, T, F, U),
        ]
    }

    #[test]
    fn hand_computed_metrics() {
        let m = compute(&six(), 0, 0);
        assert_eq!(m.n, 6);
        // ŷ0 = y0 in rows 1, 2, 4, 5.
        close(&m.initial_accuracy, 4.0 / 6.0, 6);
        // ŷ1 = y1 in rows 2, 5.
        close(&m.revision_accuracy, 2.0 / 6.0, 6);
        close(&m.revision_gap, 2.0 / 6.0, 6);
        // Gold changes and first right: rows 1, 2; kept in row 1.
        close(&m.inertia, 0.5, 2);
        // Gold stays and first right: rows 4, 5; flipped in row 4.
        close(&m.over_flip, 0.5, 2);
        // ŷ1 = Uncertain in rows 3, 4, 6.
        close(&m.abstain, 0.5, 6);
        // No resamples, no intervals.
        assert!(m
            .entries()
            .iter()
            .all(|(_, x)| x.lo.is_none() && x.hi.is_none()));
    }

    #[test]
    fn gap_is_initial_minus_revision_and_can_be_negative() {
        let rows = [row(SupportInsertion, U, T, F, T)];
        let m = compute(&rows, 0, 0);
        close(&m.revision_gap, -1.0, 1);
    }

    #[test]
    fn empty_conditions_have_no_value() {
        // Gold always stays, so inertia is undefined; the first answer is always wrong, so
        // over-flip is too.
        let rows = [row(IrrelevantAddition, T, T, F, F)];
        let m = compute(&rows, 1, 200);
        for x in [&m.inertia, &m.over_flip] {
            assert_eq!(*x, EMPTY);
        }
        close(&m.initial_accuracy, 0.0, 1);
        assert_eq!((m.abstain.lo, m.abstain.hi), (Some(0.0), Some(0.0)));
    }

    #[test]
    fn no_rows_no_values() {
        let m = compute(&[], 3, 100);
        assert_eq!(m.n, 0);
        for (name, x) in m.entries() {
            assert_eq!(*x, EMPTY, "{name}");
        }
    }

    /// 80 episodes mixing all six cases, so every metric varies across resamples.
    fn many() -> Vec<Row> {
        let base = six();
        (0..80)
            .map(|i| base[(i * 7 + i / 6) % base.len()].clone())
            .collect()
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_estimate() {
        let rows = many();
        let a = compute(&rows, 42, 500);
        let b = compute(&rows, 42, 500);
        for ((name, x), (_, y)) in a.entries().into_iter().zip(b.entries()) {
            assert_eq!(x, y, "{name}");
            let (v, lo, hi) = (x.value.unwrap(), x.lo.unwrap(), x.hi.unwrap());
            assert!(lo <= v && v <= hi, "{name}: {v} outside [{lo}, {hi}]");
            assert!(lo < hi, "{name}: a degenerate interval from varied data");
        }
    }

    #[test]
    fn another_seed_gives_other_intervals() {
        let rows = many();
        let a = compute(&rows, 1, 300);
        let b = compute(&rows, 2, 300);
        let differ = a
            .entries()
            .into_iter()
            .zip(b.entries())
            .filter(|((_, x), (_, y))| (x.lo, x.hi) != (y.lo, y.hi))
            .count();
        assert!(differ >= 4, "only {differ} of 6 intervals changed");
        // Point estimates do not depend on the seed.
        assert_eq!(a.inertia.value, b.inertia.value);
    }

    #[test]
    fn counted_rows_are_the_conditioning_sets_of_every_group() {
        let mut rows = six();
        rows[0].source = "folio".into();
        let b = breakdown(&rows, 0, 0);
        let mut metrics = vec![&b.overall];
        metrics.extend(b.by_edit_type.values());
        metrics.extend(b.by_source.values());
        let counted = counted(&rows);
        assert_eq!(counted.len(), metrics.len());
        for (sets, m) in counted.iter().zip(metrics) {
            for (set, (key, x)) in sets.iter().zip(m.entries()) {
                assert_eq!(set.len(), x.n, "{key}");
            }
        }
        // Overall inertia counts rows 1 and 2 (gold changes, first answer right); over-flip
        // rows 4 and 5; the folio group is row 1 alone.
        assert_eq!(counted[0][3], [0, 1]);
        assert_eq!(counted[0][4], [3, 4]);
        let folio = counted.len() - 2;
        assert_eq!(counted[folio][0], [0]);
        // The support-insertion group's inertia: row 2 (its first answer right), not row 3.
        assert_eq!(counted[2][3], [1]);
    }

    #[test]
    fn breakdown_groups_by_edit_type_and_source() {
        let mut rows = six();
        rows[0].source = "folio".into();
        let b = breakdown(&rows, 0, 50);
        let keys = |m: &BTreeMap<String, Metrics>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&b.by_edit_type),
            [
                "irrelevant-addition",
                "support-insertion",
                "support-removal"
            ]
        );
        assert_eq!(keys(&b.by_source), ["folio", "generated"]);
        assert_eq!(b.overall.n, 6);
        let irrelevant = &b.by_edit_type["irrelevant-addition"];
        assert_eq!(irrelevant.n, 3);
        close(&irrelevant.over_flip, 0.5, 2);
        assert_eq!(irrelevant.inertia.n, 0);
        assert_eq!(b.by_source["folio"].n, 1);
        close(&b.by_source["folio"].inertia, 1.0, 1);
    }
}
