//! Belief-R as questions: the build covers every row of the shipped files, the prompt is the
//! dataset's, scoring goes through the cache, and the metrics follow the Belief-R paper.

use crate::common;

use common::{members, score_with};
use deltalogic::benchmarks::beliefr::{self, prompts as prompt};
use deltalogic::benchmarks::question::{self as questions, Question, Verdict};
use deltalogic::datasets::Format;
use deltalogic::logic::Label;
use deltalogic::store::{ingest, Id, Store};
use std::collections::BTreeSet;

/// A store holding the Belief-R files of the datasets folder, built into set `name`.
fn built(dir: &tempfile::TempDir, name: &str) -> (Store, beliefr::BuildOutcome) {
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    ingest::ingest(&reg, Format::BeliefR, &common::dataset("belief_r"), false).unwrap();
    let out = beliefr::build(&reg, name, None).unwrap();
    (reg, out)
}

#[test]
#[cfg_attr(
    dataset_missing = "belief_r",
    ignore = "needs the dataset belief_r (deltalogic datasets where)"
)]
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

    let set = common::set(&reg, "br").1;
    let qs: Vec<(Id, Question)> = members(&reg, "br");
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
    let again = beliefr::build(&reg, "br2", None).unwrap();
    assert_eq!(again.stored.set, out.stored.set);
    assert_eq!(again.stored.new_questions, 0);
}

#[test]
#[cfg_attr(
    dataset_missing = "belief_r",
    ignore = "needs the dataset belief_r (deltalogic datasets where)"
)]
fn a_sample_keeps_per_cell_pairs_and_the_questions_they_revise() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, _) = built(&dir, "all");
    let sample = beliefr::Sample {
        per_cell: 5,
        seed: 3,
    };
    let out = beliefr::build(&reg, "s", Some(sample)).unwrap();
    // Four cells: belief update/maintain × modus ponens/tollens, each with far more than 5.
    assert_eq!((out.pairs, out.update, out.maintain), (20, 10, 10));
    let qs: Vec<(Id, Question)> = members(&reg, "s");
    let step = |q: &Question| q.tag(beliefr::STEP).unwrap().to_string();
    let later: Vec<&Question> = qs
        .iter()
        .map(|(_, q)| q)
        .filter(|q| step(q) == "t+1")
        .collect();
    let revised: BTreeSet<[u8; 32]> = later.iter().filter_map(|q| q.revises).collect();
    let firsts: BTreeSet<[u8; 32]> = qs
        .iter()
        .filter(|(_, q)| step(q) == "t")
        .map(|(id, _)| id.0)
        .collect();
    assert_eq!(later.len(), 20);
    assert_eq!(
        firsts, revised,
        "exactly the step-t questions the sample revises"
    );
    // Same seed, same sample; another seed, another.
    let again = beliefr::build(&reg, "s2", Some(sample)).unwrap();
    assert_eq!(again.stored.set, out.stored.set);
    let other = beliefr::build(&reg, "s3", Some(beliefr::Sample { seed: 4, ..sample })).unwrap();
    assert_ne!(other.stored.set, out.stored.set);
}

#[test]
fn build_without_items_says_what_to_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let e = beliefr::build(&reg, "br", None).unwrap_err().to_string();
    assert!(e.contains("deltalogic ingest belief-r"), "{e}");
}

/// Scores set `set` with the stand-in model; returns the run's report and the result id.
fn score(reg: &Store, set: &str, template: &str) -> (ScoreReport, Id) {
    let out = score_with(reg, "m1", set, Some(template), Normalisation::Mean);
    (out.report, out.result)
}

use deltalogic::eval::{Normalisation, PromptRecord, ScoreRecord, ScoreReport};
use deltalogic::store::Record;

#[test]
#[cfg_attr(
    dataset_missing = "belief_r",
    ignore = "needs the dataset belief_r (deltalogic datasets where)"
)]
fn the_prompt_is_the_datasets_with_an_answer_cue() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, _) = built(&dir, "br");
    let qs: Vec<(Id, Question)> = members(&reg, "br");
    let find = |step: &str| {
        qs.iter()
            .map(|(_, q)| q)
            .find(|q| {
                q.tag("dataset_id") == Some("0-strong")
                    && q.tag(beliefr::STEP) == Some(step)
                    && q.tag(beliefr::MODUS) == Some("ponens")
            })
            .unwrap()
    };
    let letters = prompt::beliefr(prompt::LabelForm::Letters);
    let t = find("t");
    assert_eq!(
        letters.prompt(t),
        "If John reads a book, then John learns something new\n\
         John reads a book\n\
         \n\
         What necessarily had to follow assuming that the above premises were true?\n\
         (a) John learns something new\n\
         (b) John does not learn something new\n\
         (c) John may or may not learn something new\n\
         \n\
         Begin! Reminder to write your final answer as \"Final Answer [X].\" and fill [X] with either a, b, or c.\n\
         \n\
         Final Answer:"
    );
    assert_eq!(letters.labels(t), [" a", " b", " c"]);
    let t1 = find("t+1");
    assert!(letters.prompt(t1).starts_with(
        "If John reads a book, then John learns something new\nJohn reads a book\n\
         If Jessica explains quantum physics to John for the first time, then John learns something new\n\n"
    ));
    assert_eq!(
        (t1.gold, t1.tag(beliefr::REVISION)),
        (Label::Uncertain, Some("update"))
    );
    let text = prompt::beliefr(prompt::LabelForm::Text);
    assert_eq!(
        text.labels(t),
        [
            " John learns something new.",
            " John does not learn something new.",
            " John may or may not learn something new."
        ]
    );
    assert_ne!(text.record().id(), letters.record().id());
}

