//! The integer numerics mode against llama.cpp on the same quantised files. The goldens come
//! from scripts/llamacpp_golden.py run with two builds of the same llama.cpp source
//! (scripts/llamacpp.sh): the native one (AVX-512 on the machine that made them),
//! `<model>-llamacpp.json`, and one limited to AVX2, `<model>-llamacpp-avx2.json`.
//!
//! Both engines quantise activations to 8 bits per block, and on these small models that makes
//! the label log-probs chaotic in their low bits: one ulp of difference upstream moves a value
//! across a step of the 8-bit grid, and the change spreads through the layers (perturbing our
//! activations by 1.2e-7 relative, about one ulp, before they are quantised moves SmolLM2's
//! log-probs by 0.13). A fixed distance such as 0.01 from llama.cpp is therefore out of reach
//! for any engine that does not repeat llama.cpp's own float operations in its own order.
//!
//! Two yardsticks instead, on the same quantised file:
//! - **Accuracy** (the gate): the integer mode's distance from the exact product of the file's
//!   weights — our f32 mode on the same file, which agrees with llama.cpp's f32 path to 5e-5 on
//!   every family's f32 twin (Gemma's to 2e-3: llama.cpp's f16 GELU table) — is at most `ACCURACY_FACTOR` times llama.cpp's native build's
//!   distance from it. Both engines' integer modes are measured from the same point, so this
//!   asks that ours rounds no worse than llama.cpp's; a wrong kernel (a block scale, a sign, a
//!   min term) or a coarser activation quantiser lands far outside.
//! - **llama.cpp's own spread**: the distance between its native build (AVX-512 on the machine
//!   that made the goldens) and its AVX2 build; ours to the native build within `SPREAD_FACTOR`
//!   times it. That measures how far two builds drift that share every activation rounding but
//!   their f32 kernels' width: on the real models here the spread is wide (SmolLM2 0.107) and
//!   ours is within it, but on most of the random-weight family files (`families_llamacpp`)
//!   the two builds are as far from the exact product as ours (0.11 on Qwen3's file) and yet
//!   a tenth of that from each other (0.009): their errors are one error. An engine with its
//!   own order of float operations makes its own, and lands outside; those files are listed
//!   there, by name.
//!
//! The real Gemma 3 270M's goldens come from scripts/gemma3_real_goldens.py (the AVX2 one with
//! `--llamacpp-only`).

use crate::common::{self, golden, Golden};

use std::path::Path;

use deltalogic::model::scorer::{set_threads, Backend, Scorer};

/// How far our integer mode may be from llama.cpp's native build, as a multiple of the distance
/// between llama.cpp's native and AVX2 builds.
pub(super) const SPREAD_FACTOR: f64 = 1.5;
/// How far our integer mode may be from the exact product, as a multiple of llama.cpp's native
/// build's distance from it. Measured on the 16 quantised family files (2026-11-28): 0.85 to
/// 1.07 on the mean |Δ log-prob|, 0.95 to 1.04 on the mean |Δ logit| (docs/models.md).
pub(super) const ACCURACY_FACTOR: f64 = 1.25;

/// Each case's per-label log-probs.
type Scores = Vec<Vec<Vec<f32>>>;

fn of(golden: &Golden) -> Scores {
    golden
        .cases
        .iter()
        .map(|c| c.labels.iter().map(|l| l.logprobs.clone()).collect())
        .collect()
}

/// Mean |Δ log-prob| over every label token, and the cases whose best label (by sum) agrees.
fn distance(a: &Scores, b: &Scores) -> (f64, usize) {
    let best = |labels: &[Vec<f32>]| {
        let sums: Vec<f32> = labels.iter().map(|l| l.iter().sum()).collect();
        (0..sums.len()).fold(0, |b, i| if sums[i] > sums[b] { i } else { b })
    };
    let (mut sum, mut n, mut agree) = (0f64, 0usize, 0);
    for (x, y) in a.iter().zip(b) {
        for (lx, ly) in x.iter().zip(y) {
            assert_eq!(lx.len(), ly.len());
            sum += lx
                .iter()
                .zip(ly)
                .map(|(p, q)| f64::from((p - q).abs()))
                .sum::<f64>();
            n += lx.len();
        }
        agree += usize::from(best(x) == best(y));
    }
    (sum / n as f64, agree)
}

