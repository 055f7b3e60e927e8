//! The integer numerics mode against llama.cpp on the same quantised file (the golden
//! `fixtures/golden/smollm2-llamacpp.json`, made by scripts/llamacpp_golden.py): both quantise
//! activations to 8 bits per block, so their scores should nearly coincide.

use std::path::PathBuf;

use deltalogic::model::scorer::{set_threads, Backend, Scorer};
use serde::Deserialize;

#[derive(Deserialize)]
struct Golden {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    context: String,
    labels: Vec<GoldenLabel>,
}

#[derive(Deserialize)]
struct GoldenLabel {
    label: String,
    tokens: Vec<u32>,
    logprobs: Vec<f32>,
}

fn best(sums: &[f32]) -> usize {
    (0..sums.len()).fold(0, |b, i| if sums[i] > sums[b] { i } else { b })
}

/// Not met: the integer mode lands about as far from llama.cpp (mean |dlogprob| 0.12, best
/// label 45/50 at `integer-scorer-4`) as the f32 mode does. Both quantise activations to 8 bits,
/// but one ulp of difference upstream (llama.cpp's RoPE angles and approximate `expf`, summed in
/// its ISA's order) moves a value across a rounding step of the 8-bit grid, and that spreads.
#[test]
#[ignore = "fails today: mean |dlogprob| 0.12 against the 0.01 target"]
fn smollm2_int8_agrees_with_llama_cpp_on_the_q4_1_file() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir =
        std::env::var_os("DELTALOGIC_MODELS").map_or_else(|| root.join("models"), PathBuf::from);
    let model = dir.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if !model.exists() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{} is missing under CI", model.display());
        }
        eprintln!("SKIP: {} not found", model.display());
        return;
    }
    set_threads(2).unwrap();
    let scorer = Scorer::open(&model, Backend::Int8).unwrap();
    let path = root.join("fixtures/golden/smollm2-llamacpp.json");
    let golden: Golden = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (mut agree, mut sum, mut n, mut max) = (0, 0f64, 0, 0f32);
    for case in &golden.cases {
        let labels: Vec<String> = case.labels.iter().map(|l| l.label.clone()).collect();
        let ours = scorer.score(&case.context, &labels).unwrap();
        for (want, got) in case.labels.iter().zip(&ours) {
            assert_eq!(got.tokens, want.tokens, "tokens of {:?}", want.label);
            for (a, b) in got.logprobs.iter().zip(&want.logprobs) {
                sum += f64::from((a - b).abs());
                max = max.max((a - b).abs());
                n += 1;
            }
        }
        let theirs: Vec<f32> = case
            .labels
            .iter()
            .map(|l| l.logprobs.iter().sum())
            .collect();
        let mine: Vec<f32> = ours.iter().map(|s| s.sum()).collect();
        agree += usize::from(best(&mine) == best(&theirs));
    }
    let cases = golden.cases.len();
    let mean = sum / n as f64;
    eprintln!(
        "SmolLM2 int8 vs llama.cpp (Q4_1 file): best label {agree}/{cases}, mean |dlogprob| \
         {mean:.4}, max {max:.4}"
    );
    assert!(
        agree as f64 >= 0.99 * cases as f64,
        "best label agrees on {agree}/{cases}"
    );
    assert!(mean <= 0.01, "mean |dlogprob| {mean}");
}
