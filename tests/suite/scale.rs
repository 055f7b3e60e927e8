//! Scale by simulation with the stand-in model (tokens are bytes): a question set scored by three
//! models, each into its own copy of the store (as three cluster jobs would), then merged. The
//! small test checks the structural facts on 2,000 questions: the runner computes exactly the
//! prefix tree's tokens, and the merged store's report is byte-identical to one store's that
//! scored the three models itself. The ignored test runs the same at ≥ 1M scores and prints the
//! figures quoted in docs/cluster.md.

use crate::common;

use common::{dl, model_id, score_with, ByteModel};
use deltalogic::benchmarks::question::{self, Choice, Question};
use deltalogic::eval::cache::{self, MergeOptions};
use deltalogic::eval::{self, Normalisation, PromptRecord, ScoreRecord, ScoreReport};
use deltalogic::logic::{Label, Semantics};
use deltalogic::report::{self, Format};
use deltalogic::store::{Id, Record, Store};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const MODELS: [&str; 3] = ["m0", "m1", "m2"];
const SET: &str = "scale";
/// Questions per shared theory: the prefix tree computes a theory once per model.
const PER_THEORY: usize = 8;

/// `n` questions of the `static` benchmark (its tags, three options, gold spread over the three
/// labels) in groups that share a theory of eight premises, each with a premise and query of
/// its own: about as long as a ProofWriter question, with the prefix sharing of a real set.
fn questions(n: usize) -> Vec<Question> {
    const COLOURS: [&str; 4] = ["red", "blue", "green", "round"];
    const EDITS: [&str; 4] = [
        "support-insertion",
        "defeating-fact",
        "support-removal",
        "irrelevant-addition",
    ];
    let labels = [Label::True, Label::False, Label::Uncertain];
    (0..n)
        .map(|i| {
            let theory = i / PER_THEORY;
            let mut premises: Vec<String> = (0..8)
                .map(|k| format!("The thing {theory} is {} on day {k}.", COLOURS[k % 4]))
                .collect();
            premises.push(format!(
                "If the thing {theory} is red then item {i} is kind."
            ));
            let mut q = Question {
                benchmark: "static".into(),
                semantics: Semantics::OpenWorld,
                premises,
                query: format!("Item {i} is kind."),
                options: labels
                    .iter()
                    .map(|&label| Choice {
                        label,
                        text: label.as_str().into(),
                    })
                    .collect(),
                gold: labels[i * 7 % 3],
                revises: None,
                tags: vec![
                    ("premises".into(), ["before", "after"][i % 2].into()),
                    ("edit-type".into(), EDITS[i / 2 % 4].into()),
                    ("source".into(), "simulated".into()),
                ],
                base_item: [0; 32],
            };
            q.sort_tags();
            q
        })
        .collect()
}

fn copy(from: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to
}

fn report_json(reg: &Store) -> String {
    report::render(
        &report::entries(reg, deltalogic::benchmarks::ALL, &[], &[]).unwrap(),
        Format::Json,
    )
    .unwrap()
}

/// What a simulation measured.
struct Simulation {
    base: PathBuf,
    merged: PathBuf,
    build_seconds: f64,
    /// Per model: what its run did and how long it took.
    runs: Vec<(ScoreReport, f64)>,
    results: Vec<Id>,
    merged_records: usize,
    merge_seconds: f64,
}

/// Builds a set of `n` questions, scores it with each model into its own copy of the store, and
/// merges the three stores into a fourth copy (a sample of each model's scores recomputed).
fn simulate(dir: &Path, n: usize) -> Simulation {
    let base = dir.join("base.redb");
    let started = Instant::now();
    {
        let reg = Store::open_write(&base).unwrap();
        let spec = format!("{{\"simulation\":{n}}}");
        question::store_set(&reg, "static", spec, &questions(n), SET).unwrap();
    }
    let build_seconds = started.elapsed().as_secs_f64();

    let mut runs = Vec::new();
    let mut results = Vec::new();
    let mut parts = Vec::new();
    for m in MODELS {
        let path = copy(&base, dir, &format!("{m}.redb"));
        let reg = Store::open_write(&path).unwrap();
        let started = Instant::now();
        let out = score_with(&reg, m, SET, None, Normalisation::Mean);
        runs.push((out.report, started.elapsed().as_secs_f64()));
        results.push(out.result);
        parts.push(path);
    }

    let merged = copy(&base, dir, "merged.redb");
    let reg = Store::open_write(&merged).unwrap();
    let mut merged_records = 0;
    let started = Instant::now();
    for path in &parts {
        let incoming = cache::open_incoming(&reg, path).unwrap();
        let mut recompute = |c: &cache::Computed| {
            let cache::Computed::Score(s) = c else {
                panic!("the plain template generates nothing")
            };
            let name = MODELS
                .into_iter()
                .find(|m| model_id(m).0 == s.model)
                .expect("a stand-in model");
            let text = incoming.get::<PromptRecord>(&Id(s.prompt))?.unwrap().text;
            Ok(Some(cache::Recomputed::Logprobs(eval::rescore(
                &ByteModel::new(name),
                &text,
                &s.label,
            )?)))
        };
        let r = cache::merge(&reg, &incoming, MergeOptions::new(&mut recompute)).unwrap();
        assert!(r.conflicts.is_empty(), "{:?}", r.conflicts);
        assert!(r.unverified.is_empty(), "{:?}", r.unverified);
        merged_records += r.added.values().sum::<usize>();
    }
    Simulation {
        base,
        merged,
        build_seconds,
        runs,
        results,
        merged_records,
        merge_seconds: started.elapsed().as_secs_f64(),
    }
}

