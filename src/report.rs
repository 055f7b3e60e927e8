//! The paper-style report: Table 1 (one row per model) and the edit-type breakdown as Markdown,
//! every group as CSV, everything as JSON, and an SVG figure of the failure modes per model.
//!
//! Tables give percentages with their 95% bootstrap interval, `63.0 [55.1, 70.2]`; the revision
//! gap is initial minus revision accuracy, in points. A cell whose conditioning set is smaller than
//! the row's episode count (inertia, over-flip) carries its own `n`; an empty one reads `—`.

use crate::metrics::questions::{
    AccuracyBreakdown, BeliefRBreakdown, BeliefRMetrics, BenchmarkMetrics,
};
use crate::metrics::{Breakdown, Metric, Metrics};
use crate::robustlr::RobustMetrics;
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write;

/// The metrics of one model on one episode set under one prompt template and label
/// normalisation.
#[derive(Clone, Debug, Serialize)]
pub struct ResultEntry {
    pub model: String,
    pub set: String,
    pub template: String,
    pub normalisation: String,
    pub result_id: String,
    pub breakdown: Breakdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Csv,
    Json,
}

pub fn render(results: &[ResultEntry], format: Format) -> Result<String> {
    Ok(match format {
        Format::Md => table_markdown(results),
        Format::Csv => table_csv(results),
        Format::Json => serde_json::to_string_pretty(results)? + "\n",
    })
}

type Setting = (&'static str, fn(&ResultEntry) -> &str);

/// The run settings besides the model, with their column titles.
const SETTINGS: [Setting; 3] = [
    ("Set", |r| &r.set),
    ("Template", |r| &r.template),
    ("Normalisation", |r| &r.normalisation),
];

/// The settings that tell entries apart: only these get a column (or a label line), so a
/// one-set comparison reads like the paper's table.
fn varying(results: &[ResultEntry]) -> Vec<Setting> {
    SETTINGS
        .into_iter()
        .filter(|(_, get)| results.iter().any(|r| get(r) != get(&results[0])))
        .collect()
}

fn title(key: &str) -> &'static str {
    match key {
        "initial_accuracy" => "Init acc",
        "revision_accuracy" => "Rev acc",
        "revision_gap" => "Gap",
        "inertia" => "Inertia",
        "over_flip" => "Over-flip",
        "abstain" => "Abstain",
        _ => unreachable!("no title for metric {key}"),
    }
}

