//! The report's shapes: the overall and breakdown tables in Markdown, the long CSV, the JSON, and
//! the SVG figure (well formed, one bar group per entry).

use deltalogic::benchmarks::deltalogic::metrics::Row;
use deltalogic::benchmarks::deltalogic::{self as dl, EditType};
use deltalogic::logic::Label;
use deltalogic::report::{markdown, render, svg, Entry, Format};

/// Gold transitions of a small set: (source, edit type, y0, y1).
const GOLD: [(&str, EditType, Label, Label); 4] = [
    (
        "proofwriter",
        EditType::SupportRemoval,
        Label::True,
        Label::Uncertain,
    ),
    (
        "proofwriter",
        EditType::SupportInsertion,
        Label::Uncertain,
        Label::False,
    ),
    (
        "folio",
        EditType::IrrelevantAddition,
        Label::True,
        Label::True,
    ),
    (
        "folio",
        EditType::IrrelevantAddition,
        Label::False,
        Label::False,
    ),
];

/// 40 episodes answered by a model that is right first and then, on every `k`-th episode, keeps
/// its first answer; otherwise it answers the revised gold label.
fn rows(k: usize) -> Vec<Row> {
    (0..40)
        .map(|i| {
            let (source, edit_type, y0, y1) = GOLD[i % GOLD.len()];
            Row {
                episode: format!("{i:02x}"),
                source: source.into(),
                edit_type,
                y0,
                y1,
                pred0: y0,
                pred1: if i % k == 0 { y0 } else { y1 },
            }
        })
        .collect()
}

fn entry_of(model: &str, set: &str, rows: &[Row]) -> Entry {
    Entry {
        benchmark: dl::BENCHMARK.into(),
        title: "DeltaLogic",
        model: model.into(),
        set: set.into(),
        template: "plain".into(),
        normalisation: "none".into(),
        result_id: format!("{model}-{set}"),
        evaluation: dl::evaluation(rows, 7, 200).unwrap(),
    }
}

fn entry(model: &str, set: &str, k: usize) -> Entry {
    entry_of(model, set, &rows(k))
}

/// The table lines of the Markdown section that starts with `heading`.
fn section<'a>(md: &'a str, heading: &str) -> Vec<&'a str> {
    md.split("## ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("no section {heading}"))
        .lines()
        .filter(|l| l.starts_with('|'))
        .collect()
}

fn cells(line: &str) -> Vec<&str> {
    line.trim_matches('|').split(" | ").map(str::trim).collect()
}

#[test]
fn markdown_has_table_one_and_the_edit_type_breakdown() {
    let results = [entry("smollm2", "paper", 3), entry("qwen", "paper", 5)];
    let md = markdown(&results);

    let t1 = section(&md, "DeltaLogic\n");
    assert_eq!(
        cells(t1[0]),
        [
            "Model",
            "Init acc",
            "Rev acc",
            "Gap",
            "Inertia",
            "Over-flip",
            "Abstain",
            "n"
        ]
    );
    assert_eq!(t1.len(), 2 + results.len(), "{md}");
    let smollm = cells(t1[2]);
    assert_eq!(smollm[0], "smollm2");
    assert!(smollm[1].starts_with("100.0 [100.0, 100.0]"), "{smollm:?}");
    // Inertia has its own n (gold changes in half the episodes), shown in the cell.
    assert!(smollm[4].ends_with("(n=20)"), "{smollm:?}");
    assert_eq!(smollm[7], "40");

    let by_edit = section(&md, "DeltaLogic by edit-type");
    assert_eq!(cells(by_edit[0])[1], "Group");
    // Three edit types occur for each model.
    assert_eq!(by_edit.len(), 2 + 3 * results.len());
    // No episode of an irrelevant addition changes gold: inertia is undefined there.
    let irrelevant = by_edit
        .iter()
        .map(|l| cells(l))
        .find(|c| c[1] == "irrelevant-addition")
        .unwrap();
    assert_eq!(irrelevant[5], "— (n=0)");
    for table in [&t1, &by_edit] {
        assert!(table
            .iter()
            .all(|l| cells(l).len() == cells(table[0]).len()));
    }
}

#[test]
fn markdown_adds_a_column_for_settings_that_vary() {
    let md = markdown(&[entry("qwen", "paper", 3), entry("qwen", "fresh", 3)]);
    let t1 = section(&md, "DeltaLogic\n");
    assert_eq!(cells(t1[0])[..2], ["Model", "Set"]);
    assert_eq!(cells(t1[3])[..2], ["qwen", "fresh"]);
}

