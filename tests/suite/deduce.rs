//! DeduCE's synthetic chains, build, export and evaluation through the store.

use deltalogic::benchmarks::deduce::{self, synthetic, Problem};
use deltalogic::benchmarks::{self, Answer, Answered};
use deltalogic::store::{Store, StoredSet};

#[test]
fn synthetic_chains_have_their_hops_and_are_seeded() {
    for hops in 1..=synthetic::MAX_HOPS {
        for i in 0..20 {
            let p = synthetic::problem(3, hops, i).unwrap();
            assert_eq!(p.steps.len(), hops);
            p.verify(&p.origin).unwrap();
            assert_eq!(p, synthetic::problem(3, hops, i).unwrap());
            let answer = p.answer_value().unwrap();
            assert!(answer.is_whole() && answer.is_positive());
            // Plain English: the question names hops + 1 premises and asks one question.
            assert_eq!(p.question.matches(". ").count(), hops + 1, "{}", p.question);
        }
    }
    assert_ne!(
        synthetic::problem(3, 4, 0).unwrap(),
        synthetic::problem(4, 4, 0).unwrap()
    );
    assert!(synthetic::problem(3, 0, 0).is_err());
    assert!(synthetic::problem(3, 13, 0).is_err());
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
#[cfg_attr(
    dataset_missing = "gsm8k/openai",
    ignore = "needs the dataset gsm8k/openai (deltalogic datasets where)"
)]
fn build_stores_a_set_exports_it_and_evaluates_continuations() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let b = benchmarks::ALL.by_command("deduce").unwrap();
    // From the default folder: gsm8k/openai in the datasets folder.
    let words = args(&["--limit", "40", "--perturb", "1", "--seed", "5"]);
    let built = b.build(&reg, &words).unwrap();
    let again = b.build(&reg, &words).unwrap();
    assert_eq!(
        built.summary["set"], again.summary["set"],
        "same inputs, same set"
    );
    assert_eq!(again.summary["new_problems"], 0);
    let (_, set) = reg.set_by_name("deduce").unwrap().unwrap();
    let exported = b.export(&reg, &set).unwrap();
    assert_eq!(exported.len(), set.members.len());
    for e in &exported {
        for key in ["question", "steps", "answer", "origin", "perturbed"] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
        assert!(e["steps"][0].as_str().unwrap().contains("<<"));
    }
    assert!(exported.iter().any(|e| e["perturbed"] == true));

    // A model that copies the gold solution from step k on, and one that writes nothing.
    let problems = benchmarks::members::<Problem>(&reg, &set).unwrap();
    let answered = |perfect: bool| -> Vec<Answered> {
        problems
            .iter()
            .map(|(id, p)| Answered {
                item: *id,
                answers: deduce::PREMISE_COUNTS
                    .iter()
                    .map(|k| {
                        let text = if perfect {
                            let rest: Vec<String> = p.steps[(*k).min(p.steps.len())..]
                                .iter()
                                .map(|s| s.text.clone())
                                .collect();
                            format!("{}\n#### {}", rest.join("\n"), p.answer)
                        } else {
                            "I cannot say.".to_string()
                        };
                        Answer::Text(text)
                    })
                    .collect(),
            })
            .collect()
    };
    let good = b.evaluate(&reg, &answered(true), 1).unwrap();
    let bad = b.evaluate(&reg, &answered(false), 1).unwrap();
    for key in ["final-answer", "hop-1", "hop-2", "strict-3", "coverage-1"] {
        assert_eq!(good.overall(key).unwrap().value, Some(1.0), "{key}");
        assert_eq!(bad.overall(key).unwrap().value, Some(0.0), "{key}");
    }
    assert_eq!(good.n, problems.len());
    let again = b.evaluate(&reg, &answered(true), 1).unwrap();
    assert_eq!(
        serde_json::to_string(&good.metrics).unwrap(),
        serde_json::to_string(&again.metrics).unwrap()
    );
    // Prompts give exactly k steps, without annotations.
    let p = &problems[0].1;
    let prompt = deduce::prompt(p, 1);
    assert!(prompt.ends_with(&format!(
        "{}\nAnswer:\n{}\n",
        p.question,
        deduce::problem::plain(&p.steps[0].text)
    )));
    assert!(!prompt.contains("<<"));
    let _: &StoredSet = &set;
}

#[test]
fn bad_build_arguments_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let b = benchmarks::ALL.by_command("deduce").unwrap();
    let e = b
        .build(&reg, &args(&["--data", "/nonexistent", "--split", "test"]))
        .err()
        .unwrap();
    assert!(
        format!("{e:#}").contains("/nonexistent/test.jsonl"),
        "{e:#}"
    );
    let e = b
        .build(&reg, &args(&["--from", "synthetic", "--hops", "13"]))
        .err()
        .unwrap();
    assert!(format!("{e:#}").contains("--hops"), "{e:#}");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"question\": \"q\", \"answer\": \"a\"}\nnot json\n").unwrap();
    let e = b
        .build(
            &reg,
            &args(&["--data", dir.path().to_str().unwrap(), "--split", "bad"]),
        )
        .err()
        .unwrap();
    assert!(format!("{e:#}").contains("bad.jsonl line 2"), "{e:#}");
}

#[test]
fn export_items_writes_one_json_line_per_member() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let run = |words: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_deltalogic"))
            .arg("--store")
            .arg(&store)
            .args(words)
            .output()
            .unwrap()
    };
    let built = run(&[
        "build",
        "deduce",
        "--from",
        "synthetic",
        "--hops",
        "3",
        "--limit",
        "7",
    ]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = dir.path().join("items.jsonl");
    let exported = run(&[
        "export",
        "items",
        "--set",
        "deduce-synthetic",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let items: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), 7);
    for i in &items {
        let p = synthetic::problem(0, 3, 0).unwrap();
        assert_eq!(i["steps"].as_array().unwrap().len(), p.steps.len());
        assert_eq!(i["perturbed"], false);
    }
    // The same command on stdout gives the same bytes.
    let stdout = run(&["export", "items", "--set", "deduce-synthetic"]);
    assert_eq!(String::from_utf8(stdout.stdout).unwrap(), text);
    let missing = run(&["export", "items", "--set", "nope"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no set named `nope`"));
}
