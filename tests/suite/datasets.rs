//! The dataset readers against every benchmark file of the datasets folder (counts measured independently from
//! the raw files where a simple method exists) and against small malformed inputs.

use deltalogic::datasets::{files_under, read_file, BaseItem, Format, ReadError, ReadFile};
use deltalogic::logic::{Label, World};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/bad")).join(name)
}

/// Every file the format finds under `dir`, read with `dir` as root, by name relative to it.
fn read_dir(format: Format, dir: &Path) -> BTreeMap<String, ReadFile> {
    let files = files_under(format, dir).unwrap();
    let read = |f: &PathBuf| read_file(format, dir, f).unwrap_or_else(|e| panic!("{e}"));
    let name = |f: &PathBuf| {
        f.strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/")
    };
    files.iter().map(|f| (name(f), read(f))).collect()
}

fn json_array(path: &Path) -> Vec<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines = text.lines().filter(|l| !l.trim().is_empty());
    lines.map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn extra<'a>(item: &'a BaseItem, key: &str) -> Option<&'a str> {
    item.extra
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn count_labels(items: &[BaseItem]) -> BTreeMap<Label, usize> {
    let mut counts = BTreeMap::new();
    for label in items.iter().filter_map(|i| i.dataset_label) {
        *counts.entry(label).or_default() += 1;
    }
    counts
}

fn assert_all_good(files: &BTreeMap<String, ReadFile>) {
    for (name, read) in files {
        assert!(read.bad.is_empty(), "{name}: {:?}", read.bad.first());
        for item in &read.items {
            assert!(
                item.extra.windows(2).all(|w| w[0].0 < w[1].0),
                "{name}: extra not sorted"
            );
            assert!(
                !item.premises.is_empty() && !item.query.is_empty(),
                "{name}"
            );
        }
    }
}

fn item_counts(files: &BTreeMap<String, ReadFile>) -> BTreeMap<&str, usize> {
    files
        .iter()
        .map(|(n, r)| (n.as_str(), r.items.len()))
        .collect()
}

#[test]
#[cfg_attr(
    any(dataset_missing = "folio/v0.0", dataset_missing = "folio/logic-lm"),
    ignore = "needs the datasets folio/v0.0 and folio/logic-lm (deltalogic datasets where)"
)]
fn folio_both_shapes() {
    let dir = crate::common::dataset("folio");
    let files = read_dir(Format::Folio, &dir);
    assert_all_good(&files);
    let expected = BTreeMap::from([
        ("v0.0/folio-train.jsonl", 1004),
        ("v0.0/folio-validation.jsonl", 204),
    ]);
    assert_eq!(
        item_counts(&files),
        expected,
        "the .txt copies and logic-lm are not read"
    );
    let mut mismatches = 0;
    for (name, read) in &files {
        let records = jsonl(&dir.join(name));
        assert_eq!(read.items.len(), records.len(), "{name}");
        for (item, record) in read.items.iter().zip(&records) {
            let (nl, fol) = (&record["premises"], &record["premises-FOL"]);
            let differ = nl.as_array().unwrap().len() != fol.as_array().unwrap().len();
            mismatches += usize::from(differ);
            assert_eq!(extra(item, "fol_mismatch").is_some(), differ, "{name}");
            assert_eq!(
                item.dataset_label,
                Label::parse(record["label"].as_str().unwrap())
            );
            assert_eq!(item.origin.dataset, "folio");
            assert_eq!(item.origin.file, *name);
        }
    }
    assert_eq!(
        mismatches, 12,
        "MANIFEST: 12 items differ in NL premises and FOL formulas"
    );

    let train = &files["v0.0/folio-train.jsonl"].items;
    assert_eq!(train[0].origin.external_id, "1131");
    assert_eq!(extra(&train[0], "story_id"), Some("406"));
    assert!(train
        .iter()
        .all(|i| i.formal.as_ref().unwrap().conclusion.is_none()));
    let train_labels = count_labels(train);
    assert_eq!(
        train_labels[&Label::Uncertain],
        330,
        "Unknown is read as Uncertain"
    );

    let validation = &files["v0.0/folio-validation.jsonl"].items;
    assert_eq!(validation[0].origin.external_id, "validation-1");
    assert_eq!(validation[0].origin.position, "line 1");
    let formal = validation[0].formal.as_ref().unwrap();
    assert_eq!(formal.conclusion.as_deref(), Some("Engaged(bonnie)"));
    assert!(
        validation[0].premises[5].ends_with("school."),
        "premises are trimmed"
    );
}

