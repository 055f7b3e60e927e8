//! Every numeric flag is bounded where it is parsed, the same way on every command, with the
//! allowed range in the message (issue 25, case 6); random argument vectors through the parser
//! and the benchmarks' own option parsers never panic.

use clap::Parser;
use deltalogic::cli::Cli;
use deltalogic::rng::Rng;

fn max_threads() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64) * 4
}

/// (command words, flag, lowest, highest): every numeric flag of every command.
fn numeric_flags() -> Vec<(Vec<&'static str>, &'static str, u64, u64)> {
    let t = max_threads();
    let size = 1_000_000;
    let seed = u64::MAX;
    vec![
        (
            vec!["score", "--model", "m", "--set", "s"],
            "--threads",
            1,
            t,
        ),
        (vec!["run"], "--threads", 1, t),
        (vec!["run"], "--seed", 0, seed),
        (
            vec![
                "score-text",
                "--model",
                "m",
                "--context",
                "c",
                "--labels",
                " x",
            ],
            "--threads",
            1,
            t,
        ),
        (
            vec!["generate-text", "--model", "m", "--prompt", "p"],
            "--threads",
            1,
            t,
        ),
        (
            vec!["generate-text", "--model", "m", "--prompt", "p"],
            "--max-tokens",
            1,
            1 << 20,
        ),
        (vec!["bench", "--model", "m"], "--threads", 1, t),
        (vec!["bench", "--model", "m"], "--reps", 1, 1_000),
        (vec!["bench", "--model", "m"], "--decode", 1, 1 << 20),
        (vec!["bench", "--model", "m"], "--tokens", 1, 1 << 20),
        (vec!["audit", "abcdef"], "--verify", 1, 1_000_000),
        (
            vec!["score", "--model", "m", "--set", "s"],
            "--concurrency",
            1,
            64,
        ),
        // A served model's timeouts: global flags, in seconds.
        (vec!["stats"], "--connect-timeout", 1, 86_400),
        (vec!["stats"], "--first-byte-timeout", 1, 86_400),
        (vec!["stats"], "--timeout", 1, 86_400),
        (vec!["cache", "merge", "f"], "--verify-sample", 0, 1_000_000),
        (vec!["cache", "verify"], "--recompute", 1, 1_000_000),
        (
            vec!["datasets", "check", "--dataset", "folio"],
            "--list",
            0,
            size,
        ),
    ]
}

/// (benchmark, flag, lowest, highest): the numeric build options, parsed by each benchmark.
const BUILD_FLAGS: [(&str, &str, u64, u64); 12] = [
    ("deltalogic", "--per-type", 1, 1_000_000),
    ("deltalogic", "--seed", 0, u64::MAX),
    ("robustlr", "--per-set", 1, 1_000_000),
    ("robustlr", "--seed", 0, u64::MAX),
    ("clomo", "--per-type", 1, 1_000_000),
    ("clomo", "--seed", 0, u64::MAX),
    ("beliefr", "--per-cell", 1, 1_000_000),
    ("beliefr", "--seed", 0, u64::MAX),
    ("deduce", "--limit", 1, 1_000_000),
    ("deduce", "--perturb", 0, 1_000),
    ("deduce", "--hops", 1, 12),
    ("deduce", "--seed", 0, u64::MAX),
];

fn parse(words: &[String]) -> Result<Cli, String> {
    let argv = std::iter::once("deltalogic".to_string()).chain(words.iter().cloned());
    Cli::try_parse_from(argv).map_err(|e| e.to_string())
}

/// Values outside `lo..=hi`, and words that are no number.
fn refused(lo: u64, hi: u64) -> Vec<String> {
    let mut out = vec!["x".into(), "".into(), "1.5".into(), "-1".into()];
    if lo > 0 {
        out.push((lo - 1).to_string());
    }
    out.push(if hi == u64::MAX {
        "18446744073709551616".into()
    } else {
        (hi + 1).to_string()
    });
    out.push("99999999999999999999999".into());
    out
}

/// The message states the range, whichever way the flag's parser words it.
fn names_range(msg: &str, lo: u64, hi: u64) -> bool {
    msg.contains(&format!("{lo}..={hi}")) || msg.contains(&format!("{lo} to {hi}"))
}

#[test]
fn every_numeric_flag_refuses_out_of_range_values_naming_the_range() {
    for (words, flag, lo, hi) in numeric_flags() {
        for ok in [lo, hi] {
            let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
            w.extend([flag.to_string(), ok.to_string()]);
            assert!(parse(&w).is_ok(), "{w:?}: {}", parse(&w).err().unwrap());
        }
        for bad in refused(lo, hi) {
            // `--flag=VALUE`, so that clap takes `-1` as the value, not as a flag.
            let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
            w.push(format!("{flag}={bad}"));
            let msg = parse(&w)
                .err()
                .unwrap_or_else(|| panic!("{w:?} was accepted"));
            assert!(names_range(&msg, lo, hi), "{w:?}: {msg}");
        }
    }
    // Shards: N is bounded, so `0/99999999999` no longer allocates an entry per part.
    for bad in ["0/99999999999", "0/100001", "3/2", "0/0", "a/b", "1"] {
        let w: Vec<String> = ["score", "--model", "m", "--set", "s", "--shard", bad]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let msg = parse(&w).err().unwrap();
        assert!(msg.contains("1 to 100000"), "{bad}: {msg}");
    }
}

