//! RobustLR sets: every label is the solver's, recomputed here from the item's own English (so the
//! rendering round-trips through the parser); every set and group is made; equivalence items keep
//! their base's label; the same seed gives the same families.

use deltalogic::benchmarks::robustlr::{
    families as build, generated_items, BuildConfig, Family, SetName, Source,
};
use deltalogic::datasets::{read_file, BaseItem, Format};
use deltalogic::logic::Label;
use std::collections::{BTreeMap, BTreeSet};

const PER_SET: usize = 12;

fn proofwriter_items() -> Vec<BaseItem> {
    let dir = crate::common::dataset("proofwriter/logic-lm");
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
#[cfg_attr(
    dataset_missing = "proofwriter/logic-lm",
    ignore = "needs the dataset proofwriter/logic-lm (deltalogic datasets where)"
)]
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
#[cfg_attr(
    dataset_missing = "proofwriter/logic-lm",
    ignore = "needs the dataset proofwriter/logic-lm (deltalogic datasets where)"
)]
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
#[cfg_attr(
    dataset_missing = "proofwriter/logic-lm",
    ignore = "needs the dataset proofwriter/logic-lm (deltalogic datasets where)"
)]
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
#[cfg_attr(
    dataset_missing = "robustlr/glore_subset",
    ignore = "needs the dataset robustlr/glore_subset (deltalogic datasets where)"
)]
fn glore_subset_reads_every_item() {
    let path = crate::common::dataset(GLORE);
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

/// How much of the GLoRE subset the grammar covers. Measured, not forced: the counts are pinned
/// so that a grammar change that moves them is noticed (see docs/robustlr.md). No item parses
/// whole: conclusion-first rules ("X if Y") and kinship phrasing block every one (`datasets check
/// --refused`), so the solver's agreement with the dataset cannot be measured yet; when an item
/// first parses, this test fails and the agreement check belongs here.
#[test]
#[cfg_attr(
    dataset_missing = "robustlr/glore_subset",
    ignore = "needs the dataset robustlr/glore_subset (deltalogic datasets where)"
)]
fn glore_subset_parse_counts() {
    use deltalogic::logic::english::{parse_query, parse_statement};
    let path = crate::common::dataset(GLORE);
    let read = read_file(Format::RobustLrGlore, path.parent().unwrap(), &path).unwrap();
    let (mut sentences, mut parsed_sentences, mut parsed_items) = (0, 0, 0);
    for item in &read.items {
        let parsed = item
            .premises
            .iter()
            .filter(|p| parse_statement(p).is_ok())
            .count();
        sentences += item.premises.len();
        parsed_sentences += parsed;
        if parsed == item.premises.len() && parse_query(&item.query).is_ok() {
            parsed_items += 1;
        }
    }
    println!(
        "GLoRE RobustLR: {parsed_sentences}/{sentences} sentences, {parsed_items}/1000 items parse"
    );
    assert_eq!(
        (parsed_sentences, sentences, parsed_items),
        (3955, 32929, 0)
    );
}

// ---- RobustLR as a question set: build, verify, score, report ----

use crate::common;

use common::{members, model_id, score_with};
use deltalogic::benchmarks::deltalogic::{self as episodes, Episode};
use deltalogic::benchmarks::question::{self as questions, Question, Verdict};
use deltalogic::benchmarks::question::{self as prompt, QuestionTemplate};
use deltalogic::benchmarks::robustlr::{self as rq, glore};
use deltalogic::eval::{Normalisation, ResultRecord, ResultRow, ScoreReport, Turn};
use deltalogic::logic::Semantics;
use deltalogic::report::{self, Format as ReportFormat};
use deltalogic::store::{Id, Record, Store};

const Q_PER_SET: usize = 4;

/// A store with the RobustLR questions of generated theories (seed 2) as set `name`.
fn built_questions(dir: &tempfile::TempDir, name: &str) -> (Store, rq::BuildOutcome) {
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let config = BuildConfig {
        seed: 2,
        per_set: Q_PER_SET,
        from: Source::Generated,
    };
    let out = rq::build(&reg, &config, name).unwrap();
    (reg, out)
}