#[test]
#[cfg_attr(
    dataset_missing = "proofwriter/logic-lm",
    ignore = "needs the dataset proofwriter/logic-lm (deltalogic datasets where)"
)]
fn proofwriter_logic_lm() {
    let dir = crate::common::dataset("proofwriter/logic-lm");
    let files = read_dir(Format::ProofWriter, &dir);
    assert_all_good(&files);
    let expected = BTreeMap::from([("dev.json", 600), ("test.json", 600), ("train.json", 3000)]);
    assert_eq!(item_counts(&files), expected);
    for (name, read) in &files {
        let records = json_array(&dir.join(name));
        assert_eq!(read.items.len(), records.len(), "{name}");
        for (item, record) in read.items.iter().zip(&records) {
            assert_eq!(
                item.premises.join(" "),
                record["context"].as_str().unwrap(),
                "{name}"
            );
            let question = record["question"].as_str().unwrap();
            assert!(
                question.ends_with(&format!("? {}", item.query)),
                "{name}: {question}"
            );
            assert_eq!(item.origin.external_id, record["id"].as_str().unwrap());
            assert_eq!(item.world, Some(World::Open));
        }
        let third = read.items.len() / 3;
        let balanced = BTreeMap::from([
            (Label::True, third),
            (Label::False, third),
            (Label::Uncertain, third),
        ]);
        assert_eq!(count_labels(&read.items), balanced, "{name}");
    }
}

#[test]
#[cfg_attr(
    dataset_missing = "ruletaker_cwa",
    ignore = "needs the dataset ruletaker_cwa (deltalogic datasets where)"
)]
fn ruletaker_closed_world() {
    let dir = crate::common::dataset("ruletaker_cwa");
    let files = read_dir(Format::RuleTaker, &dir);
    assert_all_good(&files);
    let expected = BTreeMap::from([
        ("depth-0/dev.jsonl", 10050),
        ("depth-1/dev.jsonl", 9986),
        ("depth-1/test.jsonl", 20058),
        ("depth-2/dev.jsonl", 9994),
        ("depth-2/test.jsonl", 20044),
        ("depth-3/dev.jsonl", 9944),
        ("depth-3/test.jsonl", 19970),
        ("depth-5/dev.jsonl", 10068),
        ("depth-5/test-xtra.jsonl", 20100),
        ("depth-5/test.jsonl", 20192),
    ]);
    assert_eq!(item_counts(&files), expected);
    for (name, read) in &files {
        let theories = jsonl(&dir.join(name));
        let questions: Vec<&Value> = theories
            .iter()
            .flat_map(|t| t["questions"].as_array().unwrap())
            .collect();
        assert_eq!(read.items.len(), questions.len(), "{name}");
        for (item, q) in read.items.iter().zip(&questions) {
            assert_eq!(item.origin.external_id, q["id"].as_str().unwrap());
            assert_eq!(
                item.dataset_label == Some(Label::True),
                q["label"].as_bool().unwrap()
            );
            assert_eq!(extra(item, "strategy"), q["meta"]["strategy"].as_str());
            assert_eq!(
                item.world,
                Some(World::Closed),
                "{name}: no id is marked -OWA-"
            );
        }
        let first = &theories[0];
        assert_eq!(
            read.items[0].premises.join(" "),
            first["context"].as_str().unwrap()
        );
        assert_eq!(read.items[0].origin.position, "line 1, question 1");
    }
}

#[test]
fn ruletaker_ids_marked_open_world_are_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.jsonl");
    let question = |id: &str| {
        format!(
            r#"{{"id":"{id}-1","text":"Bob is red.","label":true,"meta":{{"QDep":0,"strategy":"proof"}}}}"#
        )
    };
    let theory = |id: &str| {
        format!(
            r#"{{"id":"{id}","context":"Bob is red.","questions":[{}]}}"#,
            question(id)
        )
    };
    let text = [
        theory("AttNoneg-OWA-D5-7"),
        theory("AttNoneg-D5-7"),
        theory("AttNoneg-CWA-D5-7"),
    ]
    .join("\n");
    std::fs::write(&path, text).unwrap();
    let read = read_file(Format::RuleTaker, dir.path(), &path).unwrap();
    let worlds: Vec<_> = read.items.iter().map(|i| i.world).collect();
    assert_eq!(
        worlds,
        [Some(World::Open), Some(World::Closed), Some(World::Closed)]
    );
}

