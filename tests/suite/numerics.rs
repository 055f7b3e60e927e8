//! A score's bits depend only on (model, context tokens, label tokens): not on how the context
//! was split into prefills (where a prefix tree branches), not on the other rows computed with
//! it, not on the thread count and not on the vector unit.
//!
//! The thread pool and the kernel path are fixed per process, so each configuration runs in a
//! child process (this test binary, re-run on `child_report`) that prints the bits it computed;
//! within a child every path must already agree, and across children the bits must be equal.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use deltalogic::model::block::transformer::State;
use deltalogic::model::numerics::kernels;
use deltalogic::model::scorer::{set_threads, Backend, Scorer};

const CHILD_MODEL: &str = "DELTALOGIC_NUMERICS_MODEL";
const CHILD_THREADS: &str = "DELTALOGIC_NUMERICS_THREADS";
const CHILD_INT8: &str = "DELTALOGIC_NUMERICS_INT8";
const MARK: &str = "NUMERICS-BITS ";

/// The requests of a model: the first `n` cases of its golden file, each context cut to its
/// last `chars` characters (at most) to keep the test cheap.
fn requests(golden: &str, n: usize, chars: usize) -> Vec<(String, Vec<String>)> {
    common::golden(golden)
        .cases
        .into_iter()
        .take(n)
        .map(|c| {
            let cut = c
                .context
                .char_indices()
                .rev()
                .nth(chars)
                .map_or(0, |(i, _)| i);
            let context = c.context[cut..].to_string();
            (context, c.labels.into_iter().map(|l| l.label).collect())
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `tokens` prefilled after `state` in pieces of the given sizes (the rest in one last piece).
fn prefill_in(scorer: &Scorer, state: &State, tokens: &[u32], pieces: &[usize]) -> State {
    let mut state = state.clone();
    let mut at = 0;
    for &n in pieces {
        let end = (at + n).min(tokens.len());
        state = scorer.prefill(&state, &tokens[at..end]).unwrap();
        at = end;
    }
    scorer.prefill(&state, &tokens[at..]).unwrap()
}

/// Every request scored along several paths, which must agree to the bit; returns the bits of
/// each label's log-probs, request by request, plus those of a kernel product on awkward data.
fn report(scorer: &Scorer, requests: &[(String, Vec<String>)]) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let empty = scorer.empty_state();
    // Another prompt whose states share nothing with the requests: scoring it in between must
    // not disturb anything (it runs the same kernels with other row counts).
    let other = scorer
        .tokenize("An unrelated prompt of some length, said twice.")
        .unwrap();
    // States of several lengths and the token each goes on with, for the lockstep check below.
    let mut stepping: Vec<(State, u32)> = Vec::new();
    for (context, labels) in requests {
        let (ctx, label_tokens) = scorer.split_tokens(context, labels).unwrap();
        let n = ctx.len();
        let whole = scorer.prefill(&empty, &ctx).unwrap();
        stepping.push((whole.clone(), label_tokens[0][0]));
        stepping.push((scorer.prefill(&empty, &ctx[..n / 2]).unwrap(), ctx[n / 2]));
        // A tree that branches at other depths: a shared head, then the rest in uneven pieces.
        let head = scorer.prefill(&empty, &ctx[..n / 3]).unwrap();
        let branched = prefill_in(scorer, &head, &ctx[n / 3..], &[1, 5, 2]);
        let _ = prefill_in(scorer, &head, &other, &[3]);
        // Past 16 single steps, the steps' chunks are joined into one (`compact`).
        let single_steps = prefill_in(scorer, &empty, &ctx, &vec![1; n.min(40)]);
        let first = scorer.prefill(&empty, &ctx[..1]).unwrap();
        for (l, toks) in label_tokens.iter().enumerate() {
            let want = scorer.score_continuation(&whole, toks).unwrap();
            for (what, state) in [
                ("branched", &branched),
                ("one token at a time", &single_steps),
            ] {
                let got = scorer.score_continuation(state, toks).unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{what} vs one prefill: {context:?}"
                );
            }
            out.push(bits(&want));
            if l > 0 {
                continue;
            }
            // The label run through the blocks as part of the continuation from one token.
            let full: Vec<u32> = ctx[1..].iter().chain(toks).copied().collect();
            let all = scorer.score_continuation(&first, &full).unwrap();
            let tail = &all[all.len() - toks.len()..];
            assert_eq!(
                bits(tail),
                bits(&want),
                "full recompute vs reuse: {context:?}"
            );
        }
    }
    // Generations stepped together (`eval::generate::Lockstep`): each extended state, and the
    // logits after each, have the bits of one state at a time.
    let states: Vec<&State> = stepping.iter().map(|(s, _)| s).collect();
    let tokens: Vec<u32> = stepping.iter().map(|&(_, t)| t).collect();
    let stepped = scorer.step(&states, &tokens).unwrap();
    let stepped_refs: Vec<&State> = stepped.iter().collect();
    let together = scorer.next_logits_each(&stepped_refs).unwrap();
    assert_eq!(together.len(), stepping.len());
    for ((state, token), logits) in stepping.iter().zip(&together) {
        let alone = scorer.prefill(state, &[*token]).unwrap();
        assert_eq!(
            bits(logits),
            bits(&scorer.next_logits(&alone).unwrap()),
            "stepped with {} others vs alone, after {} tokens",
            stepping.len() - 1,
            state.len()
        );
    }
    let k = 100;
    let x: Vec<f32> = (0..7 * k)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
        .collect();
    let w: Vec<f32> = (0..5 * k)
        .map(|i| ((i * 53 % 97) as f32 - 48.0) / 11.0)
        .collect();
    out.push(bits(&kernels::matmul_t(&x, &w, k)));
    out
}

/// Run by the parent tests in a child process (`--ignored --exact`), never on its own.
#[test]
#[ignore = "run by the numerics tests in a child process"]
fn child_report() {
    let model = std::env::var_os(CHILD_MODEL).expect("run by a parent test, which names the model");
    let threads: usize = std::env::var(CHILD_THREADS).unwrap().parse().unwrap();
    set_threads(threads).unwrap();
    let model = PathBuf::from(model);
    let golden = std::env::var("DELTALOGIC_NUMERICS_GOLDEN").unwrap();
    let backend = match std::env::var_os(CHILD_INT8) {
        Some(_) => Backend::Int8,
        None => Backend::Flex,
    };
    let scorer = Scorer::open(&model, backend).unwrap();
    let bits = report(&scorer, &requests(&golden, 3, 200));
    println!("{MARK}{}", serde_json::to_string(&bits).unwrap());
}

/// The report of a child with `threads` threads and the given extra environment.
fn child(model: &Path, golden: &str, threads: usize, env: &[(&str, &str)]) -> Vec<Vec<u32>> {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "numerics::child_report",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_MODEL, model)
        .env(CHILD_THREADS, threads.to_string())
        .env("DELTALOGIC_NUMERICS_GOLDEN", golden)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child ({threads} threads, {env:?}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        // The harness may print "test child_report ... " on the same line first.
        .find_map(|l| l.split_once(MARK).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("child printed no report:\n{stdout}"));
    serde_json::from_str(line).unwrap()
}

pub(super) fn check_configurations(
    model: &Path,
    golden: &str,
    configs: &[(usize, &[(&str, &str)])],
) {
    let (t0, e0) = configs[0];
    let want = child(model, golden, t0, e0);
    for &(threads, env) in &configs[1..] {
        let got = child(model, golden, threads, env);
        assert_eq!(
            got,
            want,
            "{}: {threads} threads with {env:?} differs from {t0} threads with {e0:?}",
            model.display()
        );
    }
}

pub(super) const NO_AVX512: &[(&str, &str)] = &[("DELTALOGIC_NO_AVX512", "1")];
pub(super) const PORTABLE: &[(&str, &str)] = &[("DELTALOGIC_PORTABLE", "1")];
pub(super) const INT8: &[(&str, &str)] = &[(CHILD_INT8, "1")];
pub(super) const INT8_NO_AVX512: &[(&str, &str)] =
    &[(CHILD_INT8, "1"), ("DELTALOGIC_NO_AVX512", "1")];
pub(super) const INT8_PORTABLE: &[(&str, &str)] =
    &[(CHILD_INT8, "1"), ("DELTALOGIC_PORTABLE", "1")];

#[test]
fn tiny_models_give_the_same_bits_on_every_path_thread_count_and_vector_unit() {
    for arch in ["llama", "qwen2", "qwen3", "phi3"] {
        let model = common::root().join("fixtures/hf").join(arch);
        let golden = format!("hf-{arch}.json");
        check_configurations(
            &model,
            &golden,
            &[(2, &[]), (1, &[]), (3, &[]), (2, NO_AVX512), (3, PORTABLE)],
        );
    }
}

/// The real model when fetched (scripts/fetch_models.sh): AVX-512, AVX2 and the portable path.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn smollm2_gives_the_same_bits_on_every_thread_count_and_vector_unit() {
    let model = common::smollm2();
    check_configurations(
        &model,
        "smollm2.json",
        &[(2, &[]), (1, &[]), (3, NO_AVX512), (2, PORTABLE)],
    );
}

