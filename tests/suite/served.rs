//! Served models through an OpenAI-shaped endpoint (`fake_server`, answering with the stand-in
//! model): the same scores and generations as the model computed here, a rerun that sends no
//! request, a server that dies mid-run, and answers a client must refuse. The real engines are
//! tested in `engines`.

use crate::common::{self, build_generated, deltalogic, dl, members, model_id, ByteModel, NoChat};
use crate::fake_server::{Consistent, Fake, Fault};
use crate::served_safety::{add_args, run, run_ok, KEY, VAR};
use deltalogic::benchmarks::deltalogic::Episode;
use deltalogic::benchmarks::{self};
use deltalogic::eval::{
    self, models, served, Engine, GenerationRecord, ModelRecord, Normalisation, PromptRecord,
    Quiet, ResultRecord, ScoreRecord, ServedRecord,
};
use deltalogic::served::probe;
use deltalogic::store::{Id, Names, Record, Store};
use std::collections::BTreeMap;
use std::path::Path;

/// `build` of the small DeltaLogic set the command-line tests score (8 episodes).
pub const SMALL_SET: [&str; 10] = [
    "build",
    "deltalogic",
    "--from",
    "generated",
    "--seed",
    "5",
    "--per-type",
    "2",
    "--name",
    "small",
];

/// The stand-in model behind the fake endpoint (its name is its weights).
const WEIGHTS: &str = "served-weights";

fn store(dir: &Path, name: &str) -> Store {
    let reg = Store::open_write(&dir.join(name)).unwrap();
    common::generated_set(&reg, "small", 5, 2);
    let _: Vec<(Id, Episode)> = members(&reg, "small");
    reg
}

/// `model add --served url --model-id model_id`, nothing else given.
fn registration<'a>(url: &'a str, model_id: &'a str) -> served::Registration<'a> {
    served::Registration {
        url,
        model_id,
        revision: None,
        tokenizer: None,
        api_key_env: None,
        name: None,
        tolerance: served::TOLERANCE,
    }
}

fn register(reg: &Store, fake: &Fake) -> Id {
    let r = served::Registration {
        revision: Some("test-revision"),
        name: Some("byte"),
        ..registration(&fake.url, "byte")
    };
    served::add(reg, &r).unwrap().model
}

/// Runs `template` on the set with the registered served model `model`.
fn run_served(reg: &Store, model: Id, template: &str) -> anyhow::Result<eval::Outcome> {
    let (set_id, stored) = common::set(reg, "small");
    let (_, record) = models::resolve(reg, &model.hex()).unwrap();
    eval::run(
        reg,
        &eval::Run {
            benchmark: benchmarks::ALL.named(&stored.benchmark).unwrap(),
            set_id,
            set: &stored,
            models: eval::Participants {
                subject: model,
                info: &NoChat,
                judge: None,
            },
            template,
            norms: vec![Normalisation::Mean],
            shard: None,
            execution: Default::default(),
        },
        |_| models::engine(reg, &record, 4),
        &mut Quiet,
    )
}

/// The same with the stand-in model computed here.
fn run_local(reg: &Store, template: &str) -> eval::Outcome {
    let (set_id, stored) = common::set(reg, "small");
    eval::run(
        reg,
        &eval::Run {
            benchmark: benchmarks::ALL.named(&stored.benchmark).unwrap(),
            set_id,
            set: &stored,
            models: eval::Participants {
                subject: model_id("local"),
                info: &NoChat,
                judge: None,
            },
            template,
            norms: vec![Normalisation::Mean],
            shard: None,
            execution: Default::default(),
        },
        |_| Ok(Engine::Local(Consistent(ByteModel::new(WEIGHTS)))),
        &mut Quiet,
    )
    .unwrap()
}

/// Every stored score's log-probs and generation's text by (prompt text, label or "").
fn computed(reg: &Store) -> BTreeMap<(String, String), (Vec<f32>, String)> {
    let prompt = |id: [u8; 32]| reg.get::<PromptRecord>(&Id(id)).unwrap().unwrap().text;
    let mut out = BTreeMap::new();
    for (_, s) in reg.all::<ScoreRecord>().unwrap() {
        out.insert(
            (prompt(s.prompt), s.label.clone()),
            (s.logprobs, String::new()),
        );
    }
    for (_, g) in reg.all::<GenerationRecord>().unwrap() {
        out.insert((prompt(g.prompt), String::new()), (g.logprobs, g.text));
    }
    out
}