#[test]
#[cfg_attr(
    dataset_missing = "belief_r",
    ignore = "needs the dataset belief_r (deltalogic datasets where)"
)]
fn belief_r_pairs_and_step_t_only_items() {
    let dir = crate::common::dataset("belief_r");
    let files = files_under(Format::BeliefR, &dir).unwrap();
    assert_eq!(
        files,
        [dir.join("basic_time_t.csv")],
        "the pair is one unit"
    );
    let read = read_file(Format::BeliefR, &dir, &files[0]).unwrap();
    assert!(read.bad.is_empty(), "{:?}", read.bad.first());
    let via_t1 = read_file(Format::BeliefR, &dir, &dir.join("queries_time_t1.csv")).unwrap();
    assert_eq!(via_t1, read, "either file reads the pair");

    let csv_rows = |name: &str| {
        csv::Reader::from_path(dir.join(name))
            .unwrap()
            .records()
            .count()
    };
    let (t_rows, t1_rows) = (
        csv_rows("basic_time_t.csv"),
        csv_rows("queries_time_t1.csv"),
    );
    assert_eq!((t_rows, t1_rows), (1912, 1744));
    let (pairs, step_t_only): (Vec<&BaseItem>, Vec<&BaseItem>) = read
        .items
        .iter()
        .partition(|i| extra(i, "t1_ground_truth").is_some());
    assert_eq!(pairs.len(), t1_rows, "every step-t+1 row joins");
    assert_eq!(step_t_only.len(), 420);
    fn step_t_key<'a>(item: &&'a BaseItem) -> (&'a str, &'a str) {
        let field = |key| extra(item, key).unwrap();
        (field("t_dataset_id"), field("modus"))
    }
    let revised: BTreeSet<_> = pairs.iter().map(step_t_key).collect();
    assert_eq!(revised.len(), 1492);
    let unrevised: BTreeSet<_> = step_t_only.iter().map(step_t_key).collect();
    assert!(revised.is_disjoint(&unrevised));
    assert_eq!(revised.len() + unrevised.len(), t_rows);

    // MANIFEST's number join is right for the strong rows; weak rows are numbered on their own.
    let number = |item: &BaseItem, key: &str| {
        extra(item, key)
            .unwrap()
            .split('-')
            .next()
            .unwrap()
            .to_string()
    };
    let renumbered = |items: &[&BaseItem]| {
        let differ = |i: &&&BaseItem| number(i, "t_dataset_id") != number(i, "t1_dataset_id");
        items.iter().filter(differ).count()
    };
    let (weak, strong): (Vec<&BaseItem>, Vec<&BaseItem>) = pairs
        .iter()
        .partition(|i| extra(i, "t1_dataset_id").unwrap().ends_with("-weak"));
    assert_eq!((strong.len(), weak.len()), (1282, 462));
    assert_eq!((renumbered(&strong), renumbered(&weak)), (0, 242));
    let restated = pairs
        .iter()
        .filter(|i| extra(i, "t1_restated_premises").is_some())
        .count();
    assert_eq!(restated, 13);

    let first = &read.items[0];
    assert_eq!(
        first.premises,
        [
            "If John reads a book, then John learns something new",
            "John reads a book"
        ]
    );
    assert_eq!(
        first.query,
        "What necessarily had to follow assuming that the above premises were true?"
    );
    assert_eq!(
        extra(first, "t1_premise"),
        Some(
            "If Jessica explains quantum physics to John for the first time, then John learns something new"
        )
    );
    assert_eq!(
        (
            extra(first, "t_ground_truth"),
            extra(first, "t1_ground_truth")
        ),
        (Some("a"), Some("c"))
    );
    assert_eq!(first.origin.file, "queries_time_t1.csv");
    assert_eq!(first.origin.position, "row 1, step t row 1");
    assert!(read
        .items
        .iter()
        .all(|i| i.dataset_label.is_none() && i.origin.dataset == "belief-r"));
}