#[test]
#[cfg_attr(
    dataset_missing = "belief_r",
    ignore = "needs the dataset belief_r (deltalogic datasets where)"
)]
fn scoring_is_cached_audited_shared_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, out) = built(&dir, "br");
    let letters = "beliefr-letters";
    let n = out.stored.questions;

    let (first, result) = score(&reg, "br", letters);
    assert_eq!(first.scores_needed, 3 * n);
    assert_eq!(
        first.scores_computed + first.scores_found_in_cache,
        first.scores_needed
    );
    assert!(first.scores_computed > 0);
    assert_eq!(first.forward_tokens, first.tree_tokens);
    let (second, again) = score(&reg, "br", letters);
    assert_eq!((second.scores_computed, second.forward_tokens), (0, 0));
    assert_eq!(second.scores_found_in_cache, second.scores_needed);
    assert_eq!(again, result, "same inputs, same result id");

    // The audit lists exactly the scores the result read: here, every score in the store.
    let mut audit = deltalogic::eval::audit::audit(&reg, &result.short()).unwrap();
    deltalogic::eval::audit::attach_prompts(&reg, &mut audit).unwrap();
    for line in &audit.scores {
        let text = line.prompt_text.clone().expect("prompt attached");
        assert_eq!(
            PromptRecord { text }.id(),
            line.prompt,
            "the text the key names"
        );
    }
    assert_eq!(audit.scores.len(), 3 * n);
    let audited: BTreeSet<Id> = audit.scores.iter().map(|l| l.key).collect();
    let stored: BTreeSet<Id> = reg
        .all::<ScoreRecord>()
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(audited, stored);
    assert_eq!(
        first.scores_computed,
        stored.len(),
        "each distinct score computed once"
    );

    // A Basic@t set of the same step-t questions shares every score: all cache hits.
    let qs: Vec<(Id, Question)> = members(&reg, "br");
    let basic: Vec<Question> = qs
        .into_iter()
        .map(|(_, q)| q)
        .filter(|q| q.tag(beliefr::STEP) == Some("t"))
        .collect();
    questions::store_set(
        &reg,
        beliefr::BENCHMARK,
        "{\"subset\":\"basic-t\"}".into(),
        &basic,
        "basic",
    )
    .unwrap();
    let (shared, _) = score(&reg, "basic", letters);
    assert_eq!(shared.scores_needed, 3 * 1912);
    assert_eq!(
        (shared.scores_found_in_cache, shared.scores_computed),
        (3 * 1912, 0)
    );

    // Option texts are other labels: new scores.
    let (text, _) = score(&reg, "br", "beliefr-text");
    assert!(text.scores_computed > 0);

    // The report: Belief-R beside the other benchmarks, its subsets sized as built.
    let entries =
        deltalogic::report::entries(&reg, deltalogic::benchmarks::ALL, &[], &["br".into()])
            .unwrap();
    assert_eq!(entries.len(), 2, "letters and text");
    let b = &entries[0].evaluation.metrics;
    let m = &b["overall"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    assert_eq!(
        (n(&m["n_t"]), n(&m["n_t1"]), n(&m["acc_t"]["n"])),
        (1912, 1744, 1912)
    );
    assert_eq!(
        (n(&m["bu_acc_all"]["n"]), n(&m["bm_acc_all"]["n"])),
        (1074, 670)
    );
    assert!(n(&m["bu_acc"]["n"]) <= 1074 && n(&m["bm_acc"]["n"]) <= 670);
    assert_eq!(m["inertia"]["n"], m["bu_acc"]["n"]);
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&b["by_modus"]), ["ponens", "tollens"]);
    assert_eq!(keys(&b["by_agreement"]), ["strong", "weak"]);
    assert_eq!(n(&b["by_agreement"]["weak"]["n_t1"]), 462);
    let md = deltalogic::report::render(&entries, deltalogic::report::Format::Md).unwrap();
    assert!(
        md.contains("## Belief-R") && md.contains("| BREU |"),
        "{md}"
    );
    let csv = deltalogic::report::render(&entries, deltalogic::report::Format::Csv).unwrap();
    assert!(csv
        .lines()
        .any(|l| l.starts_with("belief-r,") && l.contains(",breu,")));
}
