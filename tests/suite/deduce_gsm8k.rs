//! DeduCE's GSM8K templatiser and perturbation on the real test split.

use deltalogic::benchmarks::deduce::extract::annotations;
use deltalogic::benchmarks::deduce::gsm8k::{self, Reject};
use deltalogic::benchmarks::deduce::rational::Rational;
use deltalogic::benchmarks::deduce::template::literals;
use deltalogic::benchmarks::deduce::{from_gsm8k, Problem};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn test_file() -> PathBuf {
    crate::common::dataset("gsm8k/openai/test.jsonl")
}

fn rows() -> Vec<gsm8k::Row> {
    gsm8k::read(&test_file()).unwrap()
}

#[test]
#[cfg_attr(
    dataset_missing = "gsm8k/openai",
    ignore = "needs the dataset gsm8k/openai (deltalogic datasets where)"
)]
fn acceptance_counts_per_reason_and_every_accepted_item_reexecutes_to_gold() {
    let rows = rows();
    assert_eq!(rows.len(), 1319);
    let g = from_gsm8k(&rows, "test.jsonl", 0, 0).unwrap();
    let expected = BTreeMap::from([
        (Reject::NoAnnotation, 18),
        (Reject::Unreadable, 6),
        (Reject::Untraced, 178),
        (Reject::Ambiguous, 156),
        (Reject::AnswerNotComputed, 71),
        (Reject::Unextractable, 33),
    ]);
    assert_eq!(g.rejected, expected);
    assert_eq!(g.accepted, 857);
    assert!(
        g.accepted * 100 >= 60 * rows.len(),
        "target: at least 60% accepted"
    );
    assert_eq!(g.problems.len(), 857);
    // Every accepted item, from its stored text alone: each annotation re-executes exactly, and
    // the answer is GSM8K's own `#### N`.
    let by_line: BTreeMap<String, &gsm8k::Row> = rows
        .iter()
        .map(|r| (format!("test.jsonl line {}", r.line), r))
        .collect();
    for p in &g.problems {
        p.verify(&p.origin).unwrap();
        let row = by_line[&p.origin];
        let gold = row.answer.rsplit_once("####").unwrap().1.trim();
        assert_eq!(
            p.answer_value().unwrap(),
            Rational::parse_decimal(gold).unwrap()
        );
        assert_eq!(p.question, row.question);
        let stated: Vec<Rational> = annotations(&row.answer).into_iter().map(|a| a.1).collect();
        assert_eq!(p.values().unwrap(), stated, "{}", p.origin);
    }
}

#[test]
fn rejections_name_their_reason() {
    let t = |q: &str, a: &str| gsm8k::templatise(q, a).err();
    assert_eq!(
        t("Ann has 3 cats.", "She has 3 cats.\n#### 3"),
        Some(Reject::NoAnnotation)
    );
    assert_eq!(
        t("Ann has 3 cats.", "3*2=<<3*2=6>>6\n6"),
        Some(Reject::Unreadable)
    );
    assert_eq!(
        t("Ann has 3 cats.", "3*2=<<3*2=7>>7\n#### 7"),
        Some(Reject::ResultMismatch)
    );
    assert_eq!(
        t("Ann has 3 cats.", "3*9=<<3*9=27>>27\n#### 27"),
        Some(Reject::Untraced)
    );
    // 6 is both step 1's result and a number of the question.
    assert_eq!(
        t(
            "Ann has 3 cats and 6 dogs.",
            "3*2=<<3*2=6>>6\n6+1=<<6+1=7>>7\n#### 7"
        ),
        Some(Reject::Ambiguous)
    );
    assert_eq!(
        t("Ann has 3 cats.", "3*2=<<3*2=6>>6\n#### 5"),
        Some(Reject::AnswerNotComputed)
    );
    // A percentage used as a fraction, a number word, and the constant 60.
    assert_eq!(
        t(
            "Bo works three shifts of 90 minutes and keeps 20% of $50.",
            "3*90/60=<<3*90/60=4.5>>4.5 hours; 0.2*50=<<0.2*50=10>>10\n#### 10"
        ),
        None
    );
}

/// The numbers a text states (trailing sentence periods and thousands commas allowed).
fn stated_numbers(text: &str) -> Vec<Rational> {
    literals(&text.replace(". ", " ").replace(",", ""))
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

#[test]
#[cfg_attr(
    dataset_missing = "gsm8k/openai",
    ignore = "needs the dataset gsm8k/openai (deltalogic datasets where)"
)]
fn perturbed_copies_reexecute_step_by_step_and_seeds_are_deterministic() {
    let rows: Vec<gsm8k::Row> = rows().into_iter().take(300).collect();
    let a = from_gsm8k(&rows, "test.jsonl", 2, 7).unwrap();
    let b = from_gsm8k(&rows, "test.jsonl", 2, 7).unwrap();
    assert_eq!(a.problems, b.problems, "same seed, same problems");
    let c = from_gsm8k(&rows, "test.jsonl", 2, 8).unwrap();
    assert_ne!(a.problems, c.problems);
    assert!(
        a.perturbed >= a.accepted * 3 / 2,
        "{} copies of {}",
        a.perturbed,
        a.accepted
    );

    let originals: BTreeMap<&str, &Problem> = a
        .problems
        .iter()
        .filter(|p| !p.perturbed)
        .map(|p| (p.origin.as_str(), p))
        .collect();
    for p in a.problems.iter().filter(|p| p.perturbed) {
        // Arithmetic, from the text alone.
        p.verify(&p.origin).unwrap();
        let o = originals[p.origin.as_str()];
        assert_ne!(p.question, o.question, "{}: the numbers moved", p.origin);
        assert_eq!(p.steps.len(), o.steps.len());
        // Shape: positive where it was, whole where it was.
        for (n, v) in p.values().unwrap().iter().zip(o.values().unwrap()) {
            assert_eq!(n.numer().signum(), v.numer().signum(), "{}", p.origin);
            assert!(
                !v.is_whole() || n.is_whole(),
                "{}: {v} was whole, {n} is not",
                p.origin
            );
        }
        // Step by step: every literal of every annotation is a number of the perturbed question,
        // an earlier step's value, or one that the original also used (constants, number words,
        // percentages as fractions of a stated number).
        let question = stated_numbers(&p.question);
        let old_literals: Vec<Rational> = o
            .steps
            .iter()
            .flat_map(|s| annotations(&s.text))
            .flat_map(|(e, _)| literals(&e).into_iter().map(|(_, v)| v))
            .collect();
        let mut earlier: Vec<Rational> = Vec::new();
        for s in &p.steps {
            for (expr, result) in annotations(&s.text) {
                for (_, x) in literals(&expr) {
                    let hundredth = |q: &Rational| {
                        [
                            q.checked_div(Rational::int(100)),
                            Rational::ONE.checked_sub(q.checked_div(Rational::int(100)).unwrap()),
                            Rational::ONE.checked_add(q.checked_div(Rational::int(100)).unwrap()),
                        ]
                        .contains(&Some(x))
                    };
                    assert!(
                        question.contains(&x)
                            || earlier.contains(&x)
                            || question.iter().any(hundredth)
                            || old_literals.contains(&x),
                        "{}: literal {x} of `{expr}` comes from nowhere\n{}",
                        p.origin,
                        p.question
                    );
                }
                earlier.push(result);
            }
        }
    }
}
