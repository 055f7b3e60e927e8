//! Which headline conclusions survive the choice of label normalisation. Results that differ only
//! in their normalisation (same benchmark, set and template) are compared: a conclusion whose
//! verdict differs between two normalisations is flagged, so a reader can tell a finding about
//! the model from one about the scoring rule.
//!
//! The conclusions: which model has the highest value of each headline metric (with two models
//! or more; for a failure mode such as inertia that is the worst model), and per
//! model the sign of the revision gap, whether inertia or over-flip dominates, and whether the
//! model abstains on more than half the questions (DeltaLogic's metrics; any benchmark whose
//! evaluation has those columns gets them).

use super::Entry;
use serde::Serialize;
use std::collections::BTreeMap;

/// One conclusion under each normalisation.
#[derive(Clone, Debug, Serialize)]
pub struct Conclusion {
    pub benchmark: String,
    #[serde(skip)]
    pub title: &'static str,
    pub set: String,
    pub template: String,
    /// The model it is about; `None` for a comparison between models.
    pub model: Option<String>,
    pub conclusion: String,
    /// In report order of the normalisations.
    pub verdicts: Vec<Verdict>,
    /// Whether two normalisations give different verdicts.
    pub flips: bool,
    /// Verdicts given (normalisations under which the metric has a value).
    pub decided: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub normalisation: String,
    /// `None` where the metric has no value (an empty conditioning set).
    pub verdict: Option<String>,
    /// The value the verdict rests on.
    pub value: Option<f64>,
}

/// A verdict and the value it rests on, under one normalisation.
type Judged = (Option<String>, Option<f64>);

/// The metric keys of DeltaLogic's per-model conclusions.
const REVISION_GAP: &str = "revision_gap";
const INERTIA: &str = "inertia";
const OVER_FLIP: &str = "over_flip";
const ABSTAIN: &str = "abstain";

/// Every conclusion of the entries that have results under two normalisations or more.
pub fn conclusions(entries: &[Entry]) -> Vec<Conclusion> {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        groups
            .entry((&e.benchmark, &e.set, &e.template))
            .or_default()
            .push(e);
    }
    let rank = |name: &str| crate::benchmarks::ALL.iter().position(|b| b.name() == name);
    let mut keys: Vec<_> = groups.keys().copied().collect();
    keys.sort_by_key(|k| (rank(k.0), k.1, k.2));
    let mut out = Vec::new();
    for key in keys {
        let group = &groups[&key];
        let mut norms: Vec<&str> = group.iter().map(|e| e.normalisation.as_str()).collect();
        norms.sort_by_key(|n| order(n));
        norms.dedup();
        if norms.len() < 2 {
            continue;
        }
        let first = group[0];
        let conclusion = |model: Option<&str>, what: String, verdicts: Vec<Verdict>| {
            let mut seen: Vec<&String> =
                verdicts.iter().filter_map(|v| v.verdict.as_ref()).collect();
            let decided = seen.len();
            seen.sort();
            seen.dedup();
            Conclusion {
                benchmark: first.benchmark.clone(),
                title: first.title,
                set: first.set.clone(),
                template: first.template.clone(),
                model: model.map(str::to_string),
                conclusion: what,
                flips: seen.len() > 1,
                decided,
                verdicts,
            }
        };
        let under = |norm: &str| -> Vec<&Entry> {
            group
                .iter()
                .copied()
                .filter(|e| e.normalisation == norm)
                .collect()
        };
        let mut models: Vec<&str> = group.iter().map(|e| e.model.as_str()).collect();
        models.sort();
        models.dedup();
        if models.len() > 1 {
            for c in first.evaluation.columns.iter().filter(|c| c.headline) {
                let verdicts = norms
                    .iter()
                    .map(|&norm| best_model(&under(norm), c.key, norm))
                    .collect();
                out.push(conclusion(None, format!("highest {}", c.title), verdicts));
            }
        }
        for &model in &models {
            let of = |norm: &str| under(norm).into_iter().find(|e| e.model == model);
            let value =
                |norm: &str, key: &str| of(norm).and_then(|e| e.evaluation.overall(key)?.value);
            let per_norm = |f: &dyn Fn(&str) -> Judged| -> Vec<Verdict> {
                norms
                    .iter()
                    .map(|&norm| {
                        let (verdict, value) = f(norm);
                        Verdict {
                            normalisation: norm.to_string(),
                            verdict,
                            value,
                        }
                    })
                    .collect()
            };
            let has = |key: &str| first.evaluation.columns.iter().any(|c| c.key == key);
            if has(REVISION_GAP) {
                let v = per_norm(&|norm| {
                    let gap = value(norm, REVISION_GAP);
                    (gap.map(|g| sign(g).to_string()), gap)
                });
                out.push(conclusion(
                    Some(model),
                    "sign of the revision gap".into(),
                    v,
                ));
            }
            if has(INERTIA) && has(OVER_FLIP) {
                let v = per_norm(
                    &|norm| match (value(norm, INERTIA), value(norm, OVER_FLIP)) {
                        (Some(i), Some(o)) => (Some(dominant(i, o).to_string()), Some(i - o)),
                        _ => (None, None),
                    },
                );
                out.push(conclusion(
                    Some(model),
                    "inertia vs over-flip (inertia − over-flip)".into(),
                    v,
                ));
            }
            if has(ABSTAIN) {
                let v = per_norm(&|norm| {
                    let a = value(norm, ABSTAIN);
                    (a.map(|a| if a > 0.5 { "yes" } else { "no" }.to_string()), a)
                });
                out.push(conclusion(
                    Some(model),
                    "abstains on more than half".into(),
                    v,
                ));
            }
        }
    }
    out
}