fn percent(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

/// `63.0 [55.1, 70.2]`, or `—` without a value.
fn estimate(m: &Metric) -> String {
    let mut s = m.value.map_or_else(|| "—".to_string(), percent);
    if let (Some(lo), Some(hi)) = (m.lo, m.hi) {
        write!(s, " [{}, {}]", percent(lo), percent(hi)).expect("writing to a String");
    }
    s
}

/// The estimate, plus ` (n=k)` when the metric's own n differs from the row's.
fn cell(m: &Metric, row_n: usize) -> String {
    let mut s = estimate(m);
    if m.n != row_n {
        write!(s, " (n={})", m.n).expect("writing to a String");
    }
    s
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn md_line<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> String {
    let cells: Vec<String> = cells.into_iter().map(|c| md_escape(c.as_ref())).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// One table: label columns, then the six metrics and n.
fn md_table<'a>(labels: &[&str], rows: impl Iterator<Item = (Vec<String>, &'a Metrics)>) -> String {
    let head: Vec<&str> = labels
        .iter()
        .copied()
        .chain(Metrics::KEYS.iter().map(|k| title(k)))
        .chain(["n"])
        .collect();
    let mut out = md_line(&head);
    out += &md_line(head.iter().map(|_| "---"));
    for (mut cells, m) in rows {
        cells.extend(m.entries().iter().map(|(_, x)| cell(x, m.n)));
        cells.push(m.n.to_string());
        out += &md_line(cells);
    }
    out
}

fn labels(r: &ResultEntry, settings: &[Setting]) -> Vec<String> {
    std::iter::once(r.model.clone())
        .chain(settings.iter().map(|(_, get)| get(r).to_string()))
        .collect()
}

/// Table 1 (one row per model) and the edit-type breakdown (one row per model and edit type).
pub fn table_markdown(results: &[ResultEntry]) -> String {
    let settings = varying(results);
    let mut heads = vec!["Model"];
    heads.extend(settings.iter().map(|(t, _)| *t));
    let overall = md_table(
        &heads,
        results
            .iter()
            .map(|r| (labels(r, &settings), &r.breakdown.overall)),
    );
    heads.push("Edit type");
    let by_edit = md_table(
        &heads,
        results.iter().flat_map(|r| {
            let settings = &settings;
            r.breakdown.by_edit_type.iter().map(move |(t, m)| {
                let mut l = labels(r, settings);
                l.push(t.clone());
                (l, m)
            })
        }),
    );
    format!(
        "## Table 1: belief revision per model\n\n{overall}\n\
         ## By edit type\n\n{by_edit}\n\
         Percentages with 95% bootstrap intervals. Gap = Init acc − Rev acc (points). \
         Inertia: the edited premises change the gold label but the model keeps its correct \
         first answer; over-flip: the gold label stays but the model abandons its correct first \
         answer; their n counts those episodes. Abstain: share of Uncertain answers after the \
         edit.\n"
    )
}

/// Every group of a breakdown: `(group_by, group, metrics)`.
fn groups(b: &Breakdown) -> impl Iterator<Item = (&'static str, &str, &Metrics)> {
    std::iter::once(("overall", "all", &b.overall))
        .chain(
            b.by_edit_type
                .iter()
                .map(|(k, m)| ("edit-type", k.as_str(), m)),
        )
        .chain(b.by_source.iter().map(|(k, m)| ("source", k.as_str(), m)))
}

/// One row per (model, set, template, normalisation, group); proportions as fractions, an
/// undefined value as an empty field.
pub fn table_csv(results: &[ResultEntry]) -> String {
    let mut head: Vec<String> = [
        "model",
        "set",
        "template",
        "normalisation",
        "result_id",
        "group_by",
        "group",
        "n",
    ]
    .map(String::from)
    .to_vec();
    for key in Metrics::KEYS {
        head.extend(["value", "lo", "hi", "n"].map(|f| format!("{key}_{f}")));
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&head).expect("writing CSV to memory");
    let field = |x: Option<f64>| x.map_or_else(String::new, |v| v.to_string());
    for r in results {
        for (by, group, m) in groups(&r.breakdown) {
            let mut rec = vec![
                r.model.clone(),
                r.set.clone(),
                r.template.clone(),
                r.normalisation.clone(),
                r.result_id.clone(),
                by.to_string(),
                group.to_string(),
                m.n.to_string(),
            ];
            for (_, x) in m.entries() {
                rec.extend([field(x.value), field(x.lo), field(x.hi), x.n.to_string()]);
            }
            w.write_record(&rec).expect("writing CSV to memory");
        }
    }
    String::from_utf8(w.into_inner().expect("writing CSV to memory")).expect("CSV of strings")
}

/// The metrics of one model on one question set (Belief-R, RobustLR, ...).
#[derive(Clone, Debug, Serialize)]
pub struct QuestionEntry {
    pub benchmark: String,
    pub model: String,
    pub set: String,
    pub template: String,
    pub normalisation: String,
    pub result_id: String,
    pub metrics: BenchmarkMetrics,
}

/// Everything a report shows: DeltaLogic results and question-benchmark results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub deltalogic: Vec<ResultEntry>,
    pub questions: Vec<QuestionEntry>,
}

/// The report in a format. Without question results this is exactly [`render`]; with them,
/// Markdown adds the side-by-side table and a section per benchmark, and CSV switches to one
/// row per (result, group, metric) so that every benchmark fits one header.
pub fn render_report(report: &Report, format: Format) -> Result<String> {
    if report.questions.is_empty() {
        return render(&report.deltalogic, format);
    }
    Ok(match format {
        Format::Md => {
            let mut out = String::new();
            if !report.deltalogic.is_empty() {
                out += &table_markdown(&report.deltalogic);
                out.push('\n');
            }
            out += &side_by_side(report);
            out += &question_sections(&report.questions);
            out
        }
        Format::Csv => long_csv(report),
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
    })
}

/// A column of the side-by-side table: which metric of which benchmark.
enum Column {
    DeltaLogic(fn(&Metrics) -> &Metric),
    BeliefR(fn(&BeliefRMetrics) -> &Metric),
    RobustLr(fn(&RobustMetrics) -> &Metric),
    /// Accuracy of a benchmark without metrics of its own.
    Accuracy(String),
}

