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

/// The result of `model` under normalisation `norm`.
fn normalised(model: &str, norm: &str, k: usize) -> Entry {
    Entry {
        normalisation: norm.into(),
        ..entry(model, "paper", k)
    }
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

/// The first value of attribute `name` in `doc`, a number.
fn attribute(doc: &str, name: &str) -> f64 {
    let value = doc.split(&format!(" {name}=\"")).nth(1).unwrap();
    value.split('"').next().unwrap().parse().unwrap()
}

/// The texts of the figure's `<text>` elements, markup and tooltips removed.
fn texts(doc: &str) -> Vec<String> {
    doc.split("<text")
        .skip(1)
        .map(|t| {
            let body = t
                .split_once('>')
                .unwrap()
                .1
                .split("</text>")
                .next()
                .unwrap();
            body.split("<title>").next().unwrap().to_string()
        })
        .collect()
}

/// The panel title says what varies between the groups; the normalisation is named in the
/// title when it is the same for every group, and under every group when it is not.
#[test]
fn svg_title_says_what_varies() {
    let title = |entries: &[Entry]| texts(&svg(entries))[0].clone();
    let norms = [normalised("smol", "mean", 3), normalised("smol", "pmi", 5)];
    assert_eq!(
        title(&norms),
        "DeltaLogic failure modes of smol per normalisation"
    );
    let t = texts(&svg(&norms));
    assert!(
        t.contains(&"mean".to_string()) && t.contains(&"pmi".to_string()),
        "{t:?}"
    );
    let models = [normalised("smol", "mean", 3), normalised("qwen", "mean", 5)];
    assert_eq!(
        title(&models),
        "DeltaLogic failure modes per model; normalisation: mean"
    );
    let both = [
        normalised("smol", "mean", 3),
        normalised("smol", "pmi", 3),
        normalised("qwen", "mean", 5),
    ];
    assert_eq!(
        title(&both),
        "DeltaLogic failure modes per model and normalisation"
    );
    assert_eq!(
        title(&[normalised("smol", "sum", 3)]),
        "DeltaLogic failure modes of smol; normalisation: sum"
    );
    for doc in [svg(&norms), svg(&both)] {
        let t = texts(&doc);
        assert!(
            t.contains(&"percent of the items counted".to_string()),
            "{t:?}"
        );
        assert!(t.iter().any(|x| x.starts_with("one group per")), "{t:?}");
    }
}

/// Every bar carries its value; a 0 bar is drawn (a mark on the baseline) with `0.0`; a bar
/// whose metric counts fewer items than its group carries its own n.
#[test]
fn svg_bars_carry_their_value_and_own_n() {
    // k = 1: the model keeps every first answer: inertia 100%, over-flip 0%.
    let doc = svg(&[entry("smol", "paper", 1)]);
    let rect = |name: &str| {
        doc.split("<rect ")
            .find(|r| r.contains(&format!("<title>{name}:")))
            .unwrap_or_else(|| panic!("no {name} bar"))
            .to_string()
    };
    assert!(rect("Over-flip").contains("<title>Over-flip: 0.0"));
    assert!(
        attribute(&rect("Over-flip"), "height") >= 2.0,
        "a 0 bar is visible"
    );
    let t = texts(&doc);
    assert!(
        t.contains(&"0.0".to_string()) && t.contains(&"100.0".to_string()),
        "{t:?}"
    );
    // 40 episodes; inertia counts the 20 whose gold label changes, over-flip the other 20.
    assert!(t.contains(&"n = 40".to_string()), "{t:?}");
    assert_eq!(t.iter().filter(|x| *x == "n=20").count(), 2, "{t:?}");
}

/// The side-by-side table has one row per model and normalisation, and each cell the n of its
/// own percentage.
#[test]
fn side_by_side_names_the_normalisation_of_every_value() {
    use deltalogic::benchmarks::{Column, Evaluation, Group, Panel};
    use deltalogic::metrics::Metric;
    static COLUMNS: [Column; 1] = [Column {
        key: "f1",
        title: "F1",
        headline: true,
    }];
    let other = |model: &str, norm: &str| Entry {
        benchmark: "robustlr".into(),
        title: "RobustLR",
        model: model.into(),
        set: "rl".into(),
        template: "plain-question".into(),
        normalisation: norm.into(),
        result_id: String::new(),
        evaluation: Evaluation {
            n: 240,
            columns: &COLUMNS,
            groups: vec![Group::of(
                "overall",
                "all",
                [&Metric {
                    value: Some(0.5),
                    n: 60,
                    lo: None,
                    hi: None,
                }],
            )],
            metrics: serde_json::Value::Null,
            note: "",
            panel: Panel::HEADLINE,
            findings: &[],
        },
    };
    let md = markdown(&[
        normalised("smol", "mean", 3),
        normalised("smol", "pmi", 5),
        other("smol", "mean"),
    ]);
    let t = section(&md, "Benchmarks side by side");
    assert_eq!(cells(t[0])[..2], ["Model", "Normalisation"]);
    assert_eq!(t.len(), 2 + 2, "{md}");
    let mean = cells(t[2]);
    let pmi = cells(t[3]);
    assert_eq!(mean[..2], ["smol", "mean"]);
    assert_eq!(pmi[..2], ["smol", "pmi"]);
    assert!(mean.last().unwrap().ends_with("50.0 (n=60)"), "{mean:?}");
    assert_eq!(*pmi.last().unwrap(), "—");
    // DeltaLogic's inertia: the 20 episodes whose gold label changes.
    assert!(mean.iter().any(|c| c.ends_with("(n=20)")), "{mean:?}");
    assert!(
        !mean.iter().any(|c| c.contains(" / ")),
        "one value per cell: {mean:?}"
    );
    assert!(md.contains("each n is what its percentage counts"), "{md}");
}

/// The pixel box `(x0, y0, x1, y1)` of what rsvg-convert draws of `doc`, or `None` if nothing.
fn ink(doc: &str, dir: &std::path::Path) -> Option<(u32, u32, u32, u32)> {
    let (svg_path, png_path) = (dir.join("probe.svg"), dir.join("probe.png"));
    std::fs::write(&svg_path, doc).unwrap();
    let status = std::process::Command::new("rsvg-convert")
        .arg(&svg_path)
        .arg("-o")
        .arg(&png_path)
        .status()
        .unwrap();
    assert!(status.success());
    let decoder = png::Decoder::new(std::fs::File::open(&png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgba);
    let mut bbox: Option<(u32, u32, u32, u32)> = None;
    for y in 0..info.height {
        for x in 0..info.width {
            if buf[((y * info.width + x) * 4 + 3) as usize] > 0 {
                let b = bbox.get_or_insert((x, y, x, y));
                *b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
            }
        }
    }
    bbox
}

/// Rendered by a real SVG renderer, no two texts of the figure overlap and none is cut by the
/// figure's edge: each text is drawn alone (everything else hidden) and its ink box measured.
#[test]
#[cfg_attr(
    rsvg_missing,
    ignore = "needs rsvg-convert: apt-get install librsvg2-bin (.ci/run does)"
)]
fn svg_text_neither_overlaps_nor_is_cut_when_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let figures = [
        // The main job: one model under six normalisations.
        ["mean", "sum", "per-char", "byte", "pmi", "calibrated"]
            .iter()
            .enumerate()
            .map(|(i, n)| normalised("smollm2-135m", n, 1 + i % 3))
            .collect::<Vec<_>>(),
        // Models with long names, one normalisation.
        vec![
            normalised("qwen2.5-coder-1.5b-instruct-q4", "mean", 1),
            normalised("smollm2-135m-instruct-q4_1", "mean", 2),
        ],
    ];
    for entries in figures {
        let doc = svg(&entries);
        std::fs::write(dir.path().join("figure.svg"), &doc).unwrap();
        let (width, height) = (
            attribute(&doc, "width") as u32,
            attribute(&doc, "height") as u32,
        );
        let count = doc.matches("<text").count();
        let hide =
            "<style>rect,line,path,text{visibility:hidden}#probe{visibility:visible}</style>";
        let mut boxes = Vec::new();
        for i in 0..count {
            // Only the i-th text is visible.
            let mut probe = String::new();
            for (j, part) in doc.split("<text").enumerate() {
                if j > 0 {
                    probe += if j == i + 1 {
                        "<text id=\"probe\""
                    } else {
                        "<text"
                    };
                }
                probe += part;
            }
            let probe = probe.replacen(
                "<rect width=\"100%\"",
                &format!("{hide}<rect width=\"100%\""),
                1,
            );
            let text = &texts(&doc)[i];
            let b = ink(&probe, dir.path()).unwrap_or_else(|| panic!("`{text}` draws nothing"));
            assert!(
                b.0 > 0 && b.1 > 0 && b.2 < width - 1 && b.3 < height - 1,
                "`{text}` is cut by the edge: {b:?} in {width}x{height}"
            );
            boxes.push((text.clone(), b));
        }
        for (i, (a, p)) in boxes.iter().enumerate() {
            for (b, q) in &boxes[i + 1..] {
                let apart = p.2 < q.0 || q.2 < p.0 || p.3 < q.1 || q.3 < p.1;
                assert!(apart, "`{a}` {p:?} overlaps `{b}` {q:?}");
            }
        }
    }
}