#[test]
fn stored_robustlr_questions_reverify_with_the_solver() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, out) = built_questions(&dir, "rl");
    let items: usize = out.report.sets.iter().map(|s| s.items).sum();
    assert_eq!(
        out.stored.questions, items,
        "one question per item, none merged"
    );
    let set = common::set(&reg, "rl").1;
    let qs: Vec<(Id, Question)> = members(&reg, "rl");
    assert_eq!(set.benchmark, rq::BENCHMARK);
    let mut families: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (_, q) in &qs {
        assert_eq!(
            questions::verify(q).unwrap(),
            Verdict::Solved,
            "{}",
            q.query
        );
        let m = rq::Membership::read(|key| q.tag(key)).unwrap();
        let set = m.set;
        assert_eq!(q.semantics, set.semantics(), "{set}");
        let labels: Vec<Label> = q.options.iter().map(|o| o.label).collect();
        assert_eq!(labels, [Label::True, Label::False]);
        assert!(expected_groups(set).contains(m.group.as_str()));
        if m.position == 0 {
            assert_eq!(m.group, "BASE");
        }
        *families.entry((set.to_string(), m.family)).or_default() += 1;
    }
    assert_eq!(families.len(), SetName::ALL.len() * Q_PER_SET);
    // The check can fail: a question whose gold is flipped is refused.
    let mut wrong = qs[0].1.clone();
    wrong.gold = if wrong.gold == Label::True {
        Label::False
    } else {
        Label::True
    };
    assert!(questions::verify(&wrong).is_err());
    // Classical gold is not the closed-world solver's everywhere: the semantics matters.
    let as_closed = |q: &Question| Question {
        semantics: Semantics::ClosedWorld,
        ..q.clone()
    };
    assert!(
        qs.iter()
            .filter(|(_, q)| q.semantics == Semantics::Classical)
            .any(|(_, q)| questions::verify(&as_closed(q)).is_err()),
        "some equivalence item needs classical entailment"
    );
    // The same seed stores nothing new and names the same set.
    let config = BuildConfig {
        seed: 2,
        per_set: Q_PER_SET,
        from: Source::Generated,
    };
    let again = rq::build(&reg, &config, "rl2").unwrap();
    assert_eq!(
        (again.stored.set, again.stored.new_questions),
        (out.stored.set, 0)
    );
}

#[test]
fn robustlr_from_proofwriter_needs_ingested_items() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let config = BuildConfig {
        seed: 0,
        per_set: 1,
        from: Source::ProofWriter,
    };
    let e = rq::build(&reg, &config, "rl").unwrap_err().to_string();
    assert!(e.contains("deltalogic ingest proofwriter"), "{e}");
}

#[test]
fn the_plain_question_prompt_is_deltalogics_wording() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, _) = built_questions(&dir, "rl");
    let qs: Vec<(Id, Question)> = members(&reg, "rl");
    let t = prompt::plain_question();
    let closed = &qs
        .iter()
        .find(|(_, q)| q.semantics == Semantics::ClosedWorld)
        .unwrap()
        .1;
    let numbered: String = closed
        .premises
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}. {p}\n", i + 1))
        .collect();
    assert_eq!(
        t.prompt(closed).unwrap(),
        format!(
            "Premises:\n{numbered}\n\
             Closed world: anything that is not stated and cannot be derived from the premises is false.\n\
             Question: Based only on the premises, is the following statement True or False?\n\
             Statement: {}\nLabel:",
            closed.query
        )
    );
    assert_eq!(t.labels(closed).unwrap(), [" True", " False"]);
    let classical = &qs
        .iter()
        .find(|(_, q)| q.semantics == Semantics::Classical)
        .unwrap()
        .1;
    assert!(!t.prompt(classical).unwrap().contains("Closed world"));
    assert!(!t.prompt(classical).unwrap().contains("Uncertain"));

    // With all three options the prompt is the `plain` step-1 prompt of the same premises and
    // statement: DeltaLogic and the question share every score.
    common::generated_set(&reg, "dl", 9, 2);
    let eps: Vec<(Id, Episode)> = members(&reg, "dl");
    for ep in eps.iter().map(|(_, e)| e) {
        let mut q = closed.clone();
        q.semantics = ep.semantics;
        q.premises = ep.premises.iter().map(|p| p.text.clone()).collect();
        q.query = ep.query.text.clone();
        q.options.push(deltalogic::benchmarks::question::Choice {
            label: Label::Uncertain,
            text: "Uncertain".into(),
        });
        let plain = episodes::prompts::plain();
        assert_eq!(t.prompt(&q).unwrap(), plain.step1(ep).unwrap());
        assert_eq!(t.labels(&q).unwrap(), plain.labels);
    }
}

