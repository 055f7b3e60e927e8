//! The binary as a user meets it: bad input gives a clear error and leaves the store alone,
//! `--json` output is machine-readable, and the README's main command works on an empty store.

use std::path::Path;
use std::process::{Command, Output};

fn run(store: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltalogic"))
        .arg("--store")
        .arg(store)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--json prints JSON")
}

fn items(store: &Path) -> u64 {
    json(&run(store, &["--json", "stats"]))["items_per_dataset"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

#[test]
fn malformed_record_stores_nothing_unless_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let bad = "fixtures/bad/folio_wrong_label.jsonl";
    let out = run(&store, &["ingest", "folio", bad]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(bad) && err.contains("line 1") && err.contains("`label`"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(items(&store), 0);

    let report = json(&run(
        &store,
        &["--json", "ingest", "folio", bad, "--skip-bad"],
    ));
    assert_eq!(report["skipped"], 1);
    assert_eq!(items(&store), report["new_items"].as_u64().unwrap());
}

#[test]
fn unknown_names_and_missing_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    // A command that only reads never creates a store: a mistyped --store is an error.
    let out = run(&store, &["stats"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(!store.exists(), "no empty store was created");
    deltalogic::store::Store::open_write(&store).unwrap();
    for (args, expect) in [
        (
            vec!["episodes", "list", "--set", "nope"],
            "no set named `nope`",
        ),
        (
            vec!["episodes", "show", "abcdef12"],
            "no episode id starts with `abcdef12`",
        ),
        (
            vec!["ingest", "folio", "no/such/file.jsonl"],
            "no/such/file.jsonl: cannot read",
        ),
    ] {
        let out = run(&store, &args);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(expect) && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn main_command_builds_the_default_set_and_exports_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let built = json(&run(
        &store,
        &[
            "--json",
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            "0",
        ],
    ));
    assert_eq!(built["episodes"], 100);
    let stats = json(&run(&store, &["--json", "stats"]));
    assert_eq!(stats["sets"][0]["name"], "deltalogic");
    assert_eq!(stats["sets"][0]["members"], 100);
    assert_eq!(stats["sets"][0]["benchmark"], "deltalogic");

    let out = run(
        &store,
        &[
            "episodes",
            "export",
            "--set",
            "deltalogic",
            "--format",
            "jsonl",
        ],
    );
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 100);
    for e in &lines {
        for field in [
            "id",
            "premises",
            "query",
            "y0",
            "edit_type",
            "edit",
            "premises_after",
            "y1",
        ] {
            assert!(
                e.get(field).is_some(),
                "exported episode lacks {field}: {e}"
            );
        }
    }
    let first = lines[0]["id"].as_str().unwrap();
    let shown = run(&store, &["episodes", "show", &first[..10]]);
    let text = String::from_utf8_lossy(&shown.stdout);
    for part in ["P:", "q:", "y0:", "edit:", "P':", "y1:"] {
        assert!(text.contains(part), "show lacks {part}: {text}");
    }
}

#[test]
#[cfg_attr(
    dataset_missing = "robustlr/glore_subset",
    ignore = "needs the dataset robustlr/glore_subset (deltalogic datasets where)"
)]
fn build_robustlr_and_glore_print_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let built = json(&run(
        &store,
        &[
            "--json",
            "build",
            "robustlr",
            "--from",
            "generated",
            "--per-set",
            "2",
            "--name",
            "rl",
        ],
    ));
    assert_eq!(built["name"], "rl");
    let sets = built["report"]["sets"].as_array().unwrap();
    assert_eq!(sets.len(), 6);
    let items: u64 = sets.iter().map(|s| s["items"].as_u64().unwrap()).sum();
    assert_eq!(built["questions"].as_u64().unwrap(), items);
    assert!(sets.iter().all(|s| s["families"] == 2));
    // Text output: the per-set table and the stored set.
    let out = run(
        &store,
        &["build", "robustlr", "--from", "generated", "--per-set", "2"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("C-CS") && text.contains("set `robustlr`"),
        "{text}"
    );

    // GLoRE without ingested items says what to ingest.
    let out = run(&store, &["build", "glore"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("deltalogic ingest robustlr-glore"), "{err}");
    // With no path, from the datasets folder (robustlr/glore_subset in it).
    json(&run(&store, &["--json", "ingest", "robustlr-glore"]));
    let built = json(&run(&store, &["--json", "build", "glore"]));
    assert_eq!(built["questions"], 1000);
    assert_eq!(built["labels"]["True"], 495);
    assert_eq!(built["labels"]["False"], 505);
    assert!(built["gold"].as_str().unwrap().contains("no solver"));
}

/// No command writes over the open store (under its own path, another spelling of it, or a
/// link), nor over a file it did not write itself unless forced; a thread count past what the
/// machine can use is refused.
#[test]
fn outputs_never_overwrite_the_store_or_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let built = json(&run(
        &store,
        &[
            "--json",
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--per-type",
            "1",
        ],
    ));
    assert!(built["episodes"].as_u64().unwrap() > 0);
    // redb rewrites its header when a store is opened for writing, so compare what it holds.
    let before = json(&run(&store, &["--json", "stats"]));
    let link = dir.path().join("link.redb");
    std::os::unix::fs::symlink(&store, &link).unwrap();
    let other_spelling = dir.path().join(".").join("s.redb");
    for target in [&store, &link, &other_spelling] {
        let t = target.to_str().unwrap();
        for args in [
            vec!["episodes", "export", "--set", "deltalogic", "-o", t],
            vec![
                "episodes",
                "export",
                "--set",
                "deltalogic",
                "-o",
                t,
                "--force",
            ],
            vec![
                "cache",
                "export",
                "--model",
                "m",
                "--set",
                "deltalogic",
                "-o",
                t,
            ],
        ] {
            let out = run(&store, &args);
            assert!(!out.status.success(), "{args:?} succeeded");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("is the store itself") || err.contains("already exists"),
                "{args:?}: {err}"
            );
        }
    }
    assert_eq!(
        json(&run(&store, &["--json", "stats"])),
        before,
        "the store is untouched"
    );
    assert!(run(&store, &["cache", "verify"]).status.success());

    // A file the tool did not write is kept unless --force; its own previous output is not.
    let foreign = dir.path().join("notes.jsonl");
    std::fs::write(&foreign, "mine\n").unwrap();
    let f = foreign.to_str().unwrap();
    let out = run(
        &store,
        &["episodes", "export", "--set", "deltalogic", "-o", f],
    );
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "mine\n");
    let fresh = dir.path().join("episodes.jsonl");
    let e = fresh.to_str().unwrap();
    for _ in 0..2 {
        let out = run(
            &store,
            &["episodes", "export", "--set", "deltalogic", "-o", e],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(run(
        &store,
        &[
            "episodes",
            "export",
            "--set",
            "deltalogic",
            "-o",
            f,
            "--force"
        ]
    )
    .status
    .success());

    let out = run(
        &store,
        &[
            "score",
            "--model",
            "m",
            "--set",
            "deltalogic",
            "--threads",
            "100000",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("100000 threads: give 1 to"), "{err}");
}

/// The binary in an empty folder, with no store given: the default `store/registry.redb`.
fn in_empty(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltalogic"))
        .args(args)
        .current_dir(dir)
        .env_remove("DELTALOGIC_STORE")
        .output()
        .unwrap()
}

/// `build <benchmark> --help` prints that benchmark's own options; every help text and the
/// unknown-benchmark error list the registered benchmarks; help and argument errors exit before
/// any store is created or opened.
#[test]
fn build_help_is_the_benchmarks_own_and_no_help_makes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let text = |out: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let names: Vec<&str> = deltalogic::benchmarks::ALL
        .iter()
        .map(|b| b.command())
        .collect();
    let list = deltalogic::benchmarks::ALL.commands();
    assert_eq!(list, names.join(", "));
    // Each benchmark's help shows options only it has.
    for (benchmark, own) in [
        ("deltalogic", "--extended"),
        ("beliefr", "--per-cell"),
        ("robustlr", "--per-set"),
        ("static", "--from-set"),
        ("deduce", "--perturb"),
        ("clomo", "--split"),
    ] {
        for help in ["--help", "-h"] {
            let out = in_empty(dir.path(), &["build", benchmark, help]);
            assert!(out.status.success(), "{benchmark} {help}: {}", text(&out));
            let t = text(&out);
            assert!(
                t.contains(own) && t.contains(&format!("deltalogic build {benchmark}")),
                "{benchmark} {help}: {t}"
            );
        }
    }
    for args in [
        vec!["build", "--help"],
        vec!["--help"],
        vec!["help", "build"],
    ] {
        let out = in_empty(dir.path(), &args);
        assert!(out.status.success(), "{args:?}");
        assert!(text(&out).contains(&list), "{args:?}: {}", text(&out));
    }
    let out = in_empty(dir.path(), &["build", "--help"]);
    for name in &names {
        assert!(
            text(&out).contains(&format!("\n  {name} ")),
            "build --help lists {name}: {}",
            text(&out)
        );
    }
    // Argument errors: clap's usage error, naming the benchmarks or the benchmark's usage.
    for (args, expect) in [
        (vec!["build", "nosuch"], list.as_str()),
        (vec!["build"], list.as_str()),
        (
            vec!["build", "deltalogic", "--bogus"],
            "deltalogic build deltalogic",
        ),
        (
            vec!["build", "clomo", "--split", "nope"],
            "[possible values",
        ),
        (vec!["build", "deltalogic", "--seed", "x"], "--seed"),
    ] {
        let out = in_empty(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(expect), "{args:?}: {}", text(&out));
    }
    // Help of every command, and the usual mistakes, never make a store.
    for args in [
        vec!["run", "--help"],
        vec!["score", "--help"],
        vec!["report", "--help"],
        vec!["audit", "--help"],
        vec!["cache", "merge", "--help"],
        vec!["model", "add", "--help"],
        vec!["score", "--model", "m"],
        vec!["score", "--model", "m", "--set", "s", "--norm", "nosuch"],
        vec!["report", "--norm", "mean,nosuch"],
        vec!["nosuch"],
        vec!["--version"],
    ] {
        let out = in_empty(dir.path(), &args);
        // 0 for help, 2 for clap's usage errors: both before the store.
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(2),
            "{args:?}: {}",
            text(&out)
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "help and argument errors left {left:?}");
}

/// `bench` sets the best of llama-bench's runs beside the best of ours (not its mean), and
/// refuses a llama-bench whose JSON lacks the runs: a stand-in script prints llama-bench's JSON.
#[test]
#[cfg_attr(models_missing, ignore = "needs scripts/fetch_models.sh")]
fn bench_compares_the_best_runs_of_both_sides() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let model = crate::common::smollm2();
    let fake = |name: &str, rows: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\ncat <<'END'\n{rows}\nEND\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    let bench = |llama: &Path| {
        run(
            &dir.path().join("store.redb"),
            &[
                "--json",
                "bench",
                "--model",
                model.to_str().unwrap(),
                "--tokens",
                "8",
                "--decode",
                "2",
                "--reps",
                "1",
                "--backend",
                "int8",
                "--llama-bench",
                llama.to_str().unwrap(),
            ],
        )
    };
    let runs = fake(
        "runs",
        r#"[{"n_prompt": 8, "n_gen": 0, "avg_ts": 10.0, "samples_ts": [5.0, 20.0, 5.0]},
            {"n_prompt": 0, "n_gen": 2, "avg_ts": 3.0, "samples_ts": [1.0, 6.0, 2.0]}]"#,
    );
    let report = json(&bench(&runs));
    let row = &report["rows"][0];
    assert_eq!(row["prefill_tok_s"][0]["llama_cpp"], 20.0);
    assert_eq!(row["decode_tok_s"]["llama_cpp"], 6.0);
    // Each side's share is against the limit measured beside it: the same multiply-add peak for
    // prefill, its own streaming read for decode.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    let pp = &row["prefill_tok_s"][0];
    assert!(close(
        f(&pp["llama_cpp_share_of_limit"]) / f(&pp["share_of_limit"]),
        20.0 / f(&pp["ours"])
    ));
    let tg = &row["decode_tok_s"];
    let mean = |r: &serde_json::Value| (f(&r["before"]) + f(&r["after"])) / 2.0;
    let (ours_read, llama_read) = (
        mean(&row["decode_read"]),
        mean(&row["llama_cpp_decode_read"]),
    );
    assert!(ours_read > 0.0 && llama_read > 0.0, "{row}");
    assert!(close(
        f(&tg["llama_cpp_share_of_limit"]) / f(&tg["share_of_limit"]),
        6.0 / f(&tg["ours"]) * ours_read / llama_read
    ));
    let means = fake(
        "means",
        r#"[{"n_prompt": 8, "n_gen": 0, "avg_ts": 10.0},
            {"n_prompt": 0, "n_gen": 2, "avg_ts": 3.0}]"#,
    );
    let out = bench(&means);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("samples_ts"), "{err}");
    assert!(
        err.contains(means.to_str().unwrap()),
        "names the program: {err}"
    );
}

