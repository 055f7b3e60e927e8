//! Metrics of question sets, per benchmark, from one row per scored question.
//!
//! Belief-R (Wilie et al. 2024, the ΔR framework), with `ŷt`, `ŷt+1` the answers at step t and at
//! step t+1 (a fresh question over the step-t premises plus one):
//!
//! | metric | definition | conditioning set |
//! |---|---|---|
//! | Acc@t | P(ŷt = yt) | step-t questions (Basic@t) |
//! | BU-Acc | P(ŷt+1 = yt+1) | belief update (gold changes to (c)) and ŷt = yt |
//! | BM-Acc | P(ŷt+1 = yt+1) | belief maintain (gold stays) and ŷt = yt |
//! | BREU | (BU-Acc + BM-Acc) / 2 | |
//! | BU-Acc, BM-Acc, BREU (all) | the same over every step-t+1 question, ŷt right or not | |
//! | inertia | P(ŷt+1 = ŷt) | belief update and ŷt = yt: the BU errors that keep the old answer |
//! | over-flip | P(ŷt+1 ≠ ŷt) | belief maintain and ŷt = yt: the BM errors (= 1 − BM-Acc) |
//!
//! Inertia and over-flip are DeltaLogic's definitions applied to the (t, t+1) pairs. Every other
//! benchmark gets accuracy overall and per tag of [`GROUP_TAGS`]; a benchmark with metrics of its
//! own adds a [`BenchmarkMetrics`] variant: RobustLR's weighted F1 and consistency
//! ([`robustlr`]).

use crate::benchmarks::question::{group_by, QuestionRow};
use crate::benchmarks::view::{conditioning, within};
use crate::metrics::{estimate, Derived, Metric, Outcome};
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;

const ACC_T: usize = 0;
const BU: usize = 1;
const BM: usize = 2;
const BU_ALL: usize = 3;
const BM_ALL: usize = 4;
const INERTIA: usize = 5;
const OVER_FLIP: usize = 6;
const PROPORTIONS: usize = 7;
const BREU: usize = PROPORTIONS;
const BREU_ALL: usize = PROPORTIONS + 1;

const BREU_DERIVED: [Derived; 2] = [
    Derived {
        value: |v| v[BU].zip(v[BM]).map(|(u, m)| (u + m) / 2.0),
        n_of: &[BU, BM],
    },
    Derived {
        value: |v| v[BU_ALL].zip(v[BM_ALL]).map(|(u, m)| (u + m) / 2.0),
        n_of: &[BU_ALL, BM_ALL],
    },
];

#[derive(Clone, Debug, Serialize)]
pub struct BeliefRMetrics {
    /// Step-t questions and step-t+1 questions among the rows.
    pub n_t: usize,
    pub n_t1: usize,
    pub acc_t: Metric,
    pub bu_acc: Metric,
    pub bm_acc: Metric,
    pub breu: Metric,
    pub bu_acc_all: Metric,
    pub bm_acc_all: Metric,
    pub breu_all: Metric,
    pub inertia: Metric,
    pub over_flip: Metric,
}

impl BeliefRMetrics {
    /// Stable keys in table order (the JSON field names).
    pub const KEYS: [&'static str; 9] = [
        "acc_t",
        "bu_acc",
        "bm_acc",
        "breu",
        "bu_acc_all",
        "bm_acc_all",
        "breu_all",
        "inertia",
        "over_flip",
    ];