/// Completions requests of a run: the probe once before the first, then one per score and
/// generation, and one per cross-check.
fn requests_of_a_run(report: &eval::ScoreReport) -> u64 {
    let asked = report.scores_computed + report.generations_computed;
    probe::REQUESTS + asked as u64 + report.cross_checks
}

/// The cross-checks of a turn that asks `scores` scores: the first, one in
/// [`probe::CROSS_CHECK_EVERY`] after it, and the last.
fn cross_checks_of_a_turn(scores: u64) -> u64 {
    scores.div_ceil(probe::CROSS_CHECK_EVERY)
        + u64::from(scores > 0 && !(scores - 1).is_multiple_of(probe::CROSS_CHECK_EVERY))
}

fn answers(reg: &Store, result: Id) -> Vec<Vec<deltalogic::eval::TurnAnswer>> {
    let r = reg.get::<ResultRecord>(&result).unwrap().unwrap();
    r.rows
        .iter()
        .map(|row| row.turns.iter().map(|t| t.answer).collect())
        .collect()
}

#[test]
fn a_set_through_a_server_scores_as_here_and_a_rerun_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, None);
    let served_reg = store(dir.path(), "served.store");
    let model = register(&served_reg, &fake);
    let local_reg = store(dir.path(), "local.store");
    // `plain` scores labels; `dialogue` also generates the model's explanation.
    for template in ["plain", "dialogue"] {
        let before = fake.requests();
        let first = run_served(&served_reg, model, template).unwrap();
        assert!(first.report.scores_computed > 0);
        assert_eq!(
            fake.requests() - before,
            requests_of_a_run(&first.report),
            "one request per computed record, the probe and the cross-checks: {:?}",
            first.report
        );
        if template == "plain" {
            // Two turns of the same labels: each checked at its first and its last score.
            let turn = first.report.scores_computed as u64 / 2;
            assert_eq!(first.report.cross_checks, 2 * cross_checks_of_a_turn(turn));
        }
        let here = run_local(&local_reg, template);
        assert_eq!(
            answers(&served_reg, first.result),
            answers(&local_reg, here.result)
        );
        // A rerun finds everything stored and sends no request.
        let before = fake.requests();
        let again = run_served(&served_reg, model, template).unwrap();
        assert_eq!(
            fake.requests(),
            before,
            "a cached rerun asks the server nothing"
        );
        assert_eq!(again.result, first.result);
        assert_eq!(
            again.report.scores_computed + again.report.generations_computed,
            0
        );
    }
    assert!(
        !served_reg.all::<GenerationRecord>().unwrap().is_empty(),
        "the dialogue template generated through the server"
    );
    // Bit for bit the stand-in's log-probs, texts the same: the protocol loses nothing.
    let (ours, theirs) = (computed(&served_reg), computed(&local_reg));
    assert_eq!(ours.len(), theirs.len());
    for (key, (lp, text)) in &ours {
        let (lp2, text2) = &theirs[key];
        assert_eq!(text, text2, "{key:?}");
        assert!(
            lp.len() == lp2.len() && lp.iter().zip(lp2).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{key:?}: {lp:?} against {lp2:?}"
        );
    }
    // Served scores carry their engine, and no token ids (the server's tokens are text).
    for (_, s) in served_reg.all::<ScoreRecord>().unwrap() {
        assert_eq!(s.backend, served::BACKEND);
        assert!(s.tokens.is_empty());
    }
}

#[test]
fn a_server_that_dies_mid_run_keeps_what_it_answered_and_a_rerun_ends_as_an_unbroken_run() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, None);
    let unbroken_reg = store(dir.path(), "unbroken.store");
    let model = register(&unbroken_reg, &fake);
    let unbroken = run_served(&unbroken_reg, model, "plain").unwrap();

    let reg = store(dir.path(), "broken.store");
    assert_eq!(
        register(&reg, &fake),
        model,
        "the same identity is the same model"
    );
    fake.down_after(40);
    let err = format!("{:#}", run_served(&reg, model, "plain").unwrap_err());
    assert!(
        err.contains(&fake.url) && err.contains("cannot reach"),
        "{err}"
    );
    assert!(err.contains("a rerun asks only for the rest"), "{err}");
    let kept = reg.all::<ScoreRecord>().unwrap().len();
    // Of the 40 requests answered (the probe's and the cross-checks' among them), the scores a
    // passed cross-check vouched for: the first's at least.
    assert!(
        (1..unbroken.report.scores_computed).contains(&kept),
        "{kept} of {} scores kept",
        unbroken.report.scores_computed
    );
    fake.restart();
    let before = fake.requests();
    let rerun = run_served(&reg, model, "plain").unwrap();
    assert_eq!(rerun.report.scores_found_in_cache, kept);
    let rest = unbroken.report.scores_computed - kept;
    assert_eq!(rerun.report.scores_computed, rest);
    assert_eq!(fake.requests() - before, requests_of_a_run(&rerun.report));
    assert_eq!(
        rerun.result, unbroken.result,
        "the same result as a run never interrupted"
    );
}