/// `model export-hf --model DIR`: a directory where the GGUF file belongs is said to be one, once,
/// not as the system's "No such device" twice.
#[test]
fn export_hf_of_a_directory_says_it_wants_the_gguf_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model-dir");
    std::fs::create_dir(&model).unwrap();
    let out = run(
        &dir.path().join("s.redb"),
        &[
            "model",
            "export-hf",
            "--model",
            model.to_str().unwrap(),
            "-o",
            dir.path().join("out").to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&model.display().to_string())
            && err.contains("is a directory: export-hf reads a GGUF file")
            && !err.contains("os error"),
        "{err}"
    );
    assert!(!dir.path().join("out").exists());
}

/// `score-text --labels True` after `Label:` is scored as `Label:True`: the user is warned, and
/// only of the labels without their leading space; a context ending in whitespace takes them.
#[test]
fn score_text_warns_of_labels_glued_to_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let model = crate::common::tiny_llama(&dir.path().join("llama"));
    let score = |context: &str| {
        run(
            &dir.path().join("s.redb"),
            &[
                "--json",
                "score-text",
                "--model",
                model.to_str().unwrap(),
                "--context",
                context,
                "--labels",
                "True",
                " False",
            ],
        )
    };
    let out = score("Label:");
    json(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: label(s) \"True\" have no leading space") && !err.contains("False"),
        "{err}"
    );
    let out = score("Label:\n");
    json(&out);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// `score --help` lists every template of every benchmark of the catalogue (DeduCE's `continue`