#[test]
fn csv_has_one_row_per_group_and_metric() {
    let results = [entry("smollm2", "paper", 3), entry("qwen", "paper", 5)];
    let text = render(&results, Format::Csv).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let head = reader.headers().unwrap().clone();
    assert_eq!(
        head.iter().collect::<Vec<_>>(),
        [
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
            "n"
        ]
    );
    let records: Vec<_> = reader.records().map(Result::unwrap).collect();
    // (overall + 3 edit types + 2 sources) × 6 metrics, per entry.
    assert_eq!(records.len(), results.len() * 6 * 6);
    let groups: Vec<(&str, &str)> = records[..36]
        .iter()
        .step_by(6)
        .map(|r| (&r[6], &r[7]))
        .collect();
    assert_eq!(
        groups,
        [
            ("overall", "all"),
            ("edit-type", "irrelevant-addition"),
            ("edit-type", "support-insertion"),
            ("edit-type", "support-removal"),
            ("source", "folio"),
            ("source", "proofwriter"),
        ]
    );
    let find = |group: &str, metric: &str| {
        records
            .iter()
            .find(|r| &r[7] == group && &r[8] == metric)
            .unwrap()
    };
    let irrelevant = find("irrelevant-addition", "inertia");
    assert_eq!((&irrelevant[9], &irrelevant[12]), ("", "0"));
    let init: f64 = find("all", "initial_accuracy")[9].parse().unwrap();
    assert_eq!(init, 1.0);
    let inertia = find("all", "inertia");
    let (lo, hi): (f64, f64) = (inertia[10].parse().unwrap(), inertia[11].parse().unwrap());
    assert!(0.0 <= lo && lo <= hi && hi <= 1.0);
}

#[test]
fn json_gives_null_for_undefined_metrics() {
    let text = render(&[entry("qwen", "paper", 3)], Format::Json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["benchmark"], "deltalogic");
    let inertia = &r["metrics"]["by_edit_type"]["irrelevant-addition"]["inertia"];
    assert!(inertia["value"].is_null() && inertia["lo"].is_null());
    assert_eq!(inertia["n"], 0);
    assert_eq!(r["metrics"]["overall"]["n"], 40);
    assert_eq!(r["n"], 40);
}

/// The element names opened and closed, in order, checking that every closing tag matches; the
/// root element's name is returned.
fn balanced_root(xml: &str) -> String {
    let mut stack = Vec::new();
    let mut root = None;
    for tag in xml.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap();
        assert!(!tag.is_empty(), "empty tag");
        let name = tag
            .trim_start_matches('/')
            .split_whitespace()
            .next()
            .unwrap();
        if let Some(closing) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop(),
                Some(closing.trim().to_string()),
                "unbalanced </{name}>"
            );
        } else if !tag.ends_with('/') {
            root.get_or_insert_with(|| name.to_string());
            stack.push(name.to_string());
        }
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    root.expect("an element")
}

#[test]
fn svg_is_well_formed_with_one_bar_group_per_model() {
    let results = [
        entry("smollm2", "paper", 3),
        entry("qwen <0.5B> & co", "paper", 5),
        entry("qwen-1.5b", "paper", 1),
    ];
    let doc = svg(&results);
    assert!(doc.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(balanced_root(&doc), "svg");
    assert_eq!(doc.matches("<g class=\"model\"").count(), results.len());
    assert!(doc.contains("qwen &lt;0.5B&gt; &amp; co"));
    for needle in [
        "Inertia",
        "Over-flip",
        "Abstention",
        "0%",
        "100%",
        "per model",
    ] {
        assert!(doc.contains(needle), "no {needle}");
    }
    // Three bars per model (every failure mode is defined) and one whisker each.
    assert_eq!(doc.matches("<rect ").count(), 1 + 3 + 3 * results.len());
    assert_eq!(doc.matches("<path ").count(), 3 * results.len());
}

#[test]
fn svg_marks_undefined_metrics() {
    let e = entry_of("qwen", "paper", &rows(3)[2..3]);
    let doc = svg(&[e]);
    assert_eq!(balanced_root(&doc), "svg");
    assert!(
        doc.contains("n/a<title>Inertia: — (n = 0)</title>"),
        "{doc}"
    );
}