#[test]
fn answers_that_do_not_add_up_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, None);
    let reg = store(dir.path(), "faults.store");
    let model = register(&reg, &fake);
    for (fault, says) in [
        (Fault::NotJson, "not JSON"),
        (Fault::NanLogprob, "not JSON"),
        // Checked before the first request, the probe meets it first.
        (Fault::WrongCount, "more than the 1 asked for"),
        (Fault::NoLogprobs, "no `logprobs`"),
    ] {
        fake.set_fault(fault);
        let err = format!("{:#}", run_served(&reg, model, "plain").unwrap_err());
        assert!(
            err.contains(says) && err.contains(&fake.url),
            "{fault:?}: {err}"
        );
        assert_eq!(
            reg.all::<ScoreRecord>().unwrap().len(),
            0,
            "{fault:?}: nothing stored"
        );
    }
    // Tokens of two characters: a label starting at an odd character begins inside a token,
    // which is named as such (labels starting at a token's start are answers like any other).
    fake.set_fault(Fault::Pairs);
    let err = format!("{:#}", run_served(&reg, model, "plain").unwrap_err());
    assert!(err.contains("falls inside token"), "{err}");
}

#[test]
fn the_probe_refuses_a_server_whose_echo_is_not_its_model() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, None);
    let reg = Store::open_write(&dir.path().join("probe.store")).unwrap();
    for (fault, says) in [
        (Fault::Shifted, "not conforming"),
        (Fault::NoLogprobs, "no `logprobs`"),
        (Fault::Down, "cannot reach"),
    ] {
        fake.set_fault(fault);
        let err = served::add(&reg, &registration(&fake.url, "byte")).unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.contains(says) && err.contains(&fake.url),
            "{fault:?}: {err}"
        );
        assert!(
            reg.all::<eval::ModelRecord>().unwrap().is_empty(),
            "nothing registered"
        );
    }
    // A model id the server does not serve.
    fake.restart();
    let err = served::add(&reg, &registration(&fake.url, "gpt-none")).unwrap_err();
    assert!(
        err.to_string().contains("serves no model `gpt-none`"),
        "{err}"
    );
}

/// The command line: `model add --served`, `score` twice (the second sends nothing), `audit
/// --verify` re-asking the server, `model list` marking it served, an API key read from the
/// environment and never written, and an unreachable server named in one error.
#[test]
fn the_command_line_registers_scores_and_audits_a_served_model() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-test-4f1e9d2a";
    let fake = Fake::start(WEIGHTS, Some(key));
    let store_path = dir.path().join("cli.store");
    dl(&store_path, &SMALL_SET);
    let add = |env: Option<&str>| {
        let mut c = deltalogic(&store_path);
        c.args([
            "--json",
            "model",
            "add",
            "--served",
            &fake.url,
            "--model-id",
            "byte",
            "--name",
            "byte",
            "--api-key-env",
            "DELTALOGIC_TEST_KEY",
        ]);
        c.env_remove("DELTALOGIC_TEST_KEY");
        if let Some(k) = env {
            c.env("DELTALOGIC_TEST_KEY", k);
        }
        c.output().unwrap()
    };
    let out = add(None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("DELTALOGIC_TEST_KEY"),
        "{err}"
    );
    let out = add(Some("wrong-key"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("401"), "{err}");
    assert!(
        !err.contains("wrong-key"),
        "the key is never printed: {err}"
    );
    let out = add(Some(key));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        added["probe"].as_str().unwrap().contains("echo agrees"),
        "{added}"
    );

    let score = || {
        let out = deltalogic(&store_path)
            .args([
                "--json",
                "score",
                "--model",
                "byte",
                "--set",
                "small",
                "--concurrency",
                "3",
            ])
            .env("DELTALOGIC_TEST_KEY", key)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let first = score();
    let before = fake.requests();
    let second = score();
    assert_eq!(fake.requests(), before, "the second run sends no request");
    assert_eq!(second["scores_computed"], 0);
    assert_eq!(first["result"], second["result"]);

    // Marked served wherever it is named: the report, the audit, the lm-eval export.
    let report = String::from_utf8(dl(&store_path, &["report"]).stdout).unwrap();
    assert!(report.contains("byte (served)"), "{report}");
    let audit = String::from_utf8(
        dl(
            &store_path,
            &["audit", &first["result"].as_str().unwrap()[..12]],
        )
        .stdout,
    )
    .unwrap();
    assert!(
        audit.lines().filter(|l| l.contains("(served)")).count() > 0,
        "{audit}"
    );
    let list = dl(&store_path, &["--json", "model", "list"]).stdout;
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
    assert_eq!(list[0]["served"], true, "{list}");
    assert_eq!(list[0]["path"], fake.url.as_str());

    let result = &first["result"].as_str().unwrap()[..12];
    let out = deltalogic(&store_path)
        .args(["audit", result, "--verify", "3", "--tolerance", "0.001"])
        .env("DELTALOGIC_TEST_KEY", key)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("verified 3 sampled records: 3 identical"),
        "{text}"
    );
    assert_eq!(text.matches("|Δ| 0.00e0").count(), 3, "{text}");

    // The key is nowhere in the store.
    let bytes = std::fs::read(&store_path).unwrap();
    assert!(
        !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
        "the API key was written to the store"
    );

    // An unreachable server: one error naming its URL.
    let out = deltalogic(&store_path)
        .args([
            "model",
            "add",
            "--served",
            "http://127.0.0.1:9/v1",
            "--model-id",
            "x",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("http://127.0.0.1:9/v1/models")
            && err.contains("cannot reach"),
        "{err}"
    );
}

