//! Speculative greedy decoding (`eval::generate::Lockstep` drafting from the prompt and the text so
//! far) against plain greedy decoding on the real models: the same tokens, the same log-prob bits,
//! the same text and stop, so the same generation records under the same keys. CLoMo's rewriting
//! prompts (in the models' chat markup, with and without a stop string) and DeduCE's continuation
//! prompts (its own stop, a blank line), in the lockstep of 16 and alone, in both engine modes, on
//! 1 and 2 threads and on the portable vector unit.
//!
//! The thread pool and the kernel path are fixed per process, so each configuration runs in a
//! child process (this test binary, re-run on `child_generations`): within a child, speculative
//! decoding must equal plain decoding; across children of one engine mode, the outputs must be
//! equal too.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use deltalogic::benchmarks::clomo::build::read_split;
use deltalogic::benchmarks::clomo::prompts::Setting;
use deltalogic::benchmarks::deduce::{self, synthetic};
use deltalogic::benchmarks::{self, Decoding};
use deltalogic::eval::generate::{greedy_after, Drafts, Generated, Lockstep};
use deltalogic::eval::models::Loaded;
use deltalogic::eval::records::GenerationRecord;
use deltalogic::eval::{self, Generation, Prefill, Quiet};
use deltalogic::model::scorer::{set_threads, Backend, Scorer};
use deltalogic::model::tokenize::markup;
use deltalogic::store::Store;
use serde::{Deserialize, Serialize};

const CHILD_MODEL: &str = "DELTALOGIC_SPECULATIVE_MODEL";
const CHILD_THREADS: &str = "DELTALOGIC_SPECULATIVE_THREADS";
const CHILD_INT8: &str = "DELTALOGIC_SPECULATIVE_INT8";
const CHILD_PROMPTS: &str = "DELTALOGIC_SPECULATIVE_PROMPTS";
const MARK: &str = "SPECULATIVE-REPORT ";

/// Tokens per generation at most: long enough for drafts to be accepted, rejected and cut by
/// stops, short enough to keep the test cheap (SmolLM2 int8 on 2 threads drafted 1,811 tokens
/// and took 392 over 64 prompts alone).
const MAX_TOKENS: u32 = 40;

/// The generations of a child: each one's tokens, log-prob bits, text and stop.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Out {
    tokens: Vec<u32>,
    logprob_bits: Vec<u32>,
    text: String,
    stop: String,
}

