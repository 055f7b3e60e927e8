//! The RobustLR metrics (the paper's `eval_consistency_f1.py`, "easy" mode): the weighted F1 of
//! each theory over its base item and perturbations, averaged over theories; the same per group
//! (the items of one group of each family) and per gold label; plus a consistency rate. Every
//! figure carries a 95% bootstrap interval that resamples families (theories), seeded.
//!
//! Two choices where the script is silent or rounds: per-theory scores are not rounded to two
//! decimals before averaging, and the consistency rate is this project's (see [`metrics`]).

use super::{Membership, SetName};
use crate::benchmarks::question::QuestionRow;
use crate::benchmarks::view::{Count, Unit};
use crate::logic::Label;
use crate::metrics::{mean_metric, Metric};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// scikit-learn's `f1_score(gold, pred, average="weighted")`: the F1 of each label that occurs
/// in either list, weighted by its support in `gold`; an undefined precision or recall counts 0
/// (scikit-learn's `zero_division` default). Empty lists score 0.
pub fn weighted_f1(gold: &[Label], pred: &[Label]) -> f64 {
    let n = gold.len().min(pred.len());
    if n == 0 {
        return 0.0;
    }
    let pairs = || gold.iter().zip(pred).take(n);
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    Label::ALL
        .iter()
        .map(|&l| {
            let tp = pairs().filter(|(g, p)| **g == l && **p == l).count();
            let support = pairs().filter(|(g, _)| **g == l).count();
            let predicted = pairs().filter(|(_, p)| **p == l).count();
            let (precision, recall) = (ratio(tp, predicted), ratio(tp, support));
            let f1 = if precision + recall == 0.0 {
                0.0
            } else {
                2.0 * precision * recall / (precision + recall)
            };
            f1 * support as f64 / n as f64
        })
        .sum()
}

/// One set's figures.
#[derive(Clone, Debug, Serialize)]
pub struct SetMetrics {
    pub families: usize,
    pub items: usize,
    /// Mean over families of the family's weighted F1.
    pub weighted_f1: Metric,
    /// group → mean over families of the weighted F1 of the family's items in that group.
    pub by_group: BTreeMap<String, Metric>,
    /// gold label → mean over families of the weighted F1 of the family's items with that label.
    pub by_label: BTreeMap<String, Metric>,
    /// Mean over families of the share of perturbed items whose answer changed (against the
    /// base item's) exactly when the gold label did.
    pub consistency: Metric,
}

#[derive(Clone, Debug, Serialize)]
pub struct RobustMetrics {
    /// Every family of every set, weighted F1.
    pub overall: Metric,
    /// Every family of every set, consistency rate.
    pub consistency: Metric,
    /// Keyed by [`SetName::as_str`].
    pub by_set: BTreeMap<String, SetMetrics>,
}

/// One family's scored items, base first: (group, gold, prediction).
pub type Scored = (String, Label, Label);

/// The metrics over scored families (each `(set, items)`, base item first), with `resamples`
/// bootstrap resamples from `seed` (0: no intervals). Empty families are left out.
pub fn metrics(families: &[(SetName, Vec<Scored>)], seed: u64, resamples: usize) -> RobustMetrics {
    let families: Vec<&(SetName, Vec<Scored>)> =
        families.iter().filter(|(_, f)| !f.is_empty()).collect();
    let overall: Vec<f64> = families.iter().map(|(_, f)| family_f1(f)).collect();
    let mut by_set = BTreeMap::new();
    for set in SetName::ALL {
        let members: Vec<&[Scored]> = families
            .iter()
            .filter(|(s, _)| *s == set)
            .map(|(_, f)| f.as_slice())
            .collect();
        if !members.is_empty() {
            by_set.insert(
                set.as_str().to_string(),
                set_metrics(set, &members, seed, resamples),
            );
        }
    }
    let consistent: Vec<f64> = families
        .iter()
        .filter_map(|(_, f)| consistency(f))
        .collect();
    RobustMetrics {
        overall: mean_metric(&overall, seed, "robustlr/overall", resamples),
        consistency: mean_metric(&consistent, seed, "robustlr/consistency", resamples),
        by_set,
    }
}

fn family_f1(items: &[Scored]) -> f64 {
    let gold: Vec<Label> = items.iter().map(|i| i.1).collect();
    let pred: Vec<Label> = items.iter().map(|i| i.2).collect();
    weighted_f1(&gold, &pred)
}

/// Each family's F1 over its items that `keep` selects, for the families where it selects any.
fn per_family(members: &[&[Scored]], keep: impl Fn(&Scored) -> bool) -> Vec<f64> {
    members
        .iter()
        .filter_map(|f| {
            let part: Vec<Scored> = f.iter().filter(|i| keep(i)).cloned().collect();
            (!part.is_empty()).then(|| family_f1(&part))
        })
        .collect()
}

