//! Belief-R as questions: the build covers every row of the shipped files, the prompt is the
//! dataset's, scoring goes through the cache, and the metrics follow the Belief-R paper.

mod common;

use deltalogic::datasets::Format;
use deltalogic::logic::Label;
use deltalogic::questions::{self, beliefr, Question, Verdict};
use deltalogic::registry::{ingest, Id, Registry};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn shared(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets")).join(rel)
}

/// A store holding the shipped Belief-R files, built into set `name`.
fn built(dir: &tempfile::TempDir, name: &str) -> (Registry, beliefr::BuildOutcome) {
    let reg = Registry::open(&dir.path().join("s.redb")).unwrap();
    ingest::ingest(&reg, Format::BeliefR, &shared("belief_r"), false).unwrap();
    let out = beliefr::build(&reg, name).unwrap();
    (reg, out)
}

#[test]
fn build_covers_every_row_of_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, out) = built(&dir, "br");
    // 1744 joined pairs and 420 step-t rows that no step-t+1 row revises.
    assert_eq!((out.items, out.pairs, out.step_t_only), (2164, 1744, 420));
    // Every step-t row of basic_time_t.csv is one question; 1492 of them are revised.
    assert_eq!((out.step_t, out.step_t_revised), (1912, 1492));
    assert_eq!(out.step_t_revised + out.step_t_only, out.step_t);
    // Gold (c) at step t+1 in 1074 rows (belief update), unchanged in the other 670.
    assert_eq!((out.update, out.maintain), (1074, 670));
    assert_eq!(out.stored.questions, 1912 + 1744);
    assert_eq!(out.stored.new_questions, out.stored.questions);

    let (_, set, qs) = questions::load_set(&reg, "br").unwrap();
    assert_eq!(set.benchmark, "belief-r");
    let ids: BTreeSet<Id> = qs.iter().map(|(id, _)| *id).collect();
    let step = |q: &Question| q.tag(beliefr::STEP).unwrap().to_string();
    let t1: Vec<&Question> = qs
        .iter()
        .map(|(_, q)| q)
        .filter(|q| step(q) == "t+1")
        .collect();
    assert_eq!(t1.len(), 1744);
    for q in &t1 {
        let before = Id(q.revises.expect("step t+1 revises step t"));
        assert!(ids.contains(&before), "the revised question is in the set");
        assert_eq!(q.premises.len(), 3);
        let agreement = q.tag(beliefr::AGREEMENT).unwrap();
        assert!(q.tag("dataset_id").unwrap().ends_with(agreement));
    }
    let weak = t1
        .iter()
        .filter(|q| q.tag(beliefr::AGREEMENT) == Some("weak"))
        .count();
    assert_eq!(weak, 462);
    for (_, q) in &qs {
        assert_eq!(
            questions::verify(q).unwrap(),
            Verdict::NotChecked(questions::COMMONSENSE_NOT_CHECKED)
        );
        if step(q) == "t" {
            assert_eq!(q.premises.len(), 2);
            assert!(q.revises.is_none());
            assert_ne!(q.gold, Label::Uncertain, "step t answers are (a) or (b)");
        }
    }

    // Building again stores nothing new and gives the same set.
    let again = beliefr::build(&reg, "br2").unwrap();
    assert_eq!(again.stored.set, out.stored.set);
    assert_eq!(again.stored.new_questions, 0);
}

#[test]
fn build_without_items_says_what_to_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Registry::open(&dir.path().join("s.redb")).unwrap();
    let e = beliefr::build(&reg, "br").unwrap_err().to_string();
    assert!(e.contains("deltalogic ingest belief-r"), "{e}");
}