/// The integer mode on the quantised file: VNNI, AVX2 and portable integer products.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn smollm2_int8_gives_the_same_bits_on_every_thread_count_and_vector_unit() {
    let model = common::smollm2();
    check_configurations(
        &model,
        "smollm2.json",
        &[(2, INT8), (1, INT8_NO_AVX512), (3, INT8_PORTABLE)],
    );
}

/// Issue 44: a hybrid Qwen3.5 (gated delta-net layers beside attention, `hybrid::tiny_qwen35`),
/// whose recurrent layers' states are kept in the prefix tree like keys and values: f32 on
/// every thread count and vector unit, and the integer mode on its Q8_0 file.
#[test]
fn a_hybrid_model_gives_the_same_bits_on_every_path_thread_count_and_vector_unit() {
    use deltalogic::model::dev::gguf_write::Store as Stored;
    let dir = tempfile::tempdir().unwrap();
    let model = crate::hybrid::tiny_qwen35_file(dir.path(), Stored::F32);
    check_configurations(
        &model,
        "hf-qwen3.json",
        &[(2, &[]), (1, &[]), (3, &[]), (2, NO_AVX512), (3, PORTABLE)],
    );
    let model = crate::hybrid::tiny_qwen35_file(dir.path(), Stored::Q8_0);
    check_configurations(
        &model,
        "hf-qwen3.json",
        &[
            (2, INT8),
            (1, INT8),
            (3, INT8_NO_AVX512),
            (2, INT8_PORTABLE),
        ],
    );
}