fn score_set(reg: &Store, set: &str) -> (ScoreReport, Id) {
    let out = score_with(reg, "m1", set, None, Normalisation::Mean);
    (out.report, out.result)
}

#[test]
fn robustlr_scoring_is_cached_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, out) = built_questions(&dir, "rl");
    let n = out.stored.questions;
    let (first, result) = score_set(&reg, "rl");
    assert_eq!(first.scores_needed, 2 * n, "True and False per question");
    assert!(first.scores_computed > 0);
    let (second, again) = score_set(&reg, "rl");
    assert_eq!((second.scores_computed, second.forward_tokens), (0, 0));
    assert_eq!(second.scores_found_in_cache, 2 * n);
    assert_eq!(again, result);

    let entries = report::entries(&reg, deltalogic::benchmarks::ALL, &[], &["rl".into()]).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].template, "plain-question");
    let m = &entries[0].evaluation.metrics;
    let n = |v: &serde_json::Value| v.as_u64().unwrap() as usize;
    assert_eq!(n(&m["overall"]["n"]), SetName::ALL.len() * Q_PER_SET);
    for set in SetName::ALL {
        let s = &m["by_set"][set.as_str()];
        assert_eq!(n(&s["families"]), Q_PER_SET);
        let built = out
            .report
            .sets
            .iter()
            .find(|r| r.set == set.as_str())
            .unwrap();
        assert_eq!(n(&s["items"]), built.items);
        let groups: BTreeSet<&str> = s["by_group"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(groups, expected_groups(set));
    }
    let md = report::render(&entries, ReportFormat::Md).unwrap();
    assert!(md.contains("| Weighted F1 | Consistency | n |"), "{md}");
    assert!(md.contains("## RobustLR\n"), "{md}");
    assert!(md.contains("### RobustLR by C-CS group\n"), "{md}");
    assert!(md.contains("| CONJ+NEG |"), "{md}");
    let csv = report::render(&entries, ReportFormat::Csv).unwrap();
    assert!(csv
        .lines()
        .any(|l| l.starts_with("robustlr,") && l.contains(",set,D1-ES,consistency,")));
    let json = report::render(&entries, ReportFormat::Json).unwrap();
    assert!(json.contains("\"benchmark\": \"robustlr\""), "{json}");
}