/// The share of a family's perturbed items that change their answer exactly when gold changes.
fn consistency(items: &[Scored]) -> Option<f64> {
    let (_, gold0, pred0) = items.first()?;
    let rest = &items[1..];
    let agree = rest
        .iter()
        .filter(|(_, g, p)| (g != gold0) == (p != pred0))
        .count();
    (!rest.is_empty()).then(|| agree as f64 / rest.len() as f64)
}

fn set_metrics(set: SetName, members: &[&[Scored]], seed: u64, resamples: usize) -> SetMetrics {
    let stream = |what: &str| format!("robustlr/{set}/{what}");
    let groups: std::collections::BTreeSet<&str> = members
        .iter()
        .flat_map(|f| f.iter().map(|i| i.0.as_str()))
        .collect();
    let by_group = groups
        .into_iter()
        .map(|g| {
            let values = per_family(members, |i| i.0 == g);
            (
                g.to_string(),
                mean_metric(&values, seed, &stream(&format!("group/{g}")), resamples),
            )
        })
        .collect();
    let by_label = Label::ALL
        .iter()
        .filter_map(|&l| {
            let values = per_family(members, |i| i.1 == l);
            (!values.is_empty()).then(|| {
                (
                    l.as_str().to_string(),
                    mean_metric(&values, seed, &stream(&format!("label/{l}")), resamples),
                )
            })
        })
        .collect();
    let f1: Vec<f64> = members.iter().map(|f| family_f1(f)).collect();
    let consistent: Vec<f64> = members.iter().filter_map(|f| consistency(f)).collect();
    SetMetrics {
        families: members.len(),
        items: members.iter().map(|f| f.len()).sum(),
        weighted_f1: mean_metric(&f1, seed, &stream("f1"), resamples),
        by_group,
        by_label,
        consistency: mean_metric(&consistent, seed, &stream("consistency"), resamples),
    }
}

/// One family of a result's rows: its set, its name and its items, base first, each with its
/// position in the rows.
type RowFamily = (SetName, String, Vec<(u32, Scored)>);

/// A result's rows grouped by their set and family ([`Membership`]), base item (position 0)
/// first, in (set, family) order.
fn row_families(rows: &[QuestionRow]) -> Result<Vec<RowFamily>> {
    type Family = Vec<(usize, u32, Scored)>;
    let mut families: BTreeMap<(SetName, String), Family> = BTreeMap::new();
    for (at, r) in rows.iter().enumerate() {
        let m = Membership::read(|key| r.tag(key))
            .with_context(|| format!("RobustLR question {}", &r.question[..12]))?;
        families.entry((m.set, m.family)).or_default().push((
            m.position,
            at as u32,
            (m.group, r.gold, r.pred),
        ));
    }
    families
        .into_iter()
        .map(|((set, family), mut items)| {
            items.sort_by_key(|i| i.0);
            if items[0].0 != 0 {
                bail!("RobustLR family {set} {family}: the result holds no base item");
            }
            let items = items.into_iter().map(|(_, at, s)| (at, s)).collect();
            Ok((set, family, items))
        })
        .collect()
}

/// RobustLR's metrics over the families of a result's rows: rows are grouped by their set and
/// family ([`Membership`]), base item (position 0) first.
pub fn from_rows(rows: &[QuestionRow], seed: u64, resamples: usize) -> Result<RobustMetrics> {
    let scored: Vec<(SetName, Vec<Scored>)> = row_families(rows)?
        .into_iter()
        .map(|(set, _, items)| (set, items.into_iter().map(|(_, s)| s).collect()))
        .collect();
    Ok(metrics(&scored, seed, resamples))
}

