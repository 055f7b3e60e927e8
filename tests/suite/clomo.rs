//! CLoMo end to end on the files of the datasets folder: item counts per split and relation (counted from the
//! files here, independently of the reader), the three settings of each item, seeded samples,
//! bad files named, and a run of the five turns with stand-in models (generation, then label or
//! CoT judgements) evaluated into SES.

use crate::common;

use common::{model_id, ByteModel};
use deltalogic::benchmarks::clomo::{ClomoItem, Relation};
use deltalogic::benchmarks::{self, Answer, Benchmark, ModelInfo};
use deltalogic::eval::{self, Participants, Quiet};
use deltalogic::store::{Id, Store};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn data() -> PathBuf {
    common::dataset("clomo/data")
}

fn clomo() -> &'static dyn Benchmark {
    benchmarks::ALL.named("clomo").unwrap()
}

/// Builds with `args` from the default data folder (clomo/data in the datasets folder);
/// returns the build's JSON summary.
fn build_with(reg: &Store, args: &[&str]) -> serde_json::Value {
    let words: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    clomo().build(reg, &words).unwrap().summary
}

/// Items per qtype of a file, read as plain JSON.
fn qtype_counts(file: &str) -> BTreeMap<&'static str, u64> {
    let text = std::fs::read_to_string(data().join(file)).unwrap();
    let records: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let mut out = BTreeMap::new();
    for r in records {
        let name = ["NA", "SA", "S", "W"][r["qtype"].as_u64().unwrap() as usize];
        *out.entry(name).or_insert(0) += 1;
    }
    out
}

#[test]
#[cfg_attr(
    dataset_missing = "clomo",
    ignore = "needs the dataset clomo (deltalogic datasets where)"
)]
fn items_per_split_and_relation_are_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    for split in ["train", "dev", "test"] {
        let out = build_with(&reg, &["--split", split, "--name", split]);
        let expected = qtype_counts(&format!("zero_{split}.json"));
        let total: u64 = expected.values().sum();
        assert_eq!(out["read"], total, "{split}");
        assert_eq!(out["items"], total, "{split}: one item per question");
        for (rel, n) in &expected {
            assert_eq!(out["per_relation"][rel], *n, "{split} {rel}");
        }
        // The three settings' files agree: every item has three prompts, the CoT one asking
        // for steps and the few-shot one ending with the zero-shot question.
        for (_, item) in common::members::<ClomoItem>(&reg, split) {
            let [zero, few, cot] = &item.inputs;
            assert!(few.ends_with(zero.as_str()), "{}", item.id_string);
            assert!(few.len() > zero.len());
            assert!(
                cot.contains("Let's think step by step."),
                "{}",
                item.id_string
            );
            assert!(!item.premise1.starts_with("Premise1"));
            assert!(!item.gold.is_empty());
        }
    }
    // The paper's test split: 79 NA, 14 SA, 35 S, 72 W.
    assert_eq!(
        qtype_counts("zero_test.json")
            .into_iter()
            .collect::<Vec<_>>(),
        vec![("NA", 79), ("S", 35), ("SA", 14), ("W", 72)]
    );
}

#[test]
#[cfg_attr(
    dataset_missing = "clomo",
    ignore = "needs the dataset clomo (deltalogic datasets where)"
)]
fn a_seeded_sample_is_the_same_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let a = build_with(&reg, &["--per-type", "10", "--seed", "3", "--name", "a"]);
    let b = build_with(&reg, &["--per-type", "10", "--seed", "3", "--name", "b"]);
    let c = build_with(&reg, &["--per-type", "10", "--seed", "4", "--name", "c"]);
    assert_eq!(a["set"], b["set"]);
    assert_eq!(b["new_items"], 0);
    assert_ne!(a["set"], c["set"]);
    assert_eq!(a["items"], 40);
    for rel in ["NA", "SA", "S", "W"] {
        assert_eq!(a["per_relation"][rel], 10, "{rel}");
    }
    // More per type than SA has: all 14 SA items.
    let d = build_with(&reg, &["--per-type", "20", "--name", "d"]);
    assert_eq!(d["per_relation"]["SA"], 14);
    assert_eq!(d["items"], 74);
}

