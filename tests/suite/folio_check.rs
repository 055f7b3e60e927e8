//! Parses every FOL annotation of FOLIO v0.0 and checks the validation labels with the
//! project's own checker. Gold labels are not taken on faith: disagreements are printed.
//! Run with `cargo test --test folio_check -- --nocapture` to see the figures.

use deltalogic::logic::fol::{parse_formula, Formula};
use deltalogic::logic::folio::{consistent, decide, Decision};
use deltalogic::logic::Label;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const FILES: [&str; 2] = ["folio-train.jsonl", "folio-validation.jsonl"];

/// Annotations that are malformed in the data itself: (file, 1-based line, string). Each is
/// missing a formula, a connective or a parenthesis, so any reading of it would be a guess.
#[rustfmt::skip]
const MALFORMED: &[(&str, usize, &str)] = &[
    // One ')' too many at the end.
    ("folio-train.jsonl", 302, "∀x ((RelaySwimmer(x) ∧ ¬ParticipatedIn(x, finalheatfreerelay)) ↔ ¬Recieved(x, medal)))"),
    ("folio-train.jsonl", 303, "∀x ((RelaySwimmer(x) ∧ ¬ParticipatedIn(x, finalheatfreerelay)) ↔ ¬Recieved(x, medal)))"),
    // One ')' too many after Florida(x), leaving WantToGo(x) outside the scope of ∀x.
    ("folio-train.jsonl", 398, "∀x ((Orlando(x) ∨ Miami(x)) ∧ Florida(x)) → WantToGo(x))"),
    ("folio-train.jsonl", 399, "∀x ((Orlando(x) ∨ Miami(x)) ∧ Florida(x)) → WantToGo(x))"),
    ("folio-train.jsonl", 400, "∀x ((Orlando(x) ∨ Miami(x)) ∧ Florida(x)) → WantToGo(x))"),
    // Stray ')' at the end.
    ("folio-train.jsonl", 425, "¬WorkAtPool(mary))"),
    ("folio-train.jsonl", 426, "¬WorkAtPool(mary))"),
    ("folio-train.jsonl", 427, "¬WorkAtPool(mary))"),
    // Missing '(' before ¬WorkTeams: grouping of ∧ and ∨ unclear.
    ("folio-train.jsonl", 449, "(WorkTeams(kat) ∧ Tired(kat)) ∨ ¬WorkTeams(kat) ∧ ¬Tired(kat))"),
    ("folio-train.jsonl", 450, "(WorkTeams(kat) ∧ Tired(kat)) ∨ ¬WorkTeams(kat) ∧ ¬Tired(kat))"),
    ("folio-train.jsonl", 451, "(WorkTeams(kat) ∧ Tired(kat)) ∨ ¬WorkTeams(kat) ∧ ¬Tired(kat))"),
    // Empty annotation (a premise without its formula).
    ("folio-train.jsonl", 470, ""),
    ("folio-train.jsonl", 471, ""),
    // Missing '(' at the start: the ⊕ group is unclear.
    ("folio-train.jsonl", 615, "Luxury(Jess) ⊕ Miserly(Jess)) →  Luxury(Jess)"),
    ("folio-train.jsonl", 616, "Luxury(Jess) ⊕ Miserly(Jess)) →  Luxury(Jess)"),
    ("folio-train.jsonl", 617, "Luxury(Jess) ⊕ Miserly(Jess)) →  Luxury(Jess)"),
    // Stray ')' at the end.
    ("folio-train.jsonl", 749, "Code(burger) ∧ Mac(burger))"),
    ("folio-train.jsonl", 750, "Code(burger) ∧ Mac(burger))"),
    ("folio-train.jsonl", 751, "Code(burger) ∧ Mac(burger))"),
    ("folio-train.jsonl", 752, "Code(burger) ∧ Mac(burger))"),
    // Missing ')' at the end.
    ("folio-train.jsonl", 753, "∀x (Road(x) → (MadeOfConcrete(x) ∨ MadeOfAsphalt(x))"),
    ("folio-train.jsonl", 754, "∀x (Road(x) → (MadeOfConcrete(x) ∨ MadeOfAsphalt(x))"),
    ("folio-train.jsonl", 755, "∀x (Road(x) → (MadeOfConcrete(x) ∨ MadeOfAsphalt(x))"),
    // A connective is missing between Country(x) and Nearby(...).
    ("folio-train.jsonl", 762, "∃x (Country(x) Nearby(medeempire, x) ∧ PlotsToSwallowUp(medeempire, x))"),
    ("folio-train.jsonl", 763, "∃x (Country(x) Nearby(medeempire, x) ∧ PlotsToSwallowUp(medeempire, x))"),
    ("folio-train.jsonl", 764, "∃x (Country(x) Nearby(medeempire, x) ∧ PlotsToSwallowUp(medeempire, x))"),
    ("folio-train.jsonl", 765, "∃x (Country(x) Nearby(medeempire, x) ∧ PlotsToSwallowUp(medeempire, x))"),
    // Empty annotation.
    ("folio-train.jsonl", 816, ""),
    ("folio-train.jsonl", 817, ""),
    ("folio-train.jsonl", 818, ""),
    ("folio-train.jsonl", 819, ""),
    // y and x used after the group that binds them ends.
    ("folio-train.jsonl", 937, "∀x ∃y (BittenBy(x, y) ∨ ScratchedBy(x, y)) → AttackedBy(x,y)"),
    ("folio-train.jsonl", 938, "∀x ∃y (BittenBy(x, y) ∨ ScratchedBy(x, y)) → AttackedBy(x,y)"),
    ("folio-train.jsonl", 939, "∀x ∃y (BittenBy(x, y) ∨ ScratchedBy(x, y)) → AttackedBy(x,y)"),
    // Conclusion with a '(' missing: which side of → the ∧ belongs to is unclear.
    ("folio-validation.jsonl", 3, "Chaperone(bonnie) ⊕ TalentShows(bonnie) → AcademicCareer(bonnie) ∧ Inactive(bonnie))"),
    // A comma where a connective should be (∧ or →: a guess either way).
    ("folio-validation.jsonl", 88, "∀x ∀y (SuperheroMovie(x), NamedAfter(x, y) → GoodGuy(y))"),
    // Missing '(' before ¬Spill / ¬Foodie, as in train line 449.
    ("folio-validation.jsonl", 109, "(Spill(peter) ∧ OnlyChild(peter)) ∨ ¬Spill(peter) ∧ ¬OnlyChild(peter))"),
    ("folio-validation.jsonl", 110, "(Spill(peter) ∧ OnlyChild(peter)) ∨ ¬Spill(peter) ∧ ¬OnlyChild(peter))"),
    ("folio-validation.jsonl", 111, "(Spill(peter) ∧ OnlyChild(peter)) ∨ ¬Spill(peter) ∧ ¬OnlyChild(peter))"),
    ("folio-validation.jsonl", 111, "(Foodie(peter) ∧ HighIncome(peter)) ∨ ¬Foodie(peter) ∧ ¬HighIncome(peter))"),
];

