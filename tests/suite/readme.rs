//! The README cannot drift from the tool: every command line of its `sh` blocks is parsed by the
//! real command line (`deltalogic::cli::Cli`, which also parses each benchmark's build options),
//! its two commands are the ones `.ci/run` and a new user run, and it lists every benchmark. What
//! the commands do is run by the tests named in `COVERED`.

use clap::Parser;
use std::path::Path;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The command lines of the README's `sh` blocks: continuation lines joined, comments and
/// comment-only lines dropped, `a && b` split.
fn commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            in_block = line.trim() == "```sh";
            continue;
        }
        if !in_block {
            continue;
        }
        let code = strip_comment(line);
        if code.trim().is_empty() {
            continue;
        }
        match code.trim_end().strip_suffix('\\') {
            Some(head) => pending += head,
            None => {
                pending += code.trim_end();
                out.extend(pending.split(" && ").map(|c| c.trim().to_string()));
                pending.clear();
            }
        }
    }
    out
}

/// The line before an unquoted `#`.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Shell words: blanks split, double quotes group (and are removed), `[...]` marks an optional
/// part and is dropped, `VAR=value` prefixes are dropped.
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut started) = (false, false);
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    let mut kept = Vec::new();
    let mut optional = 0;
    for w in words {
        if w.starts_with('[') {
            optional += 1;
        }
        if optional == 0 && !(kept.is_empty() && w.contains('=')) {
            kept.push(w.clone());
        }
        if w.ends_with(']') {
            optional -= 1;
        }
    }
    kept
}

/// The README's command lines that are not `deltalogic …`: each must be one of these.
const OTHER_COMMANDS: [&str; 4] = [
    "cargo run --release -- run",
    "bash scripts/fetch_models.sh",
    "cargo test",
    "cargo install --path .",
];

/// The tests that run each command the README uses for real, beyond parsing it here.
const COVERED: [(&str, &str); 13] = [
    ("run", "tests/suite/run.rs"),
    (
        "datasets",
        "tests/suite/datasets_home.rs tests/suite/grammar.rs",
    ),
    (
        "ingest",
        "tests/suite/cli.rs tests/suite/episodes.rs tests/suite/integrity.rs",
    ),
    (
        "build",
        "tests/suite/cli.rs tests/suite/deduce.rs tests/suite/run.rs tests/suite/shard.rs",
    ),
    ("episodes", "tests/suite/cli.rs"),
    ("stats", "tests/suite/cli.rs tests/suite/integrity.rs"),
    (
        "score",
        "tests/suite/run.rs tests/suite/shard.rs tests/suite/normalisation.rs",
    ),
    ("report", "tests/suite/run.rs tests/suite/shard.rs"),
    ("audit", "tests/suite/run.rs tests/suite/lm_eval.rs"),
    ("export", "tests/suite/lm_eval.rs tests/suite/run.rs"),
    ("cache", "tests/suite/integrity.rs tests/suite/shard.rs"),
    ("model", "tests/suite/hf_export.rs tests/suite/run.rs"),
    ("generate-text", "tests/suite/generation.rs"),
];

/// Commands only parsed here: `score-text`, whose library functions its tests call directly.
const PARSED_ONLY: [&str; 1] = ["score-text"];

#[test]
fn every_readme_command_parses() {
    let readme = readme();
    let commands = commands(&readme);
    assert!(commands.len() > 40, "{commands:#?}");
    let mut parsed = 0;
    for command in &commands {
        let w = words(command);
        if w.first().map(String::as_str) != Some("deltalogic") {
            assert!(
                OTHER_COMMANDS.contains(&w.join(" ").as_str()),
                "README command `{command}` is neither deltalogic nor a known one"
            );
            continue;
        }
        if let Err(e) = deltalogic::cli::Cli::try_parse_from(&w) {
            panic!("README command `{command}` ({w:?}) does not parse:\n{e}");
        }
        parsed += 1;
    }
    assert!(parsed > 40);
    // What the commands do is run elsewhere: each command the README uses names its tests,
    // and those tests run it.
    for command in &commands {
        let w = words(command);
        if w.first().map(String::as_str) != Some("deltalogic") {
            continue;
        }
        let sub = w.iter().skip(1).find(|x| !x.starts_with('-')).unwrap();
        if PARSED_ONLY.contains(&sub.as_str()) {
            continue;
        }
        let (_, tests) = COVERED
            .iter()
            .find(|(c, _)| c == sub)
            .unwrap_or_else(|| panic!("no test named for `{command}`"));
        let runs = tests.split(' ').any(|file| {
            let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            text.contains(&format!("\"{sub}\""))
        });
        assert!(runs, "none of {tests} runs `{sub}`");
    }
}

/// The two commands, exactly as `.ci/run` and a new user run them.
#[test]
fn readme_gives_the_two_commands() {
    let readme = readme();
    assert!(readme.contains("```sh\ncargo run --release -- run\n```"));
    assert!(readme.contains("```sh\nbash scripts/fetch_models.sh && cargo test\n```"));
    let ci =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    assert!(ci.contains("bash scripts/fetch_models.sh") && ci.contains("cargo test"));
    assert!(deltalogic::cli::Cli::try_parse_from(["deltalogic", "run"]).is_ok());
}

/// Every registered benchmark is listed and built in the README.
#[test]
fn readme_lists_every_benchmark() {
    let readme = readme();
    let commands = commands(&readme);
    assert!(
        readme.contains(&deltalogic::benchmarks::ALL.commands()),
        "the README lists the benchmarks as `{}`",
        deltalogic::benchmarks::ALL.commands()
    );
    for b in deltalogic::benchmarks::ALL.iter() {
        let build = format!("deltalogic build {}", b.command());
        assert!(
            commands.iter().any(|c| c.starts_with(&build)),
            "no `{build}` in the README"
        );
    }
}

#[test]
fn commands_and_words_are_read_as_a_shell_reads_them() {
    let text = "x\n```sh\n# a comment\ndeltalogic a \\\n    --b \"c d\" [--e 5] # f\nbash g && cargo test\n```\n";
    assert_eq!(
        commands(text),
        [
            "deltalogic a     --b \"c d\" [--e 5]",
            "bash g",
            "cargo test"
        ]
    );
    assert_eq!(
        words("X=1 deltalogic a --b \"c # d\" \" e\" [--e 5]"),
        ["deltalogic", "a", "--b", "c # d", " e"]
    );
}