#[test]
fn every_build_option_refuses_out_of_range_values_naming_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    for (benchmark, flag, lo, hi) in BUILD_FLAGS {
        for bad in refused(lo, hi) {
            let value = format!("{flag}={bad}");
            let argv = [
                "deltalogic",
                "--store",
                store.to_str().unwrap(),
                "build",
                benchmark,
                &value,
            ];
            // Refused by the parser (build options are parsed with the command line), or when
            // the build runs.
            let msg = match Cli::try_parse_from(argv) {
                Err(e) => e.to_string(),
                Ok(cli) => match deltalogic::cli::run(cli) {
                    Ok(()) => panic!("{argv:?} was accepted"),
                    Err(e) => format!("{e:#}"),
                },
            };
            assert!(names_range(&msg, lo, hi), "{argv:?}: {msg}");
        }
    }
}

/// Random argument vectors: any command's words, its flags and others, numbers in and out of
/// range, shards, junk. Parsing never panics; a build whose options hold an out-of-range number
/// is refused by its benchmark's parser before any work, never a panic.
#[test]
fn random_argument_vectors_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let mut flags: Vec<&str> = numeric_flags().iter().map(|(_, f, _, _)| *f).collect();
    flags.extend(BUILD_FLAGS.iter().map(|(_, f, _, _)| *f));
    flags.extend([
        "--model",
        "--set",
        "--norm",
        "--shard",
        "--template",
        "--json",
        "--no-verify",
        "-o",
        "--from",
        "--name",
        "--format",
        "--force",
        "--labels",
        "--",
    ]);
    let values = [
        "0",
        "1",
        "2",
        "8",
        "-1",
        "-0",
        "+3",
        " 4",
        "1e3",
        "0x10",
        "",
        "nan",
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999",
        "1000000",
        "1000001",
        "0/4",
        "3/2",
        "0/99999999999",
        "0/0",
        "99999/100000",
        "/",
        "mean",
        "all",
        "x",
        "plain",
        "generated",
    ];
    let commands: [&[&str]; 16] = [
        &["score"],
        &["run"],
        &["score-text"],
        &["generate-text"],
        &["bench"],
        &["audit"],
        &["cache", "merge"],
        &["cache", "verify"],
        &["cache", "export"],
        &["datasets", "check"],
        &["report"],
        &["build", "deltalogic"],
        &["build", "robustlr"],
        &["build", "clomo"],
        &["build", "beliefr"],
        &["build", "deduce"],
    ];
    let mut rng = Rng::derive(25, "cli bounds");
    let (mut parsed, mut refused_builds) = (0, 0);
    for case in 0..3000 {
        let mut words: Vec<String> = rng
            .choose(&commands)
            .iter()
            .map(|s| s.to_string())
            .collect();
        for _ in 0..rng.below(7) {
            match rng.below(4) {
                0 => words.push(rng.choose(&values).to_string()),
                _ => {
                    words.push(rng.choose(&flags).to_string());
                    words.push(rng.choose(&values).to_string());
                }
            }
        }
        let outcome = std::panic::catch_unwind(|| parse(&words));
        let Ok(result) = outcome else {
            panic!("case {case}: parsing {words:?} panicked");
        };
        // A build whose option holds an out-of-range number must be refused: by the parser
        // (build options are parsed with the command line) or, if it parses, when it runs.
        let bad = (words[0] == "build").then(|| {
            words.windows(2).find(|w| {
                BUILD_FLAGS.iter().any(|(b, f, lo, hi)| {
                    *b == words[1]
                        && *f == w[0]
                        && w[1]
                            .parse::<u128>()
                            .is_ok_and(|v| v < *lo as u128 || v > *hi as u128)
                })
            })
        });
        let Ok(_) = result else {
            refused_builds += usize::from(matches!(bad, Some(Some(_))));
            continue;
        };
        parsed += 1;
        let Some(Some(bad)) = bad else { continue };
        let bad = bad.to_vec();
        let mut argv = vec!["deltalogic".to_string(), "--store".into()];
        argv.push(store.to_str().unwrap().into());
        argv.extend(words.iter().cloned());
        let cli = Cli::try_parse_from(&argv).unwrap();
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deltalogic::cli::run(cli)));
        match outcome {
            Err(_) => panic!("case {case}: {argv:?} panicked"),
            Ok(Ok(())) => panic!("case {case}: {argv:?} accepted {bad:?}"),
            Ok(Err(_)) => refused_builds += 1,
        }
    }
    eprintln!("3000 vectors: {parsed} parsed, {refused_builds} builds refused by their options");
    assert!(
        parsed > 100 && refused_builds > 10,
        "{parsed} {refused_builds}"
    );
}