    pub fn entries(&self) -> [(&'static str, &Metric); 9] {
        let m = [
            &self.acc_t,
            &self.bu_acc,
            &self.bm_acc,
            &self.breu,
            &self.bu_acc_all,
            &self.bm_acc_all,
            &self.breu_all,
            &self.inertia,
            &self.over_flip,
        ];
        std::array::from_fn(|i| (Self::KEYS[i], m[i]))
    }
}

/// Belief-R metrics overall and per split; every split is bootstrapped on its own rows.
#[derive(Clone, Debug, Serialize)]
pub struct BeliefRBreakdown {
    pub overall: BeliefRMetrics,
    /// `modus`: ponens, tollens.
    pub by_modus: BTreeMap<String, BeliefRMetrics>,
    /// `effect` (the dataset's `types_of_relation`).
    pub by_effect: BTreeMap<String, BeliefRMetrics>,
    /// `agreement`: strong, weak (step t+1 rows only, so no Acc@t).
    pub by_agreement: BTreeMap<String, BeliefRMetrics>,
}

/// Each row's outcome; a step-t+1 row is joined with the answer to the question it revises.
fn beliefr_outcomes(rows: &[QuestionRow]) -> Result<Vec<Outcome<PROPORTIONS>>> {
    let by_id: BTreeMap<&str, &QuestionRow> =
        rows.iter().map(|r| (r.question.as_str(), r)).collect();
    rows.iter()
        .map(|r| {
            let mut o = [(false, false); PROPORTIONS];
            let Some(before) = &r.revises else {
                o[ACC_T] = (true, r.pred == r.gold);
                return Ok(o);
            };
            let Some(t) = by_id.get(before.as_str()) else {
                bail!(
                    "question {} revises question {}, which the result does not hold",
                    &r.question[..12],
                    &before[..before.len().min(12)]
                );
            };
            let first_right = t.pred == t.gold;
            let right = r.pred == r.gold;
            let kept = r.pred == t.pred;
            let update = r.gold != t.gold;
            o[BU] = (update && first_right, right);
            o[BM] = (!update && first_right, right);
            o[BU_ALL] = (update, right);
            o[BM_ALL] = (!update, right);
            o[INERTIA] = (update && first_right, kept);
            o[OVER_FLIP] = (!update && first_right, !kept);
            Ok(o)
        })
        .collect()
}

fn beliefr_metrics(
    outcomes: &[Outcome<PROPORTIONS>],
    seed: u64,
    resamples: usize,
) -> BeliefRMetrics {
    let m = estimate(outcomes, &BREU_DERIVED, seed, resamples);
    let n_t = outcomes.iter().filter(|o| o[ACC_T].0).count();
    BeliefRMetrics {
        n_t,
        n_t1: outcomes.len() - n_t,
        acc_t: m[ACC_T].clone(),
        bu_acc: m[BU].clone(),
        bm_acc: m[BM].clone(),
        breu: m[BREU].clone(),
        bu_acc_all: m[BU_ALL].clone(),
        bm_acc_all: m[BM_ALL].clone(),
        breu_all: m[BREU_ALL].clone(),
        inertia: m[INERTIA].clone(),
        over_flip: m[OVER_FLIP].clone(),
    }
}

/// The tags whose values split the metrics, in the evaluation's order.
const SPLITS: [&str; 3] = ["modus", "effect", "agreement"];

/// The estimates of [`beliefr_metrics`] in [`BeliefRMetrics::KEYS`] order.
const KEY_ORDER: [usize; 9] = [
    ACC_T, BU, BM, BREU, BU_ALL, BM_ALL, BREU_ALL, INERTIA, OVER_FLIP,
];

/// The rows each metric of each group of [`beliefr`] counts (its conditioning set), as
/// positions in `rows`, in [`BeliefRMetrics::KEYS`] order; groups overall, then each split's
/// values.
pub fn counted(rows: &[QuestionRow]) -> Result<Vec<Vec<Vec<u32>>>> {
    let outcomes = beliefr_outcomes(rows)?;
    let positions: Vec<u32> = (0..rows.len() as u32).collect();
    let mut groups = vec![positions.clone()];
    for key in SPLITS {
        groups.extend(group_by(rows, &positions, key).into_values());
    }
    Ok(groups
        .into_iter()
        .map(|at| {
            let o: Vec<Outcome<PROPORTIONS>> = at.iter().map(|&i| outcomes[i as usize]).collect();
            let sets = conditioning(&o, &BREU_DERIVED);
            KEY_ORDER
                .iter()
                .map(|&k| within(&at, sets[k].clone()))
                .collect()
        })
        .collect())
}

/// Groups per-row values by a tag; rows without the tag are in no group.
pub fn beliefr(rows: &[QuestionRow], seed: u64, resamples: usize) -> Result<BeliefRBreakdown> {
    let outcomes = beliefr_outcomes(rows)?;
    let by = |key: &str| {
        group_by(rows, &outcomes, key)
            .into_iter()
            .map(|(g, o)| (g, beliefr_metrics(&o, seed, resamples)))
            .collect()
    };
    Ok(BeliefRBreakdown {
        overall: beliefr_metrics(&outcomes, seed, resamples),
        by_modus: by(SPLITS[0]),
        by_effect: by(SPLITS[1]),
        by_agreement: by(SPLITS[2]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::Label;
    use Label::{False as F, True as T, Uncertain as U};

    fn row(id: &str, gold: Label, pred: Label, revises: Option<&str>, modus: &str) -> QuestionRow {
        QuestionRow {
            question: format!("{id:0<64}"),
            gold,
            pred,
            revises: revises.map(|r| format!("{r:0<64}")),
            tags: vec![("modus".into(), modus.into())],
        }
    }

    fn close(m: &Metric, value: f64, n: usize) {
        let v = m.value.expect("a value");
        assert!((v - value).abs() < 1e-12, "{v} != {value}");
        assert_eq!(m.n, n);
    }

    /// Three step-t questions (two right) and six step-t+1 questions:
    /// BU after a right t: kept (inertia), updated to (c), answered the other way;
    /// BM after a right t: kept, flipped to (c); BU after the wrong t: updated.
    fn rows() -> Vec<QuestionRow> {
        vec![
            row("a1", T, T, None, "ponens"),
            row("a2", F, F, None, "tollens"),
            row("a3", T, F, None, "ponens"),
            row("b1", U, T, Some("a1"), "ponens"),
            row("b2", U, U, Some("a1"), "ponens"),
            row("b3", U, T, Some("a2"), "tollens"),
            row("b4", T, T, Some("a1"), "ponens"),
            row("b5", F, U, Some("a2"), "tollens"),
            row("b6", U, U, Some("a3"), "ponens"),
        ]
    }

    #[test]
    fn hand_computed_beliefr_metrics() {
        let b = beliefr(&rows(), 0, 0).unwrap();
        let m = &b.overall;
        assert_eq!((m.n_t, m.n_t1), (3, 6));
        close(&m.acc_t, 2.0 / 3.0, 3);
        // BU with step t right: b1 (kept T), b2 (right), b3 (T after F: wrong, changed).
        close(&m.bu_acc, 1.0 / 3.0, 3);
        close(&m.inertia, 1.0 / 3.0, 3);
        // BM with step t right: b4 (right), b5 (flipped to U).
        close(&m.bm_acc, 0.5, 2);
        close(&m.over_flip, 0.5, 2);
        close(&m.breu, (1.0 / 3.0 + 0.5) / 2.0, 5);
        // Over all step-t+1 rows, b6 (right after a wrong step t) counts too.
        close(&m.bu_acc_all, 2.0 / 4.0, 4);
        close(&m.bm_acc_all, 0.5, 2);
        close(&m.breu_all, 0.5, 6);
        assert!(m.entries().iter().all(|(_, x)| x.lo.is_none()));

        let tollens = &b.by_modus["tollens"];
        // a2 right; b3 wrong (BU), b5 flipped (BM).
        close(&tollens.acc_t, 1.0, 1);
        close(&tollens.bu_acc, 0.0, 1);
        close(&tollens.over_flip, 1.0, 1);
        assert!(b.by_agreement.is_empty(), "no row has an agreement tag");
    }

    #[test]
    fn a_revision_of_a_missing_question_is_an_error() {
        let mut r = rows();
        r.remove(0);
        let e = beliefr(&r, 0, 0).unwrap_err().to_string();
        assert!(e.contains("which the result does not hold"), "{e}");
    }

    #[test]
    fn intervals_are_seeded_and_bracket_the_estimate() {
        let many: Vec<QuestionRow> = (0..20)
            .flat_map(|i| {
                rows().into_iter().map(move |mut r| {
                    r.question = format!("{i:02}{}", r.question);
                    r.revises = r.revises.map(|x| format!("{i:02}{x}"));
                    r
                })
            })
            .collect();
        let a = beliefr(&many, 5, 300).unwrap().overall;
        let b = beliefr(&many, 5, 300).unwrap().overall;
        for ((name, x), (_, y)) in a.entries().into_iter().zip(b.entries()) {
            assert_eq!(x, y, "{name}");
            let (v, lo, hi) = (x.value.unwrap(), x.lo.unwrap(), x.hi.unwrap());
            assert!(lo <= v && v <= hi, "{name}: {v} outside [{lo}, {hi}]");
        }
        close(&a.breu, (1.0 / 3.0 + 0.5) / 2.0, 100);
    }

    #[test]
    fn plain_accuracy_by_tag() {
        let mut r = rows();
        r[0].tags.push(("group".into(), "BASE".into()));
        let a = crate::benchmarks::question::accuracy(
            &r,
            &crate::benchmarks::question::GROUP_TAGS,
            0,
            0,
        );
        close(&a.accuracy, 5.0 / 9.0, 9);
        close(&a.by_tag["group"]["BASE"], 1.0, 1);
        assert!(!a.by_tag.contains_key("set"));
    }
}