#[test]
#[cfg_attr(
    dataset_missing = "clomo",
    ignore = "needs the dataset clomo (deltalogic datasets where)"
)]
fn clomo_all_prompt_settings() {
    let dir = crate::common::dataset("clomo/data");
    let files = read_dir(Format::Clomo, &dir);
    assert_all_good(&files);
    let mut expected = BTreeMap::new();
    for setting in ["cot", "few", "zero"] {
        for (split, n) in [("dev", 200), ("test", 200), ("train", 600)] {
            expected.insert(format!("{setting}_{split}.json"), n);
        }
        for (kind, n) in [("ona", 79), ("os", 35), ("osa", 14), ("ow", 72)] {
            expected.insert(format!("type_picked/{setting}_{kind}_test.json"), n);
        }
    }
    let counts: BTreeMap<String, usize> = item_counts(&files)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(counts, expected);
    for (name, read) in &files {
        let records = json_array(&dir.join(name));
        assert_eq!(read.items.len(), records.len(), "{name}");
        for (item, record) in read.items.iter().zip(&records) {
            let info = &record["input_info"];
            let premises: Vec<&str> = ["P", "O", "Om"]
                .iter()
                .map(|k| info[k].as_str().unwrap())
                .collect();
            assert_eq!(item.premises, premises);
            assert_eq!(item.query, info["Q"].as_str().unwrap());
            assert_eq!(
                extra(item, "qtype"),
                Some(record["qtype"].to_string().as_str())
            );
            assert_eq!(
                item.origin.external_id,
                record["id_string"].as_str().unwrap()
            );
        }
    }
}

/// Reads a malformed fixture as a single file and returns what came of it.
fn read_fixture(format: Format, name: &str) -> Result<ReadFile, ReadError> {
    let path = fixture(name);
    read_file(format, path.parent().unwrap(), &path)
}

/// The bad records as `(place, field)`, each naming its file.
fn places(read: &ReadFile, file: &str) -> Vec<(String, String)> {
    for bad in &read.bad {
        assert!(bad.file.ends_with(file), "{bad}");
        assert!(bad.to_string().starts_with(&bad.file), "{bad}");
    }
    read.bad
        .iter()
        .map(|b| (b.place.clone(), b.field.clone()))
        .collect()
}

fn pair(place: &str, field: &str) -> (String, String) {
    (place.to_string(), field.to_string())
}

#[test]
fn truncated_jsonl_line_is_bad_and_reading_goes_on() {
    let read = read_fixture(Format::Folio, "folio_truncated.jsonl").unwrap();
    assert_eq!(read.items.len(), 2);
    assert_eq!(places(&read, "folio_truncated.jsonl"), [pair("line 2", "")]);
    assert!(
        read.bad[0].message.starts_with("invalid JSON: EOF"),
        "{}",
        read.bad[0]
    );
    assert_eq!(read.items[1].origin.position, "line 3");
}

#[test]
fn missing_or_mistyped_field_is_named() {
    let read = read_fixture(Format::Folio, "folio_missing_field.jsonl").unwrap();
    assert_eq!(read.items.len(), 1);
    let expected = [
        pair("line 2", "premises-FOL"),
        pair("line 3", "premises-FOL"),
    ];
    assert_eq!(places(&read, "folio_missing_field.jsonl"), expected);
    assert!(read.bad[1].to_string().ends_with(
        "folio_missing_field.jsonl: line 3: field `premises-FOL`: expected an array of strings"
    ));

    let read = read_fixture(Format::Clomo, "clomo_missing_question.json").unwrap();
    assert_eq!(read.items.len(), 1);
    assert_eq!(
        places(&read, "clomo_missing_question.json"),
        [pair("record 2", "input_info.Q")]
    );
}