/// A colleague's cache of served scores: the URL and the key variable it names are never
/// used. Merged into a store where the model is not registered, its scores are merged
/// unverified (and said so) without a single request, the file's URL and variable are not
/// stored, and the model cannot be asked until it is registered here; after `model add
/// --served`, `cache verify --recompute` asks the registered server. Merged into a store where
/// it is registered, a sample is re-asked there.
#[test]
fn a_merge_never_follows_a_url_or_key_variable_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let theirs = dir.path().join("theirs.store");
    dl(&theirs, &SMALL_SET);
    let add = add_args(&fake.url);
    run_ok(&theirs, &add);
    run_ok(&theirs, &["score", "--model", "byte", "--set", "small"]);
    let file = dir.path().join("shared.redb");
    let file = file.to_str().unwrap();
    dl(
        &theirs,
        &[
            "cache", "export", "--model", "byte", "--set", "small", "-o", file,
        ],
    );

    // The merging user has the variable the file names set: nothing is sent anyway.
    let mine = dir.path().join("mine.store");
    let before = fake.received();
    let out = run_ok(&mine, &["--json", "cache", "merge", file]);
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(fake.received(), before, "no request at the file's URL");
    assert!(
        merged["recomputed"].as_object().unwrap().is_empty(),
        "{merged}"
    );
    let unverified = merged["unverified"].as_object().unwrap();
    assert_eq!(unverified.len(), 1, "{merged}");
    let model = unverified.keys().next().unwrap();
    assert_eq!(merged["served_not_registered"], serde_json::json!([model]));
    let text = run_ok(&dir.path().join("text.store"), &["cache", "merge", file]).stdout;
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("merged unverified: it is not registered here")
            && text.contains("model add --served"),
        "{text}"
    );
    let bytes = std::fs::read(&mine).unwrap();
    for absent in [fake.url.as_str(), VAR] {
        assert!(
            !bytes.windows(absent.len()).any(|w| w == absent.as_bytes()),
            "{absent} stored by the merge"
        );
    }
    // Not askable until registered here.
    build_generated(&mine, "6", "1", "other");
    let err = not_registered(&run(&mine, &["score", "--model", "byte", "--set", "other"]));
    assert!(err.contains("it came from a cache file"), "{err}");
    assert_eq!(fake.received(), before, "{err}");

    // Registered here: `cache verify --recompute` asks the registered server and marks them.
    run_ok(&mine, &add);
    let out = run_ok(&mine, &["--json", "cache", "verify", "--recompute", "4"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"recomputed\""), "{text}");
    let stats = dl(&mine, &["--json", "cache", "stats"]).stdout;
    let stats: serde_json::Value = serde_json::from_slice(&stats).unwrap();
    assert!(
        stats["unverified_per_model"]
            .as_object()
            .unwrap()
            .is_empty(),
        "{stats}"
    );

    // Registered here before the merge: a sample of 8 re-asked at the registered URL.
    let registered = dir.path().join("registered.store");
    run_ok(&registered, &add);
    let before = fake.requests();
    let out = run_ok(&registered, &["--json", "cache", "merge", file]);
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["recomputed"][model], 8, "{merged}");
    assert_eq!(
        fake.requests() - before,
        probe::REQUESTS + 8 + 8u64.div_ceil(probe::CROSS_CHECK_EVERY),
        "a sample of 8 re-asked, after the probe, one cross-checked"
    );

    // A registered server that does not answer leaves them unverified.
    let down = dir.path().join("down.store");
    run_ok(&down, &add);
    fake.set_fault(Fault::Down);
    let out = run_ok(&down, &["--json", "cache", "merge", file]);
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        !merged["unverified"].as_object().unwrap().is_empty(),
        "{merged}"
    );
}