/// The report order of a stored normalisation name (unknown names last, by name).
pub(super) fn order(name: &str) -> (usize, String) {
    let i = crate::eval::Normalisation::named(name)
        .and_then(|n| crate::eval::Normalisation::ALL.iter().position(|&m| m == n))
        .unwrap_or(usize::MAX);
    (i, name.to_string())
}

/// The model with the highest value of `key` among `entries` (ties name every such model).
fn best_model(entries: &[&Entry], key: &str, norm: &str) -> Verdict {
    let scored: Vec<(&str, f64)> = entries
        .iter()
        .filter_map(|e| Some((e.model.as_str(), e.evaluation.overall(key)?.value?)))
        .collect();
    let top = scored.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    let mut best: Vec<&str> = scored.iter().filter(|s| s.1 == top).map(|s| s.0).collect();
    best.sort();
    Verdict {
        normalisation: norm.to_string(),
        verdict: (!best.is_empty()).then(|| best.join(" = ")),
        value: (!best.is_empty()).then_some(top),
    }
}

fn sign(x: f64) -> &'static str {
    if x > 0.0 {
        "positive"
    } else if x < 0.0 {
        "negative"
    } else {
        "zero"
    }
}

fn dominant(inertia: f64, over_flip: f64) -> &'static str {
    if inertia > over_flip {
        "inertia"
    } else if over_flip > inertia {
        "over-flip"
    } else {
        "neither"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::{Column, Evaluation, Group};
    use crate::metrics::Metric;

    const COLUMNS: [Column; 4] = [
        Column {
            key: "revision_accuracy",
            title: "Rev acc",
            headline: true,
        },
        Column {
            key: REVISION_GAP,
            title: "Gap",
            headline: false,
        },
        Column {
            key: INERTIA,
            title: "Inertia",
            headline: true,
        },
        Column {
            key: OVER_FLIP,
            title: "Over-flip",
            headline: true,
        },
    ];

    /// A result of `model` under `norm` with overall values in column order.
    fn entry(model: &str, norm: &str, values: [f64; 4]) -> Entry {
        let metrics = values
            .iter()
            .map(|&v| {
                Some(Metric {
                    value: Some(v),
                    n: 10,
                    lo: None,
                    hi: None,
                })
            })
            .collect();
        Entry {
            benchmark: "deltalogic".into(),
            title: "DeltaLogic",
            model: model.into(),
            set: "s".into(),
            template: "plain".into(),
            normalisation: norm.into(),
            result_id: String::new(),
            evaluation: Evaluation {
                n: 10,
                columns: &COLUMNS,
                groups: vec![Group {
                    by: "overall".into(),
                    value: "all".into(),
                    metrics,
                }],
                metrics: serde_json::Value::Null,
                note: "",
            },
        }
    }

    fn find<'a>(cs: &'a [Conclusion], model: Option<&str>, what: &str) -> &'a Conclusion {
        cs.iter()
            .find(|c| c.model.as_deref() == model && c.conclusion.starts_with(what))
            .unwrap_or_else(|| panic!("no conclusion {what} for {model:?}"))
    }

    #[test]
    fn flags_exactly_the_conclusions_that_change() {
        let entries = [
            entry("a", "mean", [0.5, 0.1, 0.9, 0.2]),
            entry("b", "mean", [0.4, 0.2, 0.3, 0.1]),
            entry("a", "sum", [0.3, -0.1, 0.8, 0.1]),
            entry("b", "sum", [0.6, 0.3, 0.2, 0.4]),
        ];
        let cs = conclusions(&entries);
        let best = find(&cs, None, "highest Rev acc");
        assert!(best.flips);
        let names: Vec<_> = best.verdicts.iter().map(|v| v.verdict.clone()).collect();
        assert_eq!(names, [Some("a".into()), Some("b".into())]);
        assert!(find(&cs, Some("a"), "sign of the revision gap").flips);
        assert!(!find(&cs, Some("b"), "sign of the revision gap").flips);
        assert!(!find(&cs, Some("a"), "inertia vs over-flip").flips);
        let b = find(&cs, Some("b"), "inertia vs over-flip");
        assert!(b.flips);
        assert_eq!(b.verdicts[1].verdict.as_deref(), Some("over-flip"));
        assert!(!find(&cs, None, "highest Inertia").flips);
        // No abstention column: no abstention conclusion.
        assert!(cs.iter().all(|c| !c.conclusion.starts_with("abstains")));
    }

    #[test]
    fn one_normalisation_gives_no_conclusions() {
        let entries = [
            entry("a", "mean", [0.5, 0.1, 0.9, 0.2]),
            entry("b", "mean", [0.4, 0.2, 0.3, 0.1]),
        ];
        assert!(conclusions(&entries).is_empty());
    }
}
