//! Which headline conclusions survive the choice of label normalisation. Results that differ only
//! in their normalisation (same benchmark, set and template) are compared: a conclusion whose
//! verdict differs between two normalisations is flagged, so a reader can tell a finding about
//! the model from one about the scoring rule.
//!
//! The conclusions: which model has the highest value of each headline metric (with two models
//! or more; for a failure mode such as inertia that is the worst model), and per model each
//! finding its benchmark's evaluation declares (`benchmarks::Finding`: DeltaLogic's sign of the
//! revision gap, dominant failure mode, abstention).

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

/// Every conclusion of the entries that have results under two normalisations or more.
pub fn conclusions(entries: &[Entry]) -> Vec<Conclusion> {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        groups
            .entry((&e.benchmark, &e.set, &e.template))
            .or_default()
            .push(e);
    }
    // Benchmarks in the entries' order (registration order, as `entries` sorts them).
    let rank = |name: &str| entries.iter().position(|e| e.benchmark == name);
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
            for finding in first.evaluation.findings {
                let verdicts = norms
                    .iter()
                    .map(|&norm| {
                        let values: Option<Vec<f64>> =
                            finding.reads.iter().map(|k| value(norm, k)).collect();
                        let judged = values.map(|v| (finding.verdict)(&v));
                        Verdict {
                            normalisation: norm.to_string(),
                            verdict: judged.map(|(v, _)| v.to_string()),
                            value: judged.map(|(_, x)| x),
                        }
                    })
                    .collect();
                out.push(conclusion(Some(model), finding.what.into(), verdicts));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::{Column, Evaluation, Finding, Group, Panel};
    use crate::metrics::Metric;

    const COLUMNS: [Column; 4] = [
        Column {
            key: "accuracy",
            title: "Acc",
            headline: true,
        },
        Column {
            key: "gap",
            title: "Gap",
            headline: false,
        },
        Column {
            key: "x",
            title: "X",
            headline: true,
        },
        Column {
            key: "y",
            title: "Y",
            headline: true,
        },
    ];

    const FINDINGS: [Finding; 2] = [
        Finding {
            what: "gap is positive",
            reads: &["gap"],
            verdict: |v| (if v[0] > 0.0 { "yes" } else { "no" }, v[0]),
        },
        Finding {
            what: "x above y",
            reads: &["x", "y"],
            verdict: |v| (if v[0] > v[1] { "yes" } else { "no" }, v[0] - v[1]),
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
            benchmark: "b".into(),
            title: "B",
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
                panel: Panel::HEADLINE,
                findings: &FINDINGS,
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
        let best = find(&cs, None, "highest Acc");
        assert!(best.flips);
        let names: Vec<_> = best.verdicts.iter().map(|v| v.verdict.clone()).collect();
        assert_eq!(names, [Some("a".into()), Some("b".into())]);
        assert!(find(&cs, Some("a"), "gap is positive").flips);
        assert!(!find(&cs, Some("b"), "gap is positive").flips);
        assert!(!find(&cs, Some("a"), "x above y").flips);
        let b = find(&cs, Some("b"), "x above y");
        assert!(b.flips);
        assert_eq!(b.verdicts[1].verdict.as_deref(), Some("no"));
        assert!((b.verdicts[1].value.unwrap() - (0.2 - 0.4)).abs() < 1e-12);
        assert!(!find(&cs, None, "highest X").flips);
        // Only the declared findings.
        assert_eq!(cs.iter().filter(|c| c.model.is_some()).count(), 4);
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