#[test]
fn unknown_labels_are_bad_records() {
    let read = read_fixture(Format::Folio, "folio_wrong_label.jsonl").unwrap();
    assert_eq!(read.items.len(), 1);
    assert_eq!(
        places(&read, "folio_wrong_label.jsonl"),
        [pair("line 1", "label")]
    );
    assert!(read.bad[0].message.contains("`Maybe`"));

    let read = read_fixture(Format::RuleTaker, "ruletaker_bad_question.jsonl").unwrap();
    assert_eq!(read.items.len(), 2, "the good theory's two questions");
    let expected = [
        pair("line 1", "questions[1].label"),
        pair("line 3", "questions[0].meta.QDep"),
    ];
    assert_eq!(places(&read, "ruletaker_bad_question.jsonl"), expected);

    let read = read_fixture(Format::ProofWriter, "proofwriter_bad_records.json").unwrap();
    assert_eq!(read.items.len(), 1);
    assert_eq!(read.items[0].premises, ["Bob is cold.", "Bob is red."]);
    let expected = [pair("record 2", "question"), pair("record 3", "answer")];
    assert_eq!(places(&read, "proofwriter_bad_records.json"), expected);
}

#[test]
fn non_json_file_is_not_this_format() {
    for format in [Format::ProofWriter, Format::Folio, Format::Clomo] {
        match read_fixture(format, "not_json.json") {
            Err(e @ ReadError::NotThisFormat { .. }) => {
                assert!(e.to_string().contains("not_json.json"), "{e}");
                assert!(e.to_string().contains("line 1"), "{e}");
            }
            other => panic!("{format:?}: {other:?}"),
        }
    }
}

#[test]
fn belief_r_wrong_header_is_not_this_format() {
    let path = fixture("belief_r_header/queries_time_t1.csv");
    match read_file(Format::BeliefR, path.parent().unwrap(), &path) {
        Err(e @ ReadError::NotThisFormat { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("belief_r_header/basic_time_t.csv") && text.contains("`questions`"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn belief_r_orphan_and_bad_rows() {
    let path = fixture("belief_r_orphan");
    let files = files_under(Format::BeliefR, &path).unwrap();
    let read = read_file(Format::BeliefR, &path, &files[0]).unwrap();
    let expected = [pair("row 2", "questions"), pair("row 3", "modus")];
    assert_eq!(places(&read, "queries_time_t1.csv"), expected);
    assert!(read.bad[0]
        .message
        .contains("If Tom runs, then Tom is tired"));
    let ids: Vec<&str> = read
        .items
        .iter()
        .map(|i| i.origin.external_id.as_str())
        .collect();
    assert_eq!(
        ids,
        ["t1:0-strong/ponens", "t:1-strong/ponens"],
        "a step-t row whose revision is bad stands alone"
    );
}

#[test]
fn missing_paths_are_io_errors() {
    let missing = fixture("no_such_dir");
    assert!(matches!(
        files_under(Format::Folio, &missing),
        Err(ReadError::Io { .. })
    ));
    let err = read_file(Format::Folio, &missing, &missing.join("x.jsonl")).unwrap_err();
    assert!(err.to_string().contains("x.jsonl"), "{err}");
}

#[test]
fn format_names_on_the_command_line() {
    use clap::ValueEnum;
    let names: Vec<String> = Format::value_variants()
        .iter()
        .map(|f| f.to_possible_value().unwrap().get_name().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "folio",
            "proofwriter",
            "ruletaker",
            "belief-r",
            "clomo",
            "robustlr-glore"
        ]
    );
    for format in Format::value_variants() {
        assert_eq!(Format::from_str(format.dataset(), false), Ok(*format));
    }
}

#[test]
fn non_utf8_file_is_not_this_format() {
    let err = read_fixture(Format::Folio, "latin1.jsonl").unwrap_err();
    assert!(matches!(err, ReadError::NotThisFormat { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("latin1.jsonl: not a folio file: not UTF-8"),
        "{err}"
    );
}

#[test]
fn belief_r_without_its_step_t_file_says_so() {
    let dir = fixture("belief_r_alone");
    let files = files_under(Format::BeliefR, &dir).unwrap();
    assert_eq!(files, [dir.join("queries_time_t1.csv")]);
    match read_file(Format::BeliefR, &dir, &files[0]) {
        Err(ReadError::Io { file, .. }) => {
            assert!(file.ends_with("belief_r_alone/basic_time_t.csv"))
        }
        other => panic!("{other:?}"),
    }
}