fn within_llama_cpp_spread(model: &Path, name: &str) {
    set_threads(2).unwrap();
    let native = golden(&format!("{name}-llamacpp.json"));
    let avx2 = of(&golden(&format!("{name}-llamacpp-avx2.json")));
    let [ours, exact] = [Backend::Int8, Backend::Flex].map(|backend| {
        let scorer = Scorer::open(model, backend).unwrap();
        native
            .cases
            .iter()
            .map(|case| {
                let labels: Vec<String> = case.labels.iter().map(|l| l.label.clone()).collect();
                let scores = scorer.score(&case.context, &labels).unwrap();
                for (want, got) in case.labels.iter().zip(&scores) {
                    assert_eq!(got.tokens, want.tokens, "tokens of {:?}", want.label);
                }
                scores.into_iter().map(|s| s.logprobs).collect()
            })
            .collect::<Scores>()
    });
    let native = of(&native);
    let cases = native.len();
    let (ours_d, ours_agree) = distance(&ours, &native);
    let (spread, spread_agree) = distance(&avx2, &native);
    let (ours_e, ours_e_agree) = distance(&ours, &exact);
    let (native_e, native_e_agree) = distance(&native, &exact);
    let (avx2_e, _) = distance(&avx2, &exact);
    eprintln!(
        "{name} int8 vs llama.cpp native: mean |dlogprob| {ours_d:.4}, best label \
         {ours_agree}/{cases}; llama.cpp AVX2 vs native: {spread:.4}, {spread_agree}/{cases}; \
         from the exact product: ours {ours_e:.4} ({ours_e_agree}/{cases}), llama.cpp native \
         {native_e:.4} ({native_e_agree}/{cases}), AVX2 {avx2_e:.4}"
    );
    assert!(
        ours_e <= ACCURACY_FACTOR * native_e,
        "{name}: int8 is {ours_e:.4} from the exact product, more than {ACCURACY_FACTOR} x \
         llama.cpp's {native_e:.4}"
    );
    assert!(
        ours_d <= SPREAD_FACTOR * spread,
        "{name}: int8 is {ours_d:.4} from llama.cpp, more than {SPREAD_FACTOR} x llama.cpp's \
         own spread {spread:.4}"
    );
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn smollm2_int8_is_within_llama_cpp_spread_on_the_q4_1_file() {
    within_llama_cpp_spread(&common::smollm2(), "smollm2");
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn qwen_int8_is_within_llama_cpp_spread_on_the_k_quant_file() {
    within_llama_cpp_spread(
        &common::fetched_model("Qwen2.5-Coder-0.5B-Instruct.gguf"),
        "qwen2.5-0.5b",
    );
}

/// The real Gemma 3 270M (Q4_K_M, Q8_0 embedding as its LM head, 262k-token vocabulary) on the
/// 20 FOLIO prompts of `scripts/gemma3_real_goldens.py`, its AVX2 twin made by the same script
/// with `--llamacpp-only`. llama.cpp's two builds differ by a mean |Δ log-prob| of 0.139 (max
/// 0.56, best label 17/20) on this file; ours was measured at 0.153 (17/20), within 1.5 times
/// that.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn gemma3_270m_int8_is_within_llama_cpp_spread_on_the_q4_k_m_file() {
    within_llama_cpp_spread(
        &common::fetched_model("gemma-3-270m-Q4_K_M.gguf"),
        "gemma3-270m",
    );
}