struct Record {
    line: usize,
    premises: Vec<String>,
    conclusion: Option<String>,
    label: Label,
}

fn read(file: &str) -> Vec<Record> {
    let path = crate::common::dataset("folio/v0.0").join(file);
    let path = path.display();
    let text = std::fs::read_to_string(path.to_string()).unwrap_or_else(|e| panic!("{path}: {e}"));
    let strings = |v: &Value| -> Vec<String> {
        let list = v
            .as_array()
            .unwrap_or_else(|| panic!("{path}: premises-FOL is not a list"));
        list.iter()
            .map(|s| s.as_str().unwrap_or_default().to_string())
            .collect()
    };
    (text.lines().enumerate())
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}:{}: {e}", i + 1));
            let label = v["label"].as_str().and_then(Label::parse);
            Record {
                line: i + 1,
                premises: strings(&v["premises-FOL"]),
                conclusion: v["conclusion-FOL"].as_str().map(str::to_string),
                label: label.unwrap_or_else(|| panic!("{path}:{}: bad label", i + 1)),
            }
        })
        .collect()
}

fn parse_all(strings: &[String]) -> Option<Vec<Formula>> {
    strings.iter().map(|s| parse_formula(s).ok()).collect()
}

#[test]
#[cfg_attr(
    dataset_missing = "folio/v0.0",
    ignore = "needs the dataset folio/v0.0 (deltalogic datasets where)"
)]
fn every_annotation_parses_except_the_malformed_ones() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for file in FILES {
        for record in read(file) {
            for s in record.premises.iter().chain(&record.conclusion) {
                match parse_formula(s) {
                    Ok(f) => {
                        parsed += 1;
                        let shown = f.to_string();
                        assert_eq!(
                            parse_formula(&shown).as_ref(),
                            Ok(&f),
                            "{file}:{}: {shown}",
                            record.line
                        );
                    }
                    Err(e) => {
                        println!("{file}:{}: {e}", record.line);
                        failures.push((file, record.line, s.trim().to_string()));
                    }
                }
            }
        }
    }
    println!("parsed {parsed} FOL strings, {} malformed", failures.len());
    let known: Vec<_> = MALFORMED
        .iter()
        .map(|(f, l, s)| (*f, *l, s.trim().to_string()))
        .collect();
    assert_eq!(failures, known);
}