impl From<&Generated> for Out {
    fn from(g: &Generated) -> Out {
        Out {
            tokens: g.tokens.clone(),
            logprob_bits: g.logprobs.iter().map(|x| x.to_bits()).collect(),
            text: g.text.clone(),
            stop: format!("{:?}", g.stop),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Report {
    outs: Vec<Out>,
    /// Speculation in the lockstep of 16, and alone (one generation at a time).
    together: (u64, u64, u64, u64),
    alone: (u64, u64, u64, u64),
}

fn counts(d: Drafts) -> (u64, u64, u64, u64) {
    (d.passes, d.tokens, d.drafted, d.accepted)
}

/// `n` prompts with their decodings: CLoMo's zero-shot rewriting requests in ChatML (what both
/// models' templates write), every other one stopped at its first sentence, and DeduCE's
/// synthetic chains of 2 to 6 hops with the first step given, under DeduCE's own stop.
fn prompts(n: usize) -> Vec<(String, Decoding)> {
    let items = read_split(&common::dataset("clomo/data"), "test").unwrap();
    let clomo = items.iter().step_by(3).enumerate().map(|(i, item)| {
        let text = format!(
            "<|im_start|>system\n{}<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n\
             <|im_start|>assistant\n",
            item.instruction,
            item.input(Setting::Zero)
        );
        let stop = match i % 2 {
            0 => Vec::new(),
            _ => vec![".".to_string()],
        };
        (
            markup(&text),
            Decoding {
                max_tokens: MAX_TOKENS,
                stop,
            },
        )
    });
    let deduce = (0..).map(|i| {
        let p = synthetic::problem(7, 2 + i % 5, i).unwrap();
        (
            deduce::prompt(&p, 1),
            Decoding {
                max_tokens: MAX_TOKENS,
                stop: vec!["\n\n".to_string()],
            },
        )
    });
    // Alternately, so any prefix of the list holds both.
    clomo
        .zip(deduce)
        .flat_map(|(a, b)| [a, b])
        .take(n)
        .collect()
}

/// Every prompt decoded in a lockstep of at most 16 (as the runner joins them), in order.
fn lockstep(
    model: &Loaded,
    states: &[(Vec<u32>, deltalogic::model::block::transformer::State)],
    decodings: &[&Decoding],
    speculate: bool,
) -> (Vec<Generated>, Drafts) {
    let mut step = Lockstep::new(model, speculate);
    let mut ended = Vec::new();
    for (i, ((tokens, state), decoding)) in states.iter().zip(decodings).enumerate() {
        step.join_after(i, state.clone(), tokens, decoding).unwrap();
        while step.len() >= eval::LOCKSTEP {
            ended.extend(step.step().unwrap());
        }
    }
    while !step.is_empty() {
        ended.extend(step.step().unwrap());
    }
    ended.sort_by_key(|(i, _)| *i);
    (ended.into_iter().map(|(_, g)| g).collect(), step.drafts())
}

/// Run by the parent tests in a child process (`--ignored --exact`), never on its own.
#[test]
#[ignore = "run by the speculative tests in a child process"]
fn child_generations() {
    let model = std::env::var_os(CHILD_MODEL).expect("run by a parent test, which names the model");
    let threads: usize = std::env::var(CHILD_THREADS).unwrap().parse().unwrap();
    let n: usize = std::env::var(CHILD_PROMPTS).unwrap().parse().unwrap();
    set_threads(threads).unwrap();
    let backend = match std::env::var_os(CHILD_INT8) {
        Some(_) => Backend::Int8,
        None => Backend::Flex,
    };
    let model = Loaded::new(Scorer::open(Path::new(&model), backend).unwrap(), backend);
    let prompts = prompts(n);
    let states: Vec<_> = prompts
        .iter()
        .map(|(text, _)| {
            let tokens = model.tokenize(text).unwrap();
            let state = model.prefill(&model.empty_state(), &tokens).unwrap();
            (tokens, state)
        })
        .collect();
    let decodings: Vec<&Decoding> = prompts.iter().map(|(_, d)| d).collect();
    let (plain, _) = lockstep(&model, &states, &decodings, false);
    let (together, drafts) = lockstep(&model, &states, &decodings, true);
    // Alone: every third prompt, one generation at a time, each in its own lockstep (their
    // counts summed).
    let mut alone = Drafts::default();
    for (i, ((tokens, state), decoding)) in states.iter().zip(&decodings).enumerate() {
        if i % 3 != 0 {
            continue;
        }
        let mut one = Lockstep::new(&model, true);
        one.join_after(i, state.clone(), tokens, decoding).unwrap();
        let mut got = Vec::new();
        while got.is_empty() {
            got = one.step().unwrap();
        }
        assert_eq!(
            Out::from(&got[0].1),
            Out::from(&plain[i]),
            "prompt {i} alone"
        );
        let d = one.drafts();
        alone.passes += d.passes;
        alone.tokens += d.tokens;
        alone.drafted += d.drafted;
        alone.accepted += d.accepted;
        // `greedy_after` (what `regenerate` runs) is that lockstep of one.
        if i == 0 {
            let g = greedy_after(&model, state, tokens, decoding, true).unwrap();
            assert_eq!(g, got[0].1, "prompt {i}");
        }
    }
    for (i, (p, s)) in plain.iter().zip(&together).enumerate() {
        assert_eq!(Out::from(s), Out::from(p), "prompt {i} in the lockstep");
        assert_eq!(
            s, p,
            "prompt {i}: the whole output, forward tokens included"
        );
    }
    let report = Report {
        outs: plain.iter().map(Out::from).collect(),
        together: counts(drafts),
        alone: counts(alone),
    };
    println!("{MARK}{}", serde_json::to_string(&report).unwrap());
}

/// The report of a child (`threads`, `int8`, the extra environment) over `n` prompts.
fn child(model: &Path, n: usize, threads: usize, int8: bool, env: &[(&str, &str)]) -> Report {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        "speculative::child_generations",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(CHILD_MODEL, model)
    .env(CHILD_THREADS, threads.to_string())
    .env(CHILD_PROMPTS, n.to_string())
    .envs(env.iter().copied());
    if int8 {
        cmd.env(CHILD_INT8, "1");
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child ({threads} threads, int8 {int8}, {env:?}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once(MARK).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("child printed no report:\n{stdout}"));
    serde_json::from_str(line).unwrap()
}

const PORTABLE: &[(&str, &str)] = &[("DELTALOGIC_PORTABLE", "1")];

/// A child's configuration: prompts, threads, int8, extra environment.
type Config<'a> = (usize, usize, bool, &'a [(&'a str, &'a str)]);

/// Each configuration `(prompts, threads, int8, env)` in a child; the children of one engine mode
/// must give the same outputs on the prompts they share, and speculation must have taken drafts.
fn check(model: &Path, configs: &[Config]) {
    let mut first: [Option<Report>; 2] = [None, None];
    let mut generations = 0;
    for &(n, threads, int8, env) in configs {
        let r = child(model, n, threads, int8, env);
        generations += r.outs.len();
        let what = format!(
            "{}: {threads} threads, int8 {int8}, {env:?}",
            model.display()
        );
        let (passes, tokens, drafted, accepted) = r.alone;
        eprintln!(
            "{what}: {} generations; alone {tokens} tokens in {passes} passes, {accepted} of \
             {drafted} drafts taken; together {:?}",
            r.outs.len(),
            r.together
        );
        // Drafts were taken (speculation ran, not only its off switch) and some missed.
        assert!(accepted > 0 && accepted < drafted, "{what}: {:?}", r.alone);
        assert!(tokens > passes, "{what}: {:?}", r.alone);
        let stops: std::collections::BTreeSet<&str> =
            r.outs.iter().map(|o| o.stop.as_str()).collect();
        assert!(stops.len() >= 2, "{what}: stops {stops:?}");
        match &first[usize::from(int8)] {
            None => first[usize::from(int8)] = Some(r),
            Some(f) => {
                let shared = f.outs.len().min(r.outs.len());
                assert_eq!(f.outs[..shared], r.outs[..shared], "{what}");
            }
        }
    }
    eprintln!("{}: {generations} generations", model.display());
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    dataset_missing = "clomo",
    ignore = "needs the dataset clomo (deltalogic datasets where)"
)]
fn smollm2_speculative_decoding_gives_plain_decodings_bits() {
    check(
        &common::smollm2(),
        &[
            (40, 2, true, &[]),
            (16, 1, true, &[]),
            (8, 2, true, PORTABLE),
            (12, 2, false, &[]),
            (6, 1, false, PORTABLE),
        ],
    );
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    dataset_missing = "clomo",
    ignore = "needs the dataset clomo (deltalogic datasets where)"
)]
fn qwen25_speculative_decoding_gives_plain_decodings_bits() {
    check(
        &qwen(),
        &[(16, 2, true, &[]), (6, 1, true, &[]), (6, 2, false, &[])],
    );
}

fn qwen() -> PathBuf {
    common::fetched_model("Qwen2.5-Coder-0.5B-Instruct.gguf")
}

/// Through the runner: DeduCE's synthetic set generated by SmolLM2 with speculation and without,
/// into two stores, gives the same generation records (all but the compute times) under the
/// same keys.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn the_runner_stores_the_same_generation_records_with_and_without_speculation() {
    let records = |speculate: bool| {
        let dir = tempfile::tempdir().unwrap();
        let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
        let b = benchmarks::ALL.by_command("deduce").unwrap();
        let words: Vec<String> = ["--from", "synthetic", "--limit", "6", "--hops", "4"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        b.build(&reg, &words).unwrap();
        let (set_id, stored) = common::set(&reg, "deduce-synthetic");
        let benchmark = benchmarks::ALL.named(&stored.benchmark).unwrap();
        eval::run(
            &reg,
            &eval::Run {
                benchmark,
                set_id,
                set: &stored,
                models: eval::Participants {
                    subject: common::model_id("smollm2"),
                    info: &common::NoChat,
                    judge: None,
                },
                template: benchmark.templates()[0],
                norms: vec![eval::Normalisation::Mean],
                shard: None,
                execution: eval::Execution {
                    speculate,
                    ..Default::default()
                },
            },
            |_| {
                let scorer = Scorer::open(&common::smollm2(), Backend::Int8)?;
                Ok(eval::Engine::Local(Loaded::new(scorer, Backend::Int8)))
            },
            &mut Quiet,
        )
        .unwrap();
        reg.all::<GenerationRecord>()
            .unwrap()
            .into_iter()
            .map(|(id, mut g)| {
                g.compute_micros = 0;
                g.computed_at = 0;
                (id, g)
            })
            .collect::<Vec<_>>()
    };
    let speculative = records(true);
    let plain = records(false);
    assert!(speculative.len() >= 12, "{} generations", speculative.len());
    assert_eq!(speculative.len(), plain.len());
    for ((ka, a), (kb, b)) in speculative.iter().zip(&plain) {
        assert_eq!(ka, kb);
        let bits =
            |g: &GenerationRecord| g.logprobs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(a), bits(b), "{}", ka.short());
        assert_eq!(a, b, "{}", ka.short());
    }
}
