//! Greedy generation against llama.cpp's (`tests/golden/generation_smollm2_*.json`, made by
//! scripts/golden_generation.sh): 22 prompts from the shared datasets, 64 tokens each, decoded by
//! the runner's own greedy loop (`eval::generate::greedy`: `next_logits`, argmax with ties to the
//! lowest id, `prefill` of that token).
//!
//! * f32 mode against llama.cpp on the same weights dequantised to f32: every token equal.
//! * int8 mode against llama.cpp on the Q4_1 file: both quantise activations to 8 bits, but not
//!   identically (issue 11 item 4), so a near-tie can flip and the texts part ways from there.
//!   The mean common-prefix length is printed and held above a measured floor.

use std::path::PathBuf;

use deltalogic::benchmarks::Decoding;
use deltalogic::eval::generate::{greedy, Lockstep};
use deltalogic::eval::models::Loaded;
use deltalogic::eval::{Generation, Prefill};
use deltalogic::model::scorer::{set_threads, Backend, Scorer};
use serde::Deserialize;

/// Largest |log-prob difference| of a generated token in f32 mode: llama.cpp's f32 arithmetic
/// orders its sums differently, which moves log-probs by ~1e-5 (the scoring gate's figure).
const F32_LOGPROB_TOL: f32 = 1e-3;

/// Mean common-prefix length (tokens of 64) of int8 against llama.cpp on the Q4_1 file below
/// which the test fails. The figure is deterministic (both sides' bits are fixed), so the margin
/// is for deliberate changes to the integer path that move near-ties either way, not for noise:
/// measured 36.5 (7 of 22 sequences equal) at scorer version 2, 34.6 (7 of 22) at
/// `integer-scorer-4` (repacked kernels, our own `exp`), 33.5 (5 of 22) at `integer-scorer-5`
/// (attention scores as fma chains). A broken integer kernel parts from
/// llama.cpp within a few tokens on every prompt.
const INT8_MEAN_PREFIX_FLOOR: f64 = 30.0;

#[derive(Deserialize)]
struct Golden {
    max_tokens: u32,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    prompt: String,
    prompt_tokens: Vec<u32>,
    tokens: Vec<u32>,
    logprobs: Vec<f32>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn golden(name: &str) -> Golden {
    let path = root().join("tests/golden").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// SmolLM2 on `backend`.
fn smollm2(backend: Backend) -> Loaded {
    set_threads(2).expect("thread pool");
    let path = crate::common::smollm2();
    let scorer = Scorer::open(&path, backend).unwrap_or_else(|e| panic!("{e}"));
    Loaded::new(scorer, backend)
}

/// Our greedy decoding of each case's prompt, after checking our prompt tokens are llama.cpp's.
fn generate_all(model: &Loaded, golden: &Golden) -> Vec<(Vec<u32>, Vec<f32>)> {
    let decoding = Decoding {
        max_tokens: golden.max_tokens,
        stop: Vec::new(),
    };
    golden
        .cases
        .iter()
        .map(|case| {
            // The golden prompts are chat-template text that llama.cpp tokenized with its control
            // tokens parsed: ours reads them only inside a template's marked markup.
            let tokens = model
                .tokenize(&deltalogic::model::tokenize::markup(&case.prompt))
                .unwrap();
            assert_eq!(
                tokens, case.prompt_tokens,
                "prompt tokens of {:?}",
                case.prompt
            );
            let state = model.prefill(&model.empty_state(), &tokens).unwrap();
            let out = greedy(model, &state, &decoding, true).unwrap();
            (out.tokens, out.logprobs)
        })
        .collect()
}

/// The same decodings stepped together (`Lockstep`), the prompts joining a few steps apart and
/// every third one also stopping at a string, must give each prompt's bits alone.
fn check_stepped_together(model: &Loaded, golden: &Golden, alone: &[(Vec<u32>, Vec<f32>)]) {
    let plain = Decoding {
        max_tokens: golden.max_tokens,
        stop: Vec::new(),
    };
    let stopping = Decoding {
        max_tokens: golden.max_tokens,
        stop: vec![".".to_string()],
    };
    let mut lockstep = Lockstep::new(model, true);
    let mut ended = Vec::new();
    for (i, case) in golden.cases.iter().enumerate() {
        let tokens = model
            .tokenize(&deltalogic::model::tokenize::markup(&case.prompt))
            .unwrap();
        let state = model.prefill(&model.empty_state(), &tokens).unwrap();
        let decoding = if i % 3 == 2 { &stopping } else { &plain };
        lockstep.join(i, state, decoding).unwrap();
        for _ in 0..i % 4 {
            ended.extend(lockstep.step().unwrap());
        }
    }
    while !lockstep.is_empty() {
        ended.extend(lockstep.step().unwrap());
    }
    assert_eq!(ended.len(), golden.cases.len());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for (i, g) in ended {
        let (tokens, logprobs) = &alone[i];
        let n = g.tokens.len();
        if i % 3 != 2 {
            assert_eq!(
                n,
                tokens.len(),
                "prompt {i}: tokens stepped together vs alone"
            );
        }
        assert_eq!(
            g.tokens[..],
            tokens[..n],
            "prompt {i}: tokens stepped together vs alone"
        );
        assert_eq!(
            bits(&g.logprobs),
            bits(&logprobs[..n]),
            "prompt {i}: log-prob bits"
        );
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn f32_generation_equals_llama_cpp_on_f32_weights() {
    let model = smollm2(Backend::Flex);
    let golden = golden("generation_smollm2_f32.json");
    assert!(
        golden.cases.len() >= 20,
        "the golden needs at least 20 prompts"
    );
    let alone = generate_all(&model, &golden);
    check_stepped_together(&model, &golden, &alone);
    let mut max = 0f32;
    for (case, (tokens, logprobs)) in golden.cases.iter().zip(alone) {
        assert_eq!(
            tokens,
            case.tokens,
            "greedy tokens of {:?} part from llama.cpp's after {} tokens",
            case.prompt,
            common_prefix(&tokens, &case.tokens)
        );
        for (a, b) in logprobs.iter().zip(&case.logprobs) {
            max = max.max((a - b).abs());
        }
    }
    eprintln!("f32 greedy vs llama.cpp: all tokens equal; max |dlogprob| {max:.2e}");
    assert!(max <= F32_LOGPROB_TOL, "max |dlogprob| {max}");
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn int8_generation_follows_llama_cpp_on_the_q4_1_file() {
    let model = smollm2(Backend::Int8);
    let golden = golden("generation_smollm2_q4_1.json");
    let ours = generate_all(&model, &golden);
    check_stepped_together(&model, &golden, &ours);
    let prefixes: Vec<usize> = golden
        .cases
        .iter()
        .zip(&ours)
        .map(|(case, (tokens, _))| common_prefix(tokens, &case.tokens))
        .collect();
    let whole = golden
        .cases
        .iter()
        .zip(&ours)
        .filter(|(case, (tokens, _))| *tokens == case.tokens)
        .count();
    let mean = prefixes.iter().sum::<usize>() as f64 / prefixes.len() as f64;
    eprintln!(
        "int8 greedy vs llama.cpp (Q4_1 file): mean common prefix {mean:.1} tokens of {}, \
         {whole}/{} sequences equal; per prompt {prefixes:?}",
        golden.max_tokens,
        golden.cases.len()
    );
    assert!(
        mean >= INT8_MEAN_PREFIX_FLOOR,
        "mean common prefix {mean:.1} below the measured floor {INT8_MEAN_PREFIX_FLOOR}"
    );
}