impl Column {
    /// The column's metric in every result of `model`, in report order.
    fn values<'r>(&self, report: &'r Report, model: &str) -> Vec<&'r Metric> {
        match self {
            Column::DeltaLogic(get) => report
                .deltalogic
                .iter()
                .filter(|r| r.model == model)
                .map(|r| get(&r.breakdown.overall))
                .collect(),
            Column::BeliefR(get) => report
                .questions
                .iter()
                .filter(|q| q.model == model)
                .filter_map(|q| match &q.metrics {
                    BenchmarkMetrics::BeliefR(b) => Some(get(&b.overall)),
                    _ => None,
                })
                .collect(),
            Column::RobustLr(get) => report
                .questions
                .iter()
                .filter(|q| q.model == model)
                .filter_map(|q| match &q.metrics {
                    BenchmarkMetrics::RobustLr(m) => Some(get(m)),
                    _ => None,
                })
                .collect(),
            Column::Accuracy(benchmark) => report
                .questions
                .iter()
                .filter(|q| q.model == model && &q.benchmark == benchmark)
                .filter_map(|q| match &q.metrics {
                    BenchmarkMetrics::Accuracy(a) => Some(&a.accuracy),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// Per model: DeltaLogic's Table 1 cells beside Belief-R's and every other benchmark's headline
/// numbers. A model with several results of one benchmark (sets, templates, normalisations)
/// gets them in one cell, separated by ` / `, in the order of the per-benchmark sections.
pub fn side_by_side(report: &Report) -> String {
    let mut models: Vec<&str> = report
        .deltalogic
        .iter()
        .map(|r| r.model.as_str())
        .chain(report.questions.iter().map(|q| q.model.as_str()))
        .collect();
    models.sort();
    models.dedup();
    let others: Vec<&str> = {
        let mut b: Vec<&str> = report
            .questions
            .iter()
            .filter(|q| matches!(q.metrics, BenchmarkMetrics::Accuracy(_)))
            .map(|q| q.benchmark.as_str())
            .collect();
        b.sort();
        b.dedup();
        b
    };
    let mut columns: Vec<(String, Column)> = Vec::new();
    if !report.deltalogic.is_empty() {
        columns.push((
            "DeltaLogic init acc".into(),
            Column::DeltaLogic(|m| &m.initial_accuracy),
        ));
        columns.push((
            "DeltaLogic rev acc".into(),
            Column::DeltaLogic(|m| &m.revision_accuracy),
        ));
        columns.push((
            "DeltaLogic inertia".into(),
            Column::DeltaLogic(|m| &m.inertia),
        ));
        columns.push((
            "DeltaLogic over-flip".into(),
            Column::DeltaLogic(|m| &m.over_flip),
        ));
    }
    if report
        .questions
        .iter()
        .any(|q| matches!(q.metrics, BenchmarkMetrics::BeliefR(_)))
    {
        columns.push(("Belief-R Acc@t".into(), Column::BeliefR(|m| &m.acc_t)));
        columns.push(("BU-Acc".into(), Column::BeliefR(|m| &m.bu_acc)));
        columns.push(("BM-Acc".into(), Column::BeliefR(|m| &m.bm_acc)));
        columns.push(("BREU".into(), Column::BeliefR(|m| &m.breu)));
        columns.push(("Belief-R inertia".into(), Column::BeliefR(|m| &m.inertia)));
        columns.push((
            "Belief-R over-flip".into(),
            Column::BeliefR(|m| &m.over_flip),
        ));
    }
    if report
        .questions
        .iter()
        .any(|q| matches!(q.metrics, BenchmarkMetrics::RobustLr(_)))
    {
        columns.push((
            "RobustLR weighted F1".into(),
            Column::RobustLr(|m| &m.overall),
        ));
        columns.push((
            "RobustLR consistency".into(),
            Column::RobustLr(|m| &m.consistency),
        ));
    }
    for b in others {
        columns.push((format!("{b} acc"), Column::Accuracy(b.to_string())));
    }
    let head: Vec<String> = std::iter::once("Model".to_string())
        .chain(columns.iter().map(|(t, _)| t.clone()))
        .collect();
    let mut out = md_line(&head);
    out += &md_line(head.iter().map(|_| "---"));
    for m in models {
        let mut cells = vec![m.to_string()];
        for (_, get) in &columns {
            let found = get.values(report, m);
            cells.push(if found.is_empty() {
                "—".to_string()
            } else {
                found
                    .iter()
                    .map(|x| format!("{} (n={})", estimate(x), x.n))
                    .collect::<Vec<_>>()
                    .join(" / ")
            });
        }
        out += &md_line(cells);
    }
    format!(
        "## Benchmarks side by side\n\n{out}\n\
         Percentages with 95% bootstrap intervals and the size of each conditioning set. \
         Inertia: the gold answer changes (DeltaLogic: the edit changes the label; Belief-R: \
         belief update) and the model keeps its correct first answer. Over-flip: the gold answer \
         stays (DeltaLogic: irrelevant additions and the like; Belief-R: belief maintain) and \
         the model abandons its correct first answer. BU-Acc, BM-Acc and BREU count step-t+1 \
         questions whose step-t question the model answered correctly. RobustLR: weighted F1 \
         per family averaged over families, and the share of a family's perturbations whose \
         answer changes exactly when the gold answer does; n counts families.\n\n"
    )
}

const BELIEFR_TITLES: [&str; 9] = [
    "Acc@t",
    "BU-Acc",
    "BM-Acc",
    "BREU",
    "BU-Acc (all)",
    "BM-Acc (all)",
    "BREU (all)",
    "Inertia",
    "Over-flip",
];

/// The groups of a Belief-R breakdown: `(split, group, metrics)`.
fn beliefr_groups(
    b: &BeliefRBreakdown,
) -> impl Iterator<Item = (&'static str, &str, &BeliefRMetrics)> {
    std::iter::once(("overall", "all", &b.overall))
        .chain(b.by_modus.iter().map(|(k, m)| ("modus", k.as_str(), m)))
        .chain(b.by_effect.iter().map(|(k, m)| ("effect", k.as_str(), m)))
        .chain(
            b.by_agreement
                .iter()
                .map(|(k, m)| ("agreement", k.as_str(), m)),
        )
}

/// One row of a RobustLR breakdown: the RobustLR set (`all` overall), the split (`all`, `group`,
/// `label`), the group, the weighted F1, and the consistency (overall and per set only).
struct RobustRow<'a> {
    set: &'a str,
    split: &'static str,
    group: &'a str,
    f1: &'a Metric,
    consistency: Option<&'a Metric>,
}

fn robustlr_rows(m: &RobustMetrics) -> Vec<RobustRow<'_>> {
    let mut rows = vec![RobustRow {
        set: "all",
        split: "all",
        group: "all",
        f1: &m.overall,
        consistency: Some(&m.consistency),
    }];
    for (set, s) in &m.by_set {
        rows.push(RobustRow {
            set,
            split: "all",
            group: "all",
            f1: &s.weighted_f1,
            consistency: Some(&s.consistency),
        });
        for (split, map) in [("group", &s.by_group), ("label", &s.by_label)] {
            rows.extend(map.iter().map(|(group, f1)| RobustRow {
                set,
                split,
                group,
                f1,
                consistency: None,
            }));
        }
    }
    rows
}

/// The groups of an accuracy breakdown: `(tag, value, accuracy)`.
fn accuracy_groups(a: &AccuracyBreakdown) -> impl Iterator<Item = (&str, &str, &Metric)> {
    std::iter::once(("overall", "all", &a.accuracy)).chain(
        a.by_tag
            .iter()
            .flat_map(|(k, g)| g.iter().map(move |(v, m)| (k.as_str(), v.as_str(), m))),
    )
}

/// A section per question benchmark, one row per (result, split group).
fn question_sections(entries: &[QuestionEntry]) -> String {
    let mut beliefr = String::new();
    let mut robustlr = String::new();
    let mut other: std::collections::BTreeMap<&str, String> = Default::default();
    for e in entries {
        let who = [e.model.as_str(), &e.set, &e.template, &e.normalisation];
        match &e.metrics {
            BenchmarkMetrics::BeliefR(b) => {
                for (split, group, m) in beliefr_groups(b) {
                    let mut cells: Vec<String> = who.iter().map(|s| s.to_string()).collect();
                    cells.extend([split.to_string(), group.to_string()]);
                    cells.extend(
                        m.entries()
                            .iter()
                            .map(|(_, x)| format!("{} (n={})", estimate(x), x.n)),
                    );
                    beliefr += &md_line(cells);
                }
            }
            BenchmarkMetrics::RobustLr(m) => {
                let n = |x: &Metric| format!("{} (n={})", estimate(x), x.n);
                for r in robustlr_rows(m) {
                    let mut cells: Vec<String> = who.iter().map(|s| s.to_string()).collect();
                    cells.extend([r.set, r.split, r.group].map(String::from));
                    cells.push(n(r.f1));
                    cells.push(r.consistency.map_or_else(String::new, n));
                    robustlr += &md_line(cells);
                }
            }
            BenchmarkMetrics::Accuracy(a) => {
                let table = other.entry(e.benchmark.as_str()).or_default();
                for (tag, value, m) in accuracy_groups(a) {
                    let mut cells: Vec<String> = who.iter().map(|s| s.to_string()).collect();
                    cells.extend([tag.to_string(), value.to_string()]);
                    cells.push(format!("{} (n={})", estimate(m), m.n));
                    *table += &md_line(cells);
                }
            }
        }
    }
    let who = [
        "Model",
        "Set",
        "Template",
        "Normalisation",
        "Split",
        "Group",
    ];
    let mut out = String::new();
    if !beliefr.is_empty() {
        let head: Vec<&str> = who.iter().copied().chain(BELIEFR_TITLES).collect();
        out += &format!(
            "## Belief-R\n\n{}{}{beliefr}\n\
             Acc@t over step-t questions (Basic@t). BU-Acc, BM-Acc, BREU = (BU-Acc + BM-Acc) / 2, \
             inertia and over-flip over step-t+1 questions whose step-t question was answered \
             correctly; (all): over every step-t+1 question. Gold answers are human judgements.\n\n",
            md_line(&head),
            md_line(head.iter().map(|_| "---"))
        );
    }
    if !robustlr.is_empty() {
        let head: Vec<&str> = who[..4]
            .iter()
            .copied()
            .chain([
                "RobustLR set",
                "Split",
                "Group",
                "Weighted F1",
                "Consistency",
            ])
            .collect();
        out += &format!(
            "## RobustLR\n\n{}{}{robustlr}\n\
             Weighted F1 (scikit-learn's, per label weighted by its gold support) of each family's \
             items, averaged over families; per group and per gold label over the family's items \
             in it. Consistency: the share of a family's perturbed items whose answer differs from \
             the base item's exactly when the gold answer does. n counts families; intervals \
             resample families. Gold answers are the solver's.\n\n",
            md_line(&head),
            md_line(head.iter().map(|_| "---"))
        );
    }
    for (benchmark, rows) in other {
        let head: Vec<&str> = who.iter().copied().chain(["Accuracy"]).collect();
        out += &format!(
            "## {benchmark}\n\n{}{}{rows}\n",
            md_line(&head),
            md_line(head.iter().map(|_| "---"))
        );
    }
    out
}

/// One row per (result, group, metric), for DeltaLogic and every question benchmark alike;
/// proportions as fractions, an undefined value as an empty field.
pub fn long_csv(report: &Report) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let head = [
        "benchmark",
        "model",
        "set",
        "template",
        "normalisation",
        "result_id",
        "group_by",
        "group",
        "metric",
        "value",
        "lo",
        "hi",
        "n",
    ];
    w.write_record(head).expect("writing CSV to memory");
    let field = |x: Option<f64>| x.map_or_else(String::new, |v| v.to_string());
    let mut write = |who: [&str; 6], by: &str, group: &str, key: &str, m: &Metric| {
        let mut rec: Vec<String> = who.iter().map(|s| s.to_string()).collect();
        rec.extend([by.to_string(), group.to_string(), key.to_string()]);
        rec.extend([field(m.value), field(m.lo), field(m.hi), m.n.to_string()]);
        w.write_record(&rec).expect("writing CSV to memory");
    };
    for r in &report.deltalogic {
        let who = [
            "deltalogic",
            &r.model,
            &r.set,
            &r.template,
            &r.normalisation,
            &r.result_id,
        ];
        for (by, group, m) in groups(&r.breakdown) {
            for (key, x) in m.entries() {
                write(who, by, group, key, x);
            }
        }
    }
    for e in &report.questions {
        let who = [
            e.benchmark.as_str(),
            &e.model,
            &e.set,
            &e.template,
            &e.normalisation,
            &e.result_id,
        ];
        match &e.metrics {
            BenchmarkMetrics::BeliefR(b) => {
                for (by, group, m) in beliefr_groups(b) {
                    for (key, x) in m.entries() {
                        write(who, by, group, key, x);
                    }
                }
            }
            BenchmarkMetrics::RobustLr(m) => {
                for r in robustlr_rows(m) {
                    let (by, group) = match (r.set, r.split) {
                        ("all", _) => ("overall".to_string(), "all".to_string()),
                        (set, "all") => ("set".to_string(), set.to_string()),
                        (set, split) => (format!("set-{split}"), format!("{set}/{}", r.group)),
                    };
                    write(who, &by, &group, "weighted_f1", r.f1);
                    if let Some(c) = r.consistency {
                        write(who, &by, &group, "consistency", c);
                    }
                }
            }
            BenchmarkMetrics::Accuracy(a) => {
                for (by, group, m) in accuracy_groups(a) {
                    write(who, by, group, "accuracy", m);
                }
            }
        }
    }
    String::from_utf8(w.into_inner().expect("writing CSV to memory")).expect("CSV of strings")
}

