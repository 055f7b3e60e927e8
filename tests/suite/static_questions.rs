//! The `static` benchmark: DeltaLogic episodes as fixed-premise questions, built in its own
//! folder and run through the same runner and report as every other benchmark.

use crate::common;

use common::{members, score_with};
use deltalogic::benchmarks::deltalogic::Episode;
use deltalogic::benchmarks::question::{self as questions, Question, Verdict};
use deltalogic::benchmarks::r#static as fixed;
use deltalogic::benchmarks::{self, Benchmark};
use deltalogic::eval::Normalisation;
use deltalogic::report::{self, Format};
use deltalogic::store::{Id, Store};

fn store_with_episodes(dir: &tempfile::TempDir) -> Store {
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    common::generated_set(&reg, "dl", 5, 3);
    reg
}

#[test]
fn each_episode_gives_two_solver_checked_questions() {
    let dir = tempfile::tempdir().unwrap();
    let reg = store_with_episodes(&dir);
    let out = fixed::build(&reg, "dl", "st").unwrap();
    let eps: Vec<(Id, Episode)> = members(&reg, "dl");
    assert_eq!(out.episodes, eps.len());
    assert_eq!(out.first_order_skipped, 0, "generated theories have no FOL");
    assert_eq!(out.stored.questions, 2 * eps.len());
    let qs: Vec<(Id, Question)> = members(&reg, "st");
    for (_, q) in &qs {
        assert_eq!(questions::verify(q).unwrap(), Verdict::Solved);
    }
    // The question over P′ has the episode's revised gold, the one over P its first gold.
    for (id, ep) in &eps {
        let of = |when: &str| {
            qs.iter()
                .map(|(_, q)| q)
                .find(|q| {
                    q.tag(fixed::EPISODE) == Some(&id.hex()) && q.tag(fixed::PREMISES) == Some(when)
                })
                .unwrap()
        };
        assert_eq!((of("before").gold, of("after").gold), (ep.y0, ep.y1));
        assert_eq!(
            of("after").premises.len(),
            ep.premises_after().unwrap().len()
        );
    }
    // Only from a DeltaLogic set.
    let e = fixed::build(&reg, "st", "x").unwrap_err().to_string();
    assert!(e.contains("not a DeltaLogic one"), "{e}");
    // Built through the benchmark's own arguments, the same set.
    let b = benchmarks::ALL.by_command("static").unwrap();
    let built = b
        .build(
            &reg,
            &[
                "--from-set".into(),
                "dl".into(),
                "--name".into(),
                "st2".into(),
            ],
        )
        .unwrap();
    assert_eq!(built.summary["set"], serde_json::json!(out.stored.set));
}

#[test]
fn static_questions_share_deltalogics_step_one_scores_and_report_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let reg = store_with_episodes(&dir);
    fixed::build(&reg, "dl", "st").unwrap();
    let n = members::<Episode>(&reg, "dl").len();
    score_with(&reg, "m1", "dl", None, Normalisation::Mean);
    let st = score_with(&reg, "m1", "st", None, Normalisation::Mean);
    // The `before` questions are DeltaLogic's step-1 prompts with the same labels: cache hits.
    assert_eq!(st.report.scores_needed, 3 * 2 * n);
    assert!(st.report.scores_found_in_cache >= 3 * n, "{:?}", st.report);
    let entries = report::entries(&reg, deltalogic::benchmarks::ALL, &[], &[]).unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e.benchmark.as_str()).collect();
    assert_eq!(names, ["deltalogic", "static"]);
    let md = report::render(&entries, Format::Md).unwrap();
    assert!(md.contains("## Benchmarks side by side"), "{md}");
    assert!(
        md.contains("DeltaLogic Rev acc") && md.contains("Static Accuracy"),
        "{md}"
    );
    assert!(md.contains("### Static by premises"), "{md}");
    // Static accuracy over P equals DeltaLogic's initial accuracy: the same prompts and labels.
    let dl = &entries[0].evaluation;
    let st = &entries[1].evaluation;
    let before = st
        .groups
        .iter()
        .find(|g| g.by == fixed::PREMISES && g.value == "before")
        .unwrap();
    assert_eq!(
        before.metrics[0].as_ref().unwrap().value,
        dl.overall("initial_accuracy").unwrap().value
    );
    assert_eq!(fixed::Static.name(), "static");
}