#[derive(Default)]
struct Tally {
    agree: usize,
    disagree: usize,
    undecided: usize,
    unparsed: usize,
}

#[test]
#[cfg_attr(
    dataset_missing = "folio/v0.0",
    ignore = "needs the dataset folio/v0.0 (deltalogic datasets where)"
)]
fn validation_labels() {
    let mut spent = Duration::ZERO;
    let mut slowest = Duration::ZERO;
    let mut per_label: BTreeMap<Label, Tally> = BTreeMap::new();
    let mut disagreements = Vec::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let records = read("folio-validation.jsonl");
    assert_eq!(records.len(), 204);
    for record in &records {
        let tally = per_label.entry(record.label).or_default();
        let conclusion = record
            .conclusion
            .as_deref()
            .and_then(|s| parse_formula(s).ok());
        let (Some(premises), Some(conclusion)) = (parse_all(&record.premises), conclusion) else {
            tally.unparsed += 1;
            continue;
        };
        let t = Instant::now();
        let decision = decide(&premises, &conclusion);
        spent += t.elapsed();
        slowest = slowest.max(t.elapsed());
        match decision {
            Decision::Proved(ours) if ours == record.label => tally.agree += 1,
            Decision::Proved(ours) => {
                tally.disagree += 1;
                disagreements.push((record.line, record.label, ours));
            }
            Decision::Undecided(why) => {
                tally.undecided += 1;
                *reasons.entry(why).or_default() += 1;
            }
        }
        check_soundness_properties(record.line, &premises, &conclusion);
    }
    let total = |f: fn(&Tally) -> usize| per_label.values().map(f).sum::<usize>();
    let (agree, disagree) = (total(|t| t.agree), total(|t| t.disagree));
    let (undecided, unparsed) = (total(|t| t.undecided), total(|t| t.unparsed));
    println!("FOLIO validation ({} items): agree {agree}, disagree {disagree}, undecided {undecided}, unparsed {unparsed}", records.len());
    for (label, t) in &per_label {
        println!(
            "  gold {label:<9}: agree {:>3}, disagree {:>3}, undecided {:>3}, unparsed {:>3}",
            t.agree, t.disagree, t.undecided, t.unparsed
        );
    }
    println!(
        "  agreement: {:.1}% of all items, {:.1}% of decided items",
        pct(agree, records.len()),
        pct(agree, agree + disagree)
    );
    for (why, n) in &reasons {
        println!("  undecided ({n}): {why}");
    }
    for (line, gold, ours) in &disagreements {
        println!("  disagreement: line {line}: gold {gold}, ours {ours}");
    }
    println!(
        "  decide(): {spent:?} for {} items, {:?} on average, slowest {slowest:?}",
        agree + disagree + undecided,
        spent / (agree + disagree + undecided).max(1) as u32
    );
    // Sanity floor, far below the observed figure: a broken checker decides almost nothing.
    assert!(agree * 2 > records.len(), "agreement collapsed: {agree}");
}