/// The failure modes the figure shows: key, legend, colour (Okabe–Ito, safe for colour blindness).
type Mode = (fn(&Metrics) -> &Metric, &'static str, &'static str);
const MODES: [Mode; 3] = [
    (|m| &m.inertia, "Inertia", "#D55E00"),
    (|m| &m.over_flip, "Over-flip", "#0072B2"),
    (|m| &m.abstain, "Abstention", "#009E73"),
];
const BAR_W: f64 = 28.0;
const BAR_GAP: f64 = 4.0;
const GROUP_W: f64 = 180.0;
const PLOT_H: f64 = 240.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 92.0;
const BOTTOM: f64 = 70.0;
const MIN_W: f64 = 560.0;
/// Labels longer than this (about a group's width in 12px bold) are shortened, in full in a tooltip.
const LABEL_CHARS: usize = 24;

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The escaped label, cut to [`LABEL_CHARS`] with the full text as a tooltip so that
/// neighbouring groups' labels do not overlap.
fn shortened(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return xml_escape(label);
    }
    let cut: String = label.chars().take(LABEL_CHARS - 1).collect();
    format!("{}…<title>{}</title>", xml_escape(&cut), xml_escape(label))
}

/// The y coordinate of a proportion.
fn y(p: f64) -> f64 {
    TOP + PLOT_H * (1.0 - p.clamp(0.0, 1.0))
}