/// The structural facts every scale relies on, checked for each model's run and the merge.
fn check(sim: &Simulation, n: usize) {
    for (r, _) in &sim.runs {
        assert_eq!(r.items, n);
        assert_eq!(r.scores_computed, 3 * n);
        assert_eq!(
            r.forward_tokens, r.tree_tokens,
            "the runner computes the tree"
        );
    }
    let reg = Store::open_read(&sim.merged).unwrap();
    assert_eq!(reg.count(ScoreRecord::KIND).unwrap(), (3 * 3 * n) as u64);
    let mut stored: Vec<Id> = reg
        .all::<eval::ResultRecord>()
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut expected = sim.results.clone();
    stored.sort();
    expected.sort();
    assert_eq!(stored, expected, "the merge brings each model's result");
}

#[test]
fn merged_model_stores_report_like_one_store() {
    const N: usize = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let sim = simulate(dir.path(), N);
    check(&sim, N);

    let single = Store::open_write(&copy(&sim.base, dir.path(), "single.redb")).unwrap();
    for (m, result) in MODELS.into_iter().zip(&sim.results) {
        let out = score_with(&single, m, SET, None, Normalisation::Mean);
        assert_eq!(out.result, *result, "the same result id in one store");
    }
    let merged = Store::open_read(&sim.merged).unwrap();
    let json = report_json(&merged);
    assert_eq!(json, report_json(&single));
    assert_eq!(
        json.matches("\"result_id\"").count(),
        3,
        "three results reported"
    );
}

/// Runs `deltalogic report --format json` on `store`; its stdout and wall time.
fn timed_report(store: &Path) -> (Vec<u8>, f64) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
        .arg("--store")
        .arg(store)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.stdout, seconds)
}

#[test]
#[ignore = "minutes: run with --ignored; figures in docs/cluster.md"]
fn a_million_scores() {
    // 112,000 questions × 3 labels × 3 models = 1,008,000 scores.
    const N: usize = 112_000;
    // DELTALOGIC_SCALE_DIR keeps the stores (to profile `report` on them); else a temporary dir.
    let temp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("DELTALOGIC_SCALE_DIR")
        .map_or_else(|| temp.path().to_owned(), PathBuf::from);
    std::fs::create_dir_all(&dir).unwrap();
    let sim = simulate(&dir, N);
    check(&sim, N);
    println!("questions: {N}; build {:.1} s", sim.build_seconds);
    for (m, (r, seconds)) in MODELS.into_iter().zip(&sim.runs) {
        println!(
            "score {m}: {} scores, {} forward tokens in {seconds:.1} s ({:.0} scores/s)",
            r.scores_computed,
            r.forward_tokens,
            r.scores_computed as f64 / seconds
        );
    }
    println!(
        "merge: {} records in {:.1} s ({:.0} records/s)",
        sim.merged_records,
        sim.merge_seconds,
        sim.merged_records as f64 / sim.merge_seconds
    );
    let scores = Store::open_read(&sim.merged)
        .unwrap()
        .count(ScoreRecord::KIND)
        .unwrap();
    let bytes = std::fs::metadata(&sim.merged).unwrap().len();
    println!(
        "store: {bytes} bytes, {scores} scores, {:.0} bytes per score",
        bytes as f64 / scores as f64
    );
    let (first, cold) = timed_report(&sim.merged);
    let (warm_json, warm) = timed_report(&sim.merged);
    assert_eq!(first, warm_json);
    // The first report computes every evaluation and keeps it; the warm one reads them back.
    println!("report --format json: first {cold:.2} s, warm {warm:.2} s");
}

