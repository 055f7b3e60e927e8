//! RobustLR sets: every label is the solver's, recomputed here from the item's own English (so the
//! rendering round-trips through the parser); every set and group is made; equivalence items keep
//! their base's label; the same seed gives the same families.

use deltalogic::datasets::{read_file, BaseItem, Format};
use deltalogic::logic::Label;
use deltalogic::robustlr::{build, generated_items, BuildConfig, Family, SetName, Source};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const DATASETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets");
const PER_SET: usize = 12;

fn proofwriter_items() -> Vec<BaseItem> {
    let dir = Path::new(DATASETS).join("proofwriter/logic-lm");
    let read = read_file(Format::ProofWriter, &dir, &dir.join("dev.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(read.bad.is_empty(), "{:?}", read.bad);
    read.items
}

fn config(seed: u64, from: Source) -> BuildConfig {
    BuildConfig {
        seed,
        per_set: PER_SET,
        from,
    }
}

/// The groups each set must contain.
fn expected_groups(set: SetName) -> BTreeSet<&'static str> {
    let groups: &[&str] = match set {
        SetName::CCs => &["BASE", "CONJ", "CONJ+NEG"],
        SetName::DCs => &["BASE", "DISJ", "DISJ+NEG"],
        SetName::NCs => &["BASE", "NEG"],
        SetName::CEs => &["BASE", "CONTRAPOSITIVE"],
        SetName::D1Es => &["BASE", "DISTRIBUTIVE-1"],
        SetName::D2Es => &["BASE", "DISTRIBUTIVE-2"],
    };
    groups.iter().copied().collect()
}

fn check_families(families: &[Family]) {
    let mut groups: BTreeMap<SetName, BTreeSet<String>> = BTreeMap::new();
    for family in families {
        let base = &family.items[0];
        assert_eq!(base.group, "BASE", "{}: base item first", family.theory);
        for item in &family.items {
            let again = item
                .relabel()
                .unwrap_or_else(|e| panic!("{} {}: {e:#}", family.set, family.theory));
            assert_eq!(
                again, item.label,
                "{} {} {}: stored label differs from the solver's",
                family.set, family.theory, item.group
            );
            assert_eq!(item.semantics, family.set.semantics());
            if family.set.is_equivalence() {
                assert_eq!(item.label, base.label, "{} {}", family.set, family.theory);
            }
            groups
                .entry(family.set)
                .or_default()
                .insert(item.group.clone());
        }
        // Every perturbation differs from the base in its premises.
        for item in &family.items[1..] {
            assert_ne!(
                item.premises, base.premises,
                "{} {}",
                family.set, family.theory
            );
        }
    }
    for set in SetName::ALL {
        let got: BTreeSet<&str> = groups
            .get(&set)
            .map(|g| g.iter().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(got, expected_groups(set), "{set}");
        let made = families.iter().filter(|f| f.set == set).count();
        assert_eq!(made, PER_SET, "{set}");
    }
}

#[test]
fn proofwriter_families_carry_solver_labels() {
    let items = proofwriter_items();
    let (families, report) = build(&items, &config(0, Source::ProofWriter)).unwrap();
    check_families(&families);
    assert_eq!(report.unparseable, 0);
    // Contrast sets change labels somewhere: a set whose every item keeps the base label would
    // test nothing.
    for set in [SetName::CCs, SetName::DCs, SetName::NCs] {
        assert!(
            families
                .iter()
                .filter(|f| f.set == set)
                .any(|f| f.items.iter().any(|i| i.label != f.items[0].label)),
            "{set}"
        );
    }
}

#[test]
fn generated_families_carry_solver_labels() {
    let items = generated_items(3);
    let (families, _) = build(&items, &config(3, Source::Generated)).unwrap();
    check_families(&families);
}

#[test]
fn same_seed_same_families_other_seed_other_families() {
    let items = proofwriter_items();
    let a = build(&items, &config(5, Source::ProofWriter)).unwrap().0;
    let mut shuffled = items.clone();
    shuffled.reverse();
    let b = build(&shuffled, &config(5, Source::ProofWriter)).unwrap().0;
    assert_eq!(a, b, "input order or run must not matter");
    let c = build(&items, &config(6, Source::ProofWriter)).unwrap().0;
    assert_ne!(a, c);
}

#[test]
fn contrast_labels_are_binary_and_equivalence_may_be_uncertain_only_never_here() {
    let (families, _) = build(&proofwriter_items(), &config(1, Source::ProofWriter)).unwrap();
    for f in &families {
        for i in &f.items {
            if !f.set.is_equivalence() {
                assert_ne!(i.label, Label::Uncertain, "closed world is two-valued");
            }
        }
        // The base of every family is decided: the chosen rule is needed for its label.
        assert_ne!(f.items[0].label, Label::Uncertain, "{} {}", f.set, f.theory);
    }
}

#[test]
fn building_from_a_source_with_no_items_is_an_error() {
    let err = build(&[], &config(0, Source::Generated)).unwrap_err();
    assert!(err.to_string().contains("no generated items"), "{err}");
}

const GLORE: &str = "robustlr/glore_subset/robustlr_1k.jsonl";

#[test]
fn glore_subset_reads_every_item() {
    let path = Path::new(DATASETS).join(GLORE);
    let read = read_file(Format::RobustLrGlore, path.parent().unwrap(), &path)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(read.bad.is_empty(), "{:?}", read.bad);
    assert_eq!(read.items.len(), 1000);
    let count = |l| {
        read.items
            .iter()
            .filter(|i| i.dataset_label == Some(l))
            .count()
    };
    assert_eq!((count(Label::True), count(Label::False)), (495, 505));
    let first = &read.items[0];
    assert_eq!(first.premises[0], "Anne is Charlie's sister.");
    assert_eq!(first.query, "Erin is smart.");
    assert_eq!(first.origin.position, "line 1");
}

#[test]
fn glore_malformed_lines_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let good = r#"{"input": [{"role": "user", "content": "From the premise: \"Bob is red.\" Can we infer the hypothesis: \"Bob is red.\"?"}], "ideal": "Yes"}"#;
    let no_hypothesis = r#"{"input": [{"role": "user", "content": "From the premise: \"Bob is red.\""}], "ideal": "Yes"}"#;
    let bad_answer = good.replace("\"Yes\"", "\"Maybe\"");
    std::fs::write(&path, format!("{good}\n{no_hypothesis}\n{bad_answer}\n")).unwrap();
    let read = read_file(Format::RobustLrGlore, dir.path(), &path).unwrap();
    assert_eq!(read.items.len(), 1);
    assert_eq!(read.items[0].premises, ["Bob is red."]);
    let errors: Vec<String> = read.bad.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("bad.jsonl: line 2: field `input[0].content`"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("line 3: field `ideal`: unknown answer `Maybe`"),
        "{}",
        errors[1]
    );
}

/// How much of the GLoRE subset the grammar covers, and whether the closed-world solver agrees
/// with its gold where it does. Measured, not forced: the counts are pinned so that a grammar
/// change that moves them is noticed (see docs/robustlr.md).
#[test]
fn glore_subset_parse_and_agreement_counts() {
    use deltalogic::logic::english::{parse_query, parse_statement};
    use deltalogic::robustlr::Semantics;
    let path = Path::new(DATASETS).join(GLORE);
    let read = read_file(Format::RobustLrGlore, path.parent().unwrap(), &path).unwrap();
    let (mut sentences, mut parsed_sentences) = (0, 0);
    let (mut parsed_items, mut agree) = (0, 0);
    for item in &read.items {
        let statements: Vec<_> = item.premises.iter().map(|p| parse_statement(p)).collect();
        sentences += statements.len();
        parsed_sentences += statements.iter().filter(|s| s.is_ok()).count();
        let (Ok(theory), Ok(query)) = (
            statements.into_iter().collect::<Result<Vec<_>, _>>(),
            parse_query(&item.query),
        ) else {
            continue;
        };
        parsed_items += 1;
        if Semantics::ClosedWorld.label(&theory, &query).ok() == item.dataset_label {
            agree += 1;
        }
    }
    println!("GLoRE RobustLR: {parsed_sentences}/{sentences} sentences, {parsed_items}/1000 items parse; solver agrees on {agree}");
    assert_eq!(
        (parsed_sentences, sentences, parsed_items, agree),
        (3955, 32929, 0, 0)
    );
}