/// Grouped bars per entry (inertia, over-flip, abstention) with 95% interval whiskers, on a 0–100%
/// axis, with a legend and a title: a standalone SVG document.
pub fn svg(results: &[ResultEntry]) -> String {
    let width = (LEFT + GROUP_W * results.len() as f64 + RIGHT).max(MIN_W);
    let height = TOP + PLOT_H + BOTTOM;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{0}\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">\
         Belief-revision failure modes per model</text>\n\
         <text x=\"{0}\" y=\"46\" text-anchor=\"middle\" fill=\"#555\">\
         whiskers: 95% bootstrap interval; n: episodes</text>\n",
        width / 2.0
    );
    s += &legend(width);
    s += &axis(width);
    let settings = varying(results);
    // Centre the groups when the minimum width leaves room to spare.
    let first = (width - RIGHT + LEFT - GROUP_W * results.len() as f64) / 2.0;
    for (i, r) in results.iter().enumerate() {
        s += &bar_group(r, &settings, first + GROUP_W * i as f64);
    }
    s += "</svg>\n";
    s
}

fn legend(width: f64) -> String {
    let mut s = String::from("<g class=\"legend\">\n");
    const ITEM_W: f64 = 110.0;
    let x0 = (width - ITEM_W * MODES.len() as f64) / 2.0;
    for (i, (_, name, colour)) in MODES.iter().enumerate() {
        let x = x0 + ITEM_W * i as f64;
        s += &format!(
            "<rect x=\"{x}\" y=\"58\" width=\"12\" height=\"12\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"68\">{name}</text>\n",
            x + 17.0
        );
    }
    s += "</g>\n";
    s
}