/// A model that runs nothing: the prefix tree over its tokenizer's tokens counts what a real
/// run of the same model would compute.
struct Counter(deltalogic::model::tokenize::Tokenizer);

impl Counter {
    fn tokenize(&self, text: &str) -> anyhow::Result<Vec<u32>> {
        Ok(self.0.encode(text)?)
    }
}

impl deltalogic::eval::Prefill for Counter {
    type State = ();
    fn backend(&self) -> &str {
        "count"
    }
    fn empty_state(&self) {}
    fn prefill(&self, _: &(), _: &[u32]) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The full Belief-R, RobustLR (every family the ProofWriter files give) and GLoRE RobustLR
/// sets, counted with Qwen2.5-Coder's tokenizer: items, turns, prompt tokens, and the prefix
/// tree's tokens (what a scoring run computes: shared prefixes once, each label after its
/// prompt). The cluster projection in docs/cluster.md divides these by measured throughput.
#[test]
#[ignore = "a minute: run with --ignored; needs DELTALOGIC_MODELS; figures in docs/cluster.md"]
fn full_set_tokens() {
    use deltalogic::benchmarks::{self, Models, Request};
    use deltalogic::eval::tree::{self, Job};
    let models = PathBuf::from(std::env::var_os("DELTALOGIC_MODELS").expect("DELTALOGIC_MODELS"));
    let gguf = deltalogic::model::format::gguf::Gguf::open(
        models.join("Qwen2.5-Coder-0.5B-Instruct.gguf"),
    )
    .unwrap();
    let counter = Counter(deltalogic::model::tokenize::Tokenizer::from_gguf(&gguf).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("full.redb");
    // Each from its folder in the datasets folder.
    dl(&store, &["ingest", "belief-r"]);
    dl(&store, &["ingest", "proofwriter"]);
    dl(&store, &["ingest", "robustlr-glore"]);
    dl(&store, &["build", "beliefr", "--name", "belief-r"]);
    dl(
        &store,
        &[
            "build",
            "robustlr",
            "--from",
            "proofwriter",
            "--seed",
            "0",
            "--per-set",
            "100000",
            "--name",
            "robustlr",
        ],
    );
    dl(&store, &["build", "glore", "--name", "glore"]);
    // The samples whose real runs measured throughput: their counts here are those runs' tokens.
    dl(
        &store,
        &[
            "build",
            "beliefr",
            "--per-cell",
            "5",
            "--seed",
            "0",
            "--name",
            "belief-r-sample",
        ],
    );
    dl(
        &store,
        &[
            "build",
            "robustlr",
            "--from",
            "proofwriter",
            "--seed",
            "0",
            "--per-set",
            "2",
            "--name",
            "robustlr-sample",
        ],
    );
    let reg = Store::open_read(&store).unwrap();
    for name in [
        "belief-r",
        "robustlr",
        "glore",
        "belief-r-sample",
        "robustlr-sample",
    ] {
        let (_, stored) = common::set(&reg, name);
        let b = benchmarks::ALL.named(&stored.benchmark).unwrap();
        let template = b.templates()[0];
        let m = Models {
            subject: &common::NoChat,
            judge: model_id("counter"),
        };
        let prepared = b.prepare(&reg, &stored, template, &m).unwrap();
        assert_eq!(prepared.turns(), 1, "single questions");
        let (mut jobs, mut prompt_tokens, mut labels) = (Vec::new(), 0, 0);
        for item in 0..prepared.items().len() {
            let Request::Score {
                prompt, labels: l, ..
            } = prepared.request(item, 0, &[]).unwrap()
            else {
                panic!("{name} scores labels")
            };
            let context = counter.tokenize(&prompt).unwrap();
            // A label's tokens: those of prompt + label after the prompt's (the scorer's rule).
            let label_tokens: Vec<usize> = l
                .iter()
                .map(|(text, _)| {
                    counter.tokenize(&format!("{prompt}{text}")).unwrap().len() - context.len()
                })
                .collect();
            prompt_tokens += context.len();
            labels += label_tokens.len();
            jobs.push(Job {
                context,
                tags: label_tokens,
            });
        }
        let stats = tree::run(
            &counter,
            jobs,
            2,
            u64::MAX,
            |tokens, _| Ok(((), tokens as u64)),
            |_, (), _| Ok(()),
        )
        .unwrap();
        println!(
            "{name} ({}, template {template}): {} items × 1 turn, {labels} scores, {prompt_tokens} prompt tokens, {} tree tokens",
            stored.benchmark,
            prepared.items().len(),
            stats.tree_tokens
        );
    }
}