fn pct(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

fn mirror(d: &Decision) -> Option<Label> {
    match d {
        Decision::Proved(Label::True) => Some(Label::False),
        Decision::Proved(Label::False) => Some(Label::True),
        Decision::Proved(Label::Uncertain) => Some(Label::Uncertain),
        Decision::Undecided(_) => None,
    }
}

/// Properties every sound checker has, whatever the gold label says.
fn check_soundness_properties(line: usize, premises: &[Formula], conclusion: &Formula) {
    let decision = decide(premises, conclusion);
    let negated = Formula::Not(Box::new(conclusion.clone()));
    let proved = |d: &Decision| matches!(d, Decision::Proved(_));
    // No verdict on premises the checker itself refutes.
    if consistent(premises) == Some(false) {
        assert!(
            !proved(&decision),
            "line {line}: verdict on inconsistent premises"
        );
    }
    // Asking for ¬q mirrors the verdict for q.
    let flipped = decide(premises, &negated);
    if proved(&decision) && proved(&flipped) {
        assert_eq!(
            Decision::Proved(mirror(&decision).unwrap()),
            flipped,
            "line {line}: ¬q"
        );
    }
    if let Decision::Proved(label) = decision {
        // A proved consequence added as a premise keeps the label; its negation contradicts.
        if label != Label::Uncertain {
            let implied = if label == Label::True {
                conclusion.clone()
            } else {
                negated
            };
            let mut with = premises.to_vec();
            with.push(implied.clone());
            let again = decide(&with, conclusion);
            assert!(
                !proved(&again) || again == decision,
                "line {line}: adding the consequence gave {again:?}"
            );
            with.pop();
            with.push(Formula::Not(Box::new(implied)));
            assert_ne!(
                consistent(&with),
                Some(true),
                "line {line}: a model contradicts the proof"
            );
        }
    }
}

/// The train split has no conclusion-FOL, but its premise sets can still be checked: every
/// distinct one is shown consistent or inconsistent, and an inconsistent one gets no verdict.
#[test]
#[cfg_attr(
    dataset_missing = "folio/v0.0",
    ignore = "needs the dataset folio/v0.0 (deltalogic datasets where)"
)]
fn train_premise_sets() {
    let mut seen = std::collections::BTreeSet::new();
    let (mut consistent_sets, mut unknown, mut unparsed) = (0, 0, 0);
    let mut inconsistent = Vec::new();
    for record in read("folio-train.jsonl") {
        if !seen.insert(record.premises.clone()) {
            continue;
        }
        let Some(premises) = parse_all(&record.premises) else {
            unparsed += 1;
            continue;
        };
        match consistent(&premises) {
            Some(true) => consistent_sets += 1,
            Some(false) => {
                let verdict = decide(&premises, &premises[0]);
                let expected = Decision::Undecided("premises inconsistent".into());
                assert_eq!(verdict, expected, "line {}", record.line);
                inconsistent.push(record.line);
            }
            None => unknown += 1,
        }
    }
    println!(
        "FOLIO train premise sets ({}): consistent {consistent_sets}, inconsistent {} (lines {inconsistent:?}), unknown {unknown}, unparsed {unparsed}",
        seen.len(),
        inconsistent.len()
    );
}
