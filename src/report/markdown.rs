//! The Markdown report: with several benchmarks, their headline numbers side by side per model;
//! then per benchmark its overall table (one row per result) and one breakdown table per way its
//! items are grouped.
//!
//! Cells give percentages with their 95% bootstrap interval, `63.0 [55.1, 70.2]`; a cell whose
//! conditioning set is smaller than the row's count carries its own `n`; an empty one reads `—`.

use super::{by_benchmark, varying, Entry, Setting};
use crate::metrics::Metric;
use std::fmt::Write;

fn percent(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

/// `63.0 [55.1, 70.2]`, or `—` without a value.
pub(super) fn estimate(m: &Metric) -> String {
    let mut s = m.value.map_or_else(|| "—".to_string(), percent);
    if let (Some(lo), Some(hi)) = (m.lo, m.hi) {
        write!(s, " [{}, {}]", percent(lo), percent(hi)).expect("writing to a String");
    }
    s
}

/// The estimate, plus ` (n=k)` when the metric's own n differs from the row's.
pub fn cell(m: Option<&Metric>, row_n: usize) -> String {
    let Some(m) = m else {
        return String::new();
    };
    let mut s = estimate(m);
    if m.n != row_n {
        write!(s, " (n={})", m.n).expect("writing to a String");
    }
    s
}

fn line<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> String {
    let cells: Vec<String> = cells
        .into_iter()
        .map(|c| c.as_ref().replace('|', "\\|"))
        .collect();
    format!("| {} |\n", cells.join(" | "))
}

fn table(head: &[String], rows: Vec<Vec<String>>) -> String {
    let mut out = line(head);
    out += &line(head.iter().map(|_| "---"));
    for r in rows {
        out += &line(r);
    }
    out
}

fn labels(e: &Entry, settings: &[Setting]) -> Vec<String> {
    std::iter::once(e.model.clone())
        .chain(settings.iter().map(|(_, get)| get(e).to_string()))
        .collect()
}

/// The whole report.
pub fn markdown(entries: &[Entry]) -> String {
    let sections = by_benchmark(entries);
    let mut out = String::new();
    if sections.len() > 1 {
        out += &side_by_side(&sections);
    }
    for s in sections {
        out += &section(s);
    }
    out += &robustness(&super::robustness::conclusions(entries));
    out
}

/// The conclusions under each normalisation, flips flagged; nothing when no result has a
/// sibling under another normalisation.
fn robustness(conclusions: &[super::robustness::Conclusion]) -> String {
    if conclusions.is_empty() {
        return String::new();
    }
    let mut norms: Vec<&str> = Vec::new();
    for c in conclusions {
        for v in &c.verdicts {
            if !norms.contains(&v.normalisation.as_str()) {
                norms.push(&v.normalisation);
            }
        }
    }
    let head: Vec<String> = ["Benchmark", "Set", "Template", "Model", "Conclusion"]
        .into_iter()
        .map(String::from)
        .chain(norms.iter().map(|n| n.to_string()))
        .chain(["Robust".to_string()])
        .collect();
    let rows = conclusions
        .iter()
        .map(|c| {
            let mut row = vec![
                c.title.to_string(),
                c.set.clone(),
                c.template.clone(),
                c.model.clone().unwrap_or_else(|| "(all)".into()),
                c.conclusion.clone(),
            ];
            row.extend(norms.iter().map(|n| {
                let v = c.verdicts.iter().find(|v| v.normalisation == *n);
                match v.and_then(|v| Some((v.verdict.as_ref()?, v.value?))) {
                    Some((verdict, value)) => format!("{verdict} ({})", percent(value)),
                    None => "—".into(),
                }
            }));
            row.push(
                match (c.flips, c.decided) {
                    (true, _) => "**flips**",
                    (false, 0 | 1) => "—",
                    (false, _) => "holds",
                }
                .into(),
            );
            row
        })
        .collect();
    let flips = conclusions.iter().filter(|c| c.flips).count();
    let decided = conclusions.iter().filter(|c| c.decided > 1).count();
    format!(
        "## Robustness to the label normalisation\n\n{}\n{flips} of {} conclusions flip between \
         normalisations (values in percent). `mean` is the DeltaLogic paper's per-token mean, `sum` \
         lm-eval's `acc`, `per-char` its `acc_norm`, `byte` per UTF-8 byte, `pmi` the label's \
         log-prob minus its log-prob after the template's content-free prompt, `calibrated` \
         contextual calibration (Zhao et al. 2021); see docs/normalisation.md.\n\n",
        table(&head, rows),
        decided
    )
}

/// One benchmark: the overall table, then a table per grouping.
fn section(entries: &[Entry]) -> String {
    let first = &entries[0];
    let columns = first.evaluation.columns;
    let settings = varying(entries);
    let mut head: Vec<String> = std::iter::once("Model")
        .chain(settings.iter().map(|(t, _)| *t))
        .map(String::from)
        .collect();
    let with_metrics = |head: &[String]| -> Vec<String> {
        head.iter()
            .cloned()
            .chain(columns.iter().map(|c| c.title.to_string()))
            .chain(["n".to_string()])
            .collect()
    };
    let overall = entries
        .iter()
        .map(|e| {
            let n = e.evaluation.n;
            let mut row = labels(e, &settings);
            row.extend(
                e.evaluation.groups[0]
                    .metrics
                    .iter()
                    .map(|m| cell(m.as_ref(), n)),
            );
            row.push(n.to_string());
            row
        })
        .collect();
    let mut out = format!(
        "## {}\n\n{}",
        first.title,
        table(&with_metrics(&head), overall)
    );
    // One table per grouping, in the order the benchmark lists them.
    let mut bys: Vec<&str> = Vec::new();
    for g in entries.iter().flat_map(|e| &e.evaluation.groups[1..]) {
        if !bys.contains(&g.by.as_str()) {
            bys.push(&g.by);
        }
    }
    head.push("Group".into());
    for by in bys {
        let rows = entries
            .iter()
            .flat_map(|e| {
                let settings = &settings;
                e.evaluation.groups[1..]
                    .iter()
                    .filter(move |g| g.by == by)
                    .map(move |g| {
                        let n = g.metrics.iter().flatten().map(|m| m.n).max().unwrap_or(0);
                        let mut row = labels(e, settings);
                        row.push(g.value.clone());
                        row.extend(g.metrics.iter().map(|m| cell(m.as_ref(), n)));
                        row.push(n.to_string());
                        row
                    })
            })
            .collect();
        out += &format!(
            "\n### {} by {by}\n\n{}",
            first.title,
            table(&with_metrics(&head), rows)
        );
    }
    out += "\nPercentages with 95% bootstrap intervals. The n column counts the result's items; \
            a cell's (n=k) is what that percentage counts when it differs.";
    if !first.evaluation.note.is_empty() {
        out += " ";
        out += first.evaluation.note;
    }
    out += "\n\n";
    out
}

/// Every benchmark's headline numbers: one row per model and normalisation, so that each value
/// names the normalisation it was computed under. A model with several results of one benchmark
/// under one normalisation (sets, templates) gets them in one cell, each after its setting, in
/// the order of the per-benchmark sections. Every cell gives the count its percentage is over.
fn side_by_side(sections: &[&[Entry]]) -> String {
    let mut rows: Vec<(&str, &str)> = sections
        .iter()
        .flat_map(|s| {
            s.iter()
                .map(|e| (e.model.as_str(), e.normalisation.as_str()))
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.0, super::robustness::order(a.1)).cmp(&(b.0, super::robustness::order(b.1)))
    });
    rows.dedup();
    let mut head = vec!["Model".to_string(), "Normalisation".to_string()];
    for s in sections {
        let e = &s[0];
        for c in e.evaluation.columns.iter().filter(|c| c.headline) {
            head.push(format!("{} {}", e.title, c.title));
        }
    }
    let rows = rows
        .iter()
        .map(|&(model, norm)| {
            let mut row = vec![model.to_string(), norm.to_string()];
            for s in sections {
                // The settings besides model and normalisation that tell this benchmark's
                // results apart.
                let settings: Vec<Setting> = varying(s)
                    .into_iter()
                    .filter(|(title, _)| *title != "Normalisation")
                    .collect();
                for c in s[0].evaluation.columns.iter().filter(|c| c.headline) {
                    let found: Vec<String> = s
                        .iter()
                        .filter(|e| e.model == model && e.normalisation == norm)
                        .filter_map(|e| Some((e, e.evaluation.overall(c.key)?)))
                        .map(|(e, m)| {
                            let value = format!("{} (n={})", estimate(m), m.n);
                            let setting: Vec<&str> =
                                settings.iter().map(|(_, get)| get(e)).collect();
                            match setting.is_empty() {
                                true => value,
                                false => format!("{}: {value}", setting.join(", ")),
                            }
                        })
                        .collect();
                    row.push(if found.is_empty() {
                        "—".to_string()
                    } else {
                        found.join(" / ")
                    });
                }
            }
            row
        })
        .collect();
    format!(
        "## Benchmarks side by side\n\n{}\n\
         One row per model and label normalisation. Percentages with 95% bootstrap intervals; \
         each n is what its percentage counts: the items it is over, fewer than the set's where a \
         metric conditions on some of them (inertia, over-flip), or families where a benchmark \
         scores families (each benchmark's section below says what its numbers mean).\n\n",
        table(&head, rows)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(value: Option<f64>, n: usize, ci: Option<(f64, f64)>) -> Metric {
        Metric {
            value,
            n,
            lo: ci.map(|c| c.0),
            hi: ci.map(|c| c.1),
        }
    }

    #[test]
    fn cells_are_percentages_with_interval_and_own_n() {
        let m = metric(Some(0.63), 100, Some((0.551, 0.7024)));
        assert_eq!(cell(Some(&m), 100), "63.0 [55.1, 70.2]");
        assert_eq!(cell(Some(&m), 120), "63.0 [55.1, 70.2] (n=100)");
        assert_eq!(cell(Some(&metric(Some(-0.05), 9, None)), 9), "-5.0");
        assert_eq!(cell(Some(&metric(None, 0, None)), 9), "— (n=0)");
        assert_eq!(cell(None, 9), "");
    }
}