/// The refusal of a served model this store has no registration of; its message.
fn not_registered(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success()
            && err.contains("is not registered in")
            && err.contains("model add --served"),
        "{err}"
    );
    err
}

/// A store merged by an earlier version holds a colleague's URL and key variable in the shared
/// records themselves (that version copied them verbatim). Only what `model add` registered in
/// this store is ever asked: such a model is refused by name, with nothing sent, until it is
/// registered here.
#[test]
fn a_url_merged_by_an_earlier_version_is_never_asked() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let theirs = dir.path().join("theirs.store");
    dl(&theirs, &SMALL_SET);
    run_ok(&theirs, &add_args(&fake.url));
    let mine = dir.path().join("mine.store");
    dl(&mine, &SMALL_SET);
    {
        // What the earlier merge did: the model's records copied as they were, URL included.
        let (from, to) = (
            Store::open_read(&theirs).unwrap(),
            Store::open_write(&mine).unwrap(),
        );
        let model = from.lookup(Names::Models, "byte").unwrap().unwrap();
        to.write(|w| {
            for kind in [ModelRecord::KIND, ServedRecord::KIND] {
                for (id, body) in from.raw_all(kind)? {
                    w.put_raw(kind, id, &body)?;
                }
            }
            w.name(Names::Models, "byte", model)
        })
        .unwrap();
    }
    let listed = run_ok(&mine, &["--json", "model", "list"]).stdout;
    let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap();
    assert_eq!(listed[0]["path"], fake.url.as_str(), "kept as provenance");
    assert!(listed[0]["url"].is_null(), "{listed}");
    let before = fake.received();
    let err = not_registered(&run(&mine, &["score", "--model", "byte", "--set", "small"]));
    assert_eq!(
        fake.received(),
        before,
        "nothing sent to the record's URL: {err}"
    );
    run_ok(&mine, &add_args(&fake.url));
    run_ok(&mine, &["score", "--model", "byte", "--set", "small"]);
}

/// Both engines hand their records to one save path: the same answers are stored as the same
/// records, but for what names the engine (its model, backend, token ids and timings), and
/// counted the same, generated tokens included.
#[test]
fn the_served_and_the_local_engine_store_the_same_record_for_the_same_answer() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, None);
    let served_reg = store(dir.path(), "served.store");
    let model = register(&served_reg, &fake);
    let local_reg = store(dir.path(), "local.store");
    let served = run_served(&served_reg, model, "dialogue").unwrap().report;
    let local = run_local(&local_reg, "dialogue").report;
    let counts = |r: &eval::ScoreReport| {
        (
            r.scores_computed,
            r.generations_computed,
            r.generated_tokens,
        )
    };
    assert_eq!(counts(&served), counts(&local));
    assert!(served.generations_computed > 0 && served.generated_tokens > 0);
    let scores = |reg: &Store| -> BTreeMap<([u8; 32], String), ScoreRecord> {
        reg.all::<ScoreRecord>()
            .unwrap()
            .into_iter()
            .map(|(_, s)| {
                let key = (s.prompt, s.label.clone());
                let engine_free = ScoreRecord {
                    model: [0; 32],
                    backend: String::new(),
                    tokens: Vec::new(),
                    compute_micros: 0,
                    computed_at: 0,
                    ..s
                };
                (key, engine_free)
            })
            .collect()
    };
    let generations = |reg: &Store| -> BTreeMap<[u8; 32], GenerationRecord> {
        reg.all::<GenerationRecord>()
            .unwrap()
            .into_iter()
            .map(|(_, g)| {
                let key = g.prompt;
                let engine_free = GenerationRecord {
                    model: [0; 32],
                    backend: String::new(),
                    tokens: Vec::new(),
                    compute_micros: 0,
                    computed_at: 0,
                    ..g
                };
                (key, engine_free)
            })
            .collect()
    };
    assert_eq!(scores(&served_reg), scores(&local_reg));
    assert_eq!(generations(&served_reg), generations(&local_reg));
}