/// Horizontal grid lines with percentage ticks, and the baseline.
fn axis(width: f64) -> String {
    let mut s = String::from("<g class=\"axis\" stroke=\"#ddd\">\n");
    for tick in [0, 25, 50, 75, 100] {
        let ty = y(f64::from(tick) / 100.0);
        s += &format!(
            "<line x1=\"{LEFT}\" y1=\"{ty}\" x2=\"{}\" y2=\"{ty}\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\" stroke=\"none\" fill=\"#333\">{tick}%</text>\n",
            width - RIGHT,
            LEFT - 6.0,
            ty + 4.0
        );
    }
    s += &format!(
        "<line x1=\"{LEFT}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#333\"/>\n</g>\n",
        y(0.0),
        width - RIGHT
    );
    s
}

/// One entry's three bars, whiskers and labels (model; the varying settings; episode count).
fn bar_group(r: &ResultEntry, settings: &[Setting], x0: f64) -> String {
    let m = &r.breakdown.overall;
    let mut s = format!(
        "<g class=\"model\" data-model=\"{}\">\n",
        xml_escape(&r.model)
    );
    let bars_w = MODES.len() as f64 * BAR_W + (MODES.len() - 1) as f64 * BAR_GAP;
    let left = x0 + (GROUP_W - bars_w) / 2.0;
    for (i, (get, name, colour)) in MODES.iter().enumerate() {
        s += &bar(get(m), name, colour, left + i as f64 * (BAR_W + BAR_GAP));
    }
    let centre = x0 + GROUP_W / 2.0;
    let mut lines = vec![r.model.clone()];
    let detail: Vec<&str> = settings.iter().map(|(_, get)| get(r)).collect();
    if !detail.is_empty() {
        lines.push(detail.join(" · "));
    }
    lines.push(format!("n = {}", m.n));
    for (i, line) in lines.iter().enumerate() {
        s += &format!(
            "<text x=\"{centre}\" y=\"{}\" text-anchor=\"middle\"{}>{}</text>\n",
            y(0.0) + 18.0 + 15.0 * i as f64,
            if i == 0 {
                " font-weight=\"bold\""
            } else {
                " fill=\"#555\""
            },
            shortened(line)
        );
    }
    s += "</g>\n";
    s
}