#[test]
#[cfg_attr(
    dataset_missing = "clomo",
    ignore = "needs the dataset clomo (deltalogic datasets where)"
)]
fn a_broken_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let copy = dir.path().join("data");
    std::fs::create_dir(&copy).unwrap();
    for s in ["zero", "few", "cot"] {
        let f = format!("{s}_dev.json");
        std::fs::copy(data().join(&f), copy.join(&f)).unwrap();
    }
    // A few-shot record whose gold differs from the zero-shot one.
    let few = copy.join("few_dev.json");
    let mut records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&few).unwrap()).unwrap();
    records[5]["output"] = "something else".into();
    std::fs::write(&few, serde_json::to_string(&records).unwrap()).unwrap();
    let args: Vec<String> = ["--data", copy.to_str().unwrap(), "--split", "dev"]
        .map(String::from)
        .to_vec();
    let err = format!("{:#}", clomo().build(&reg, &args).err().unwrap());
    assert!(
        err.contains("few_dev.json record 5") && err.contains("zero_dev.json"),
        "{err}"
    );
    // A missing field: the reader's error names the file, record and field.
    std::fs::copy(data().join("few_dev.json"), &few).unwrap();
    let mut records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(copy.join("cot_dev.json")).unwrap()).unwrap();
    records[2].as_object_mut().unwrap().remove("input");
    std::fs::write(
        copy.join("cot_dev.json"),
        serde_json::to_string(&records).unwrap(),
    )
    .unwrap();
    let err = format!("{:#}", clomo().build(&reg, &args).err().unwrap());
    assert!(
        err.contains("cot_dev.json") && err.contains("`input`"),
        "{err}"
    );
}

/// A stand-in chat template: role-tagged turns.
struct Chat;

impl ModelInfo for Chat {
    fn chat_template(&self) -> anyhow::Result<String> {
        Ok(
            "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}\
            {% if add_generation_prompt %}<assistant>{% endif %}"
                .into(),
        )
    }
}

/// Runs the set `sample` with the stand-in `subject` under `template`, judged by `judge` (the
/// subject itself when `None`); the HTML report's test runs it too.
pub(crate) fn run(reg: &Store, template: &str, judge: Option<&str>) -> eval::Outcome {
    let (set_id, stored) = common::set(reg, "sample");
    let names = ["subject", "judge"];
    eval::run(
        reg,
        &eval::Run {
            benchmark: clomo(),
            set_id,
            set: &stored,
            models: Participants {
                subject: model_id("subject"),
                info: &Chat,
                judge: judge.map(model_id),
            },
            template,
            norms: vec![eval::Normalisation::Sum],
            shard: None,
            execution: Default::default(),
        },
        |id| {
            let name = names.into_iter().find(|n| model_id(n) == id).unwrap();
            Ok(eval::Engine::Local(ByteModel::new(name)))
        },
        &mut Quiet,
    )
    .unwrap()
}

#[test]
#[cfg_attr(
    dataset_missing = "clomo",
    ignore = "needs the dataset clomo (deltalogic datasets where)"
)]
fn five_turns_judged_and_evaluated() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    build_with(
        &reg,
        &["--per-type", "2", "--seed", "1", "--name", "sample"],
    );
    // A score per label: " yes" and " no" for each of the four judgements.
    for (template, generations, scores) in [("zero", 8, 64), ("cot-judge-cot", 40, 0)] {
        let out = run(&reg, template, Some("judge"));
        let r = &out.report;
        assert_eq!(
            (r.generations_needed, r.scores_needed),
            (generations, scores),
            "{template}"
        );
        let result = reg.get::<eval::ResultRecord>(&out.result).unwrap().unwrap();
        let answered: Vec<_> = result
            .rows
            .iter()
            .map(|row| eval::answered(&reg, row).unwrap())
            .collect();
        for a in &answered {
            assert_eq!(a.answers.len(), 5);
            assert!(matches!(a.answers[0], Answer::Text(_)));
        }
        let e = clomo().evaluate(&reg, &answered, 9).unwrap();
        assert_eq!(e.n, 8);
        assert_eq!(e.groups.len(), 5, "overall and four relations");
        assert_eq!(e.groups[1].value, Relation::NecessaryAssumption.as_str());
        let ses = e.overall("ses").unwrap();
        assert!(ses.value.is_none_or(|v| (-1.0..=1.0).contains(&v)));
        // The same answers give the same bits.
        let again = clomo().evaluate(&reg, &answered, 9).unwrap();
        assert_eq!(e.metrics, again.metrics);
    }
    // The judge is part of the result: judging with the subject itself is another result, and
    // the subject's generations are reused from the cache.
    let own = run(&reg, "zero", None);
    assert_eq!(own.report.generations_computed, 0);
    assert_ne!(own.result, run(&reg, "zero", Some("judge")).result);
    let _: Id = own.result;
}