/// too): a new benchmark's templates come with it.
#[test]
fn score_help_lists_every_template_of_the_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&dir.path().join("s.redb"), &["score", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for b in deltalogic::benchmarks::ALL.iter() {
        let listed = format!("{}: {}", b.title(), b.templates().join(", "));
        assert!(help.contains(&listed), "`{listed}` is not in:\n{help}");
    }
    assert!(help.contains("continue"), "{help}");
}

/// A template the benchmark lacks is refused in one wording, naming the benchmark's templates,
/// before anything is asked of a model.
#[test]
fn an_unknown_template_is_refused_naming_the_benchmarks_templates() {
    use deltalogic::eval;
    let dir = tempfile::tempdir().unwrap();
    let reg = deltalogic::store::Store::open_write(&dir.path().join("s.redb")).unwrap();
    crate::common::generated_set(&reg, "small", 5, 1);
    let (set_id, stored) = crate::common::set(&reg, "small");
    let benchmark = deltalogic::benchmarks::ALL
        .named(&stored.benchmark)
        .unwrap();
    let err = eval::run(
        &reg,
        &eval::Run {
            benchmark,
            set_id,
            set: &stored,
            models: eval::Participants {
                subject: crate::common::model_id("m"),
                info: &crate::common::NoChat,
                judge: None,
            },
            template: "nope",
            norms: vec![eval::Normalisation::Mean],
            shard: None,
            execution: Default::default(),
        },
        |_| -> anyhow::Result<eval::Engine<crate::common::ByteModel>> {
            panic!("no model is loaded for an unknown template")
        },
        &mut eval::Quiet,
    )
    .unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        format!(
            "{} has no template `nope` (known: {})",
            benchmark.title(),
            benchmark.templates().join(", ")
        )
    );
}

/// `stats` counts the records of every kind the catalogue declares, by table, whatever kind it
/// is: the episodes and the set just built among them, the kinds with no record at 0.
#[test]
fn stats_counts_every_declared_record_kind() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    json(&run(
        &store,
        &[
            "--json",
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            "5",
            "--per-type",
            "1",
            "--name",
            "small",
        ],
    ));
    let stats = json(&run(&store, &["--json", "stats"]));
    let per_kind = stats["records_per_kind"].as_object().unwrap();
    let declared = deltalogic::eval::kinds::kinds(deltalogic::benchmarks::ALL);
    assert_eq!(per_kind.len(), declared.len(), "{per_kind:?}");
    for d in &declared {
        assert!(per_kind.contains_key(d.kind.table), "{}", d.kind.table);
    }
    assert_eq!(per_kind["episodes"], stats["episodes"]);
    assert_eq!(per_kind["sets"], 1);
    assert_eq!(per_kind["scores"], 0);
}