/// The families each metric of [`super::RobustLr`]'s groups averages over, in their order
/// (overall; then per set: the set, its groups, its gold labels), each with the items of it the
/// metric reads: every item for F1, every item of a family with a perturbation for
/// consistency, the family's items of one group or gold label for those.
pub fn counted(rows: &[QuestionRow]) -> Result<Vec<Vec<Option<Count>>>> {
    let families = row_families(rows)?;
    let count = |members: &[&RowFamily], keep: &dyn Fn(&Scored) -> bool| -> Count {
        let units = members
            .iter()
            .filter_map(|(set, family, items)| {
                let rows: Vec<u32> = items
                    .iter()
                    .filter(|(_, s)| keep(s))
                    .map(|(at, _)| *at)
                    .collect();
                (!rows.is_empty()).then(|| Unit {
                    name: format!("{set} {family}"),
                    rows,
                })
            })
            .collect();
        Count::Units {
            noun: ("family", "families"),
            units,
        }
    };
    // Consistency reads the families with a perturbed item, all of their items.
    fn perturbed<'a>(members: &[&'a RowFamily]) -> Vec<&'a RowFamily> {
        members
            .iter()
            .copied()
            .filter(|(_, _, items)| items.len() > 1)
            .collect()
    }
    let every: Vec<&RowFamily> = families.iter().collect();
    let mut groups = vec![vec![
        Some(count(&every, &|_| true)),
        Some(count(&perturbed(&every), &|_| true)),
    ]];
    // Sets, groups and labels in the order of the evaluation's maps: by name.
    let mut sets: Vec<SetName> = SetName::ALL
        .into_iter()
        .filter(|s| families.iter().any(|f| f.0 == *s))
        .collect();
    sets.sort_by_key(|s| s.as_str());
    for set in sets {
        let members: Vec<&RowFamily> = families.iter().filter(|f| f.0 == set).collect();
        groups.push(vec![
            Some(count(&members, &|_| true)),
            Some(count(&perturbed(&members), &|_| true)),
        ]);
        let names: std::collections::BTreeSet<&str> = members
            .iter()
            .flat_map(|(_, _, items)| items.iter().map(|(_, s)| s.0.as_str()))
            .collect();
        for g in names {
            groups.push(vec![Some(count(&members, &|s| s.0 == g)), None]);
        }
        let mut labels: Vec<Label> = Label::ALL
            .into_iter()
            .filter(|&l| {
                members
                    .iter()
                    .any(|(_, _, items)| items.iter().any(|(_, s)| s.1 == l))
            })
            .collect();
        labels.sort_by_key(|l| l.as_str());
        for l in labels {
            groups.push(vec![Some(count(&members, &|s| s.1 == l)), None]);
        }
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Label::{False as F, True as T, Uncertain as U};

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn weighted_f1_matches_hand_computation() {
        // gold T T F F, pred T F F F: T has P=1, R=1/2, F1=2/3; F has P=2/3, R=1, F1=4/5;
        // weights 1/2 each: 11/15 (scikit-learn gives 0.7333...).
        close(weighted_f1(&[T, T, F, F], &[T, F, F, F]), 11.0 / 15.0);
        close(weighted_f1(&[T, F, U], &[T, F, U]), 1.0);
        close(weighted_f1(&[T, T], &[F, F]), 0.0);
        // A label only predicted has no weight but lowers the others' precision:
        // gold T T T, pred T U T: T P=1 R=2/3 F1=4/5, weight 1.
        close(weighted_f1(&[T, T, T], &[T, U, T]), 0.8);
        close(weighted_f1(&[], &[]), 0.0);
    }

    fn fam(rows: &[(&str, Label, Label)]) -> Vec<Scored> {
        rows.iter()
            .map(|&(g, y, p)| (g.to_string(), y, p))
            .collect()
    }

    #[test]
    fn per_set_group_label_and_consistency() {
        let families = vec![
            // Perfect: F1 1, consistent.
            (
                SetName::CCs,
                fam(&[("BASE", T, T), ("CONJ", F, F), ("CONJ+NEG", F, F)]),
            ),
            // Always "True": F1 over (T,F,F) vs (T,T,T): T P=1/3 R=1 F1=1/2 weight 1/3 → 1/6.
            (
                SetName::CCs,
                fam(&[("BASE", T, T), ("CONJ", F, T), ("CONJ+NEG", F, T)]),
            ),
            (
                SetName::CEs,
                fam(&[("BASE", T, T), ("CONTRAPOSITIVE", T, F)]),
            ),
        ];
        let m = metrics(&families, 3, 0);
        let cs = &m.by_set["C-CS"];
        assert_eq!((cs.families, cs.items), (2, 6));
        close(cs.weighted_f1.value.unwrap(), (1.0 + 1.0 / 6.0) / 2.0);
        close(cs.by_group["BASE"].value.unwrap(), 1.0);
        close(cs.by_group["CONJ"].value.unwrap(), 0.5);
        close(cs.by_label["False"].value.unwrap(), 0.5);
        // Family 2: gold changes, answers do not: 0 of 2 consistent.
        close(cs.consistency.value.unwrap(), 0.5);
        let es = &m.by_set["C-ES"];
        // Gold stays, the answer flips: inconsistent; F1 of (T,T) vs (T,F) is 2/3 · 1.
        close(es.consistency.value.unwrap(), 0.0);
        close(es.weighted_f1.value.unwrap(), 2.0 / 3.0);
        close(
            m.overall.value.unwrap(),
            (1.0 + 1.0 / 6.0 + 2.0 / 3.0) / 3.0,
        );
        close(m.consistency.value.unwrap(), 1.0 / 3.0);
        assert_eq!(m.consistency.n, 3);
        assert!(!m.by_set.contains_key("D-CS"));
    }

    #[test]
    fn intervals_are_seeded_and_bracket_the_mean() {
        let families: Vec<_> = (0..20)
            .map(|k| {
                let p = if k % 3 == 0 { F } else { T };
                (SetName::NCs, fam(&[("BASE", T, T), ("NEG", F, p)]))
            })
            .collect();
        let a = metrics(&families, 7, 200);
        let b = metrics(&families, 7, 200);
        let f1 = &a.by_set["N-CS"].weighted_f1;
        assert_eq!(f1, &b.by_set["N-CS"].weighted_f1);
        let (lo, hi, v) = (f1.lo.unwrap(), f1.hi.unwrap(), f1.value.unwrap());
        assert!(lo <= v && v <= hi && lo < hi, "{lo} {v} {hi}");
    }
}