/// A bar with its interval whisker and a tooltip; an undefined metric shows `n/a` instead.
fn bar(m: &Metric, name: &str, colour: &str, x: f64) -> String {
    let centre = x + BAR_W / 2.0;
    let tip = format!("{name}: {} (n = {})", estimate(m), m.n);
    let Some(v) = m.value else {
        return format!(
            "<text x=\"{centre}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">\
             n/a<title>{tip}</title></text>\n",
            y(0.0) - 4.0
        );
    };
    let mut s = format!(
        "<rect x=\"{x}\" y=\"{}\" width=\"{BAR_W}\" height=\"{}\" fill=\"{colour}\">\
         <title>{tip}</title></rect>\n",
        y(v),
        y(0.0) - y(v)
    );
    if let (Some(lo), Some(hi)) = (m.lo, m.hi) {
        let (cap_l, cap_r) = (centre - 5.0, centre + 5.0);
        let (ylo, yhi) = (y(lo), y(hi));
        s += &format!(
            "<path d=\"M{centre} {ylo}V{yhi}M{cap_l} {ylo}H{cap_r}M{cap_l} {yhi}H{cap_r}\" \
             stroke=\"#222\" stroke-width=\"1.5\" fill=\"none\"/>\n"
        );
    }
    s
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
        assert_eq!(cell(&m, 100), "63.0 [55.1, 70.2]");
        assert_eq!(cell(&m, 120), "63.0 [55.1, 70.2] (n=100)");
        assert_eq!(cell(&metric(Some(-0.05), 9, None), 9), "-5.0");
        assert_eq!(cell(&metric(None, 0, None), 9), "— (n=0)");
    }

    #[test]
    fn long_labels_are_shortened_with_a_tooltip() {
        assert_eq!(shortened("a & b"), "a &amp; b");
        let long = "x".repeat(LABEL_CHARS + 1);
        let short = shortened(&long);
        assert!(short.starts_with(&format!("{}…<title>", "x".repeat(LABEL_CHARS - 1))));
        assert!(short.ends_with(&format!("{long}</title>")));
    }
}