/// Hand-made questions and answers: two C-CS families and one C-ES family.
#[test]
fn hand_made_answers_give_hand_computed_weighted_f1() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    use Label::{False as F, True as T};
    // (set, family, [(group, gold, pred)]), base first.
    type Hand<'a> = (&'a str, &'a str, &'a [(&'a str, Label, Label)]);
    let families: [Hand; 3] = [
        (
            "C-CS",
            "a",
            &[("BASE", T, T), ("CONJ", F, F), ("CONJ+NEG", F, F)],
        ),
        (
            "C-CS",
            "b",
            &[("BASE", T, T), ("CONJ", F, T), ("CONJ+NEG", F, T)],
        ),
        ("C-ES", "c", &[("BASE", T, T), ("CONTRAPOSITIVE", T, F)]),
    ];
    let mut qs = Vec::new();
    let mut preds = Vec::new();
    for (set, family, items) in families {
        for (i, &(group, gold, pred)) in items.iter().enumerate() {
            let mut q = Question {
                benchmark: rq::BENCHMARK.into(),
                semantics: Semantics::ClosedWorld,
                premises: vec![format!("{family} {i}")],
                query: "q".into(),
                options: vec![
                    deltalogic::benchmarks::question::Choice {
                        label: T,
                        text: "True".into(),
                    },
                    deltalogic::benchmarks::question::Choice {
                        label: F,
                        text: "False".into(),
                    },
                ],
                gold,
                revises: None,
                tags: rq::Membership {
                    set: SetName::parse(set).unwrap(),
                    family: family.into(),
                    position: i,
                    group: group.into(),
                }
                .tags(),
                base_item: [0; 32],
            };
            q.sort_tags();
            preds.push((deltalogic::store::Record::id(&q), pred));
            qs.push(q);
        }
    }
    let stored = questions::store_set(&reg, rq::BENCHMARK, "{}".into(), &qs, "hand").unwrap();
    // A result whose answers are the hand-made predictions (no scores behind them).
    let result = ResultRecord {
        model: model_id("m").0,
        set: stored.set.0,
        template: prompt::plain_question().record().id().0,
        normalisation: "mean".into(),
        rows: preds
            .iter()
            .map(|&(question, pred)| ResultRow {
                item: question.0,
                turns: vec![Turn {
                    answer: pred.into(),
                    keys: vec![],
                }],
            })
            .collect(),
    };
    reg.write(|w| w.put(&result).map(drop)).unwrap();
    let entries = report::entries(&reg, deltalogic::benchmarks::ALL, &[], &[]).unwrap();
    let m = &entries[0].evaluation.metrics;
    let value = |v: &serde_json::Value| v["value"].as_f64().unwrap();
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} != {b}");
    // Family a: perfect, F1 1. Family b answers True throughout: gold (T,F,F), True has
    // P = 1/3, R = 1, F1 = 1/2, weight 1/3; False F1 0: 1/6. Family c: gold (T,T), pred (T,F):
    // True P = 1, R = 1/2, F1 = 2/3, weight 1.
    close(
        value(&m["by_set"]["C-CS"]["weighted_f1"]),
        (1.0 + 1.0 / 6.0) / 2.0,
    );
    close(value(&m["by_set"]["C-ES"]["weighted_f1"]), 2.0 / 3.0);
    close(value(&m["overall"]), (1.0 + 1.0 / 6.0 + 2.0 / 3.0) / 3.0);
    // Consistency: a 2/2, b 0/2 (gold changes, answers do not), c 0/1 (answer flips).
    close(value(&m["by_set"]["C-CS"]["consistency"]), 0.5);
    close(value(&m["consistency"]), 1.0 / 3.0);
    // CONJ over families: a 1, b F1 of (F) vs (T) = 0.
    close(value(&m["by_set"]["C-CS"]["by_group"]["CONJ"]), 0.5);
    let md = report::render(&entries, ReportFormat::Md).unwrap();
    // (1 + 1/6) / 2 = 58.33%, overall 61.1%, consistency 33.3%; n counts families.
    assert!(md.contains(" | C-CS | 58.3"), "{md}");
    assert!(md.contains("| 61.1"), "{md}");
    assert!(md.contains("| CONTRAPOSITIVE | 0.0"), "{md}");
}

#[test]
#[cfg_attr(
    dataset_missing = "robustlr/glore_subset",
    ignore = "needs the dataset robustlr/glore_subset (deltalogic datasets where)"
)]
fn glore_questions_keep_the_datasets_gold_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let root = crate::common::dataset("robustlr/glore_subset");
    deltalogic::store::ingest::ingest(&reg, Format::RobustLrGlore, &root, false).unwrap();
    let out = glore::build(&reg, "glore").unwrap();
    assert_eq!(out.stored.questions, 1000);
    let set = common::set(&reg, "glore").1;
    let qs: Vec<(Id, Question)> = members(&reg, "glore");
    assert_eq!(set.benchmark, glore::BENCHMARK);
    for (_, q) in &qs {
        assert_eq!(
            questions::verify(q).unwrap(),
            Verdict::NotChecked(questions::DATASET_GOLD_NOT_CHECKED)
        );
        // No Neutral answer in the subset: True/False only, as the template asks.
        assert_eq!(q.options.len(), 2);
        let text = prompt::plain_question().prompt(q).unwrap();
        let tail = format!("True or False?\nStatement: {}\nLabel:", q.query);
        assert!(text.ends_with(&tail), "{text}");
    }
}
