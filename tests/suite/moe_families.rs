//! Mixtures of experts (issue 45): Qwen3-MoE against llama.cpp on a random-weight file at
//! Qwen3-30B-A3B's widths and expert count (`fixtures/golden/families-moe-llamacpp.json`), from
//! both formats to the bit, the tie rule of the routing, and what is not implemented refused by
//! name.

use std::path::Path;

use deltalogic::model::dev::fixtures::{EXPERTS, EXPERTS_USED, EXPERT_WIDTH};
use deltalogic::model::dev::gguf_write::{hf_to_gguf, quantize_mxfp4, GgufWriter, Meta, Store};
use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::scorer::{Backend, Scorer};

use super::families::{bits, both, edited_fixture, refused, same_bits, scores, tokens};
use super::families_llamacpp::agrees;
use super::numerics::{
    check_configurations, INT8, INT8_NO_AVX512, INT8_PORTABLE, NO_AVX512, PORTABLE,
};

/// One layer at Qwen3-30B-A3B's widths: hidden 2048, 32 heads over 4 KV heads of 128, 128
/// experts of width 768, 8 used per token (`model::dev::family_files`). f32: the label
/// log-probs, the next-token logits, the argmax and 8 greedy tokens against llama.cpp's
/// (measured max |Δ log-prob| 1.9e-5, max |Δ logit| 1.9e-5, all 8/8); Q8_0 in the integer mode,
/// measured mean |Δ log-prob| 0.014 (max 0.151), mean |Δ logit| 0.0125; best label, argmax and
/// greedy 8/8. That is outside llama.cpp's own spread on the file (`families_llamacpp`'s
/// `OUTSIDE_SPREAD`): its AVX2 and native builds give the same logits after every context, to
/// the bit, and differ on 3 of the 48 label log-probs (mean 0.0025). From the exact product
/// (our f32 mode on the Q8_0 file) ours is 0.142 and llama.cpp's 0.151: the gate.
#[test]
fn qwen3moe_at_qwen3_30b_a3b_widths_agrees_with_llama_cpp() {
    let _one = LARGE.lock().unwrap_or_else(|e| e.into_inner());
    agrees("families-moe-llamacpp.json");
}

/// Held by each test of a multi-GB file: their files are drawn and written in memory
/// (`common::memory_file`), about 4 GB at the peak for gpt-oss's, so two at once would need
/// twice that.
static LARGE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// gpt-oss-20b's widths (hidden 2880, 64 heads over 8 KV heads of 64, 32 experts of width 2880,
/// 4 used per token, YaRN factor 32 over 4096 positions), 1 layer, local, with the window cut
/// from 128 to 16 so that the contexts (9 to 37 tokens and 8 generated) cross it: the sinks,
/// the biases, the softmax over the chosen experts and the clamped SwiGLU (the experts' gate
/// and up drawn wide enough to pass the clamp) against llama.cpp's `gpt-oss`. Measured in f32:
/// max |Δ log-prob| 3.4e-5, max |Δ logit| 4.3e-5; best label, argmax and greedy 8/8. The Q8_0
/// file in the integer mode: measured mean |Δ log-prob| 0.0013 (max 0.023), mean |Δ logit|
/// 0.0022; best label, argmax, greedy 8/8. That is outside llama.cpp's own spread on the file
/// (`families_llamacpp`'s `OUTSIDE_SPREAD`): its AVX2 and native builds give the same label
/// log-probs and logits, to the printed digit. From the exact product (our f32 mode on the Q8_0
/// file) ours and llama.cpp's are both 0.112: the gate.
#[test]
fn gpt_oss_at_gpt_oss_20b_widths_agrees_with_llama_cpp() {
    let _one = LARGE.lock().unwrap_or_else(|e| e.into_inner());
    agrees("families-gptoss-llamacpp.json");
}

/// The same gpt-oss file stored as llama-quantize's `MXFP4_MOE` mix (MXFP4 experts, the other
/// matrices Q8_0, biases and the embedding f32; `dev family-files --storage mxfp4`), in the
/// integer mode against llama.cpp's MXFP4 product (`ggml_vec_dot_mxfp4_q8_0`: the experts
/// against Q8_0 activations, as ours). Measured: mean |Δ log-prob| 0.0011 (max 0.023), mean
/// |Δ logit| 1.8e-6 (max 1.3e-5); best label, argmax, greedy 8/8. As for the Q8_0 file, that is
/// outside llama.cpp's own spread (`OUTSIDE_SPREAD`): its AVX2 and native builds give the same
/// label log-probs and logits, to the printed digit.
#[test]
fn gpt_oss_with_mxfp4_experts_agrees_with_llama_cpp() {
    let _one = LARGE.lock().unwrap_or_else(|e| e.into_inner());
    agrees("families-gptoss-mxfp4-llamacpp.json");
}

/// The same gpt-oss file's `model export-hf` directory read by transformers' own
/// `GptOssForCausalLM` (transformers 5.19, f32, eager attention; golden
/// `families-gptoss-transformers.json` from `scripts/gemma4_transformers_goldens.py --name
/// gpt-oss-20b-window16 --class GptOssForCausalLM`, its docstring gives the command): the
/// export writes what transformers reads (the fused, interleaved, transposed experts, the
/// router, the sinks, the layer types and YaRN), and it computes what we compute. Measured:
/// max |Δ log-prob| 3.4e-5 (mean 1.2e-5), max |Δ logit| 5.2e-5 (mean 1.1e-5); best label,
/// argmax and greedy 8/8.
#[test]
fn gpt_oss_exported_to_hugging_face_agrees_with_transformers_in_f32() {
    let _one = LARGE.lock().unwrap_or_else(|e| e.into_inner());
    agrees("families-gptoss-transformers.json");
}

#[test]
fn qwen3moe_gives_the_same_bits_from_both_formats() {
    same_bits("qwen3moe");
    let dir = tempfile::tempdir().unwrap();
    let (_, gguf) = both(dir.path(), "qwen3moe");
    let g = Gguf::open(&gguf).unwrap();
    // As convert_hf_to_gguf writes Qwen3-MoE: one 3-D tensor per projection, the router apart.
    assert_eq!(
        g.tensor_info("blk.0.ffn_gate_exps.weight").unwrap().shape(),
        [EXPERTS, EXPERT_WIDTH, 64]
    );
    assert_eq!(
        g.tensor_info("blk.1.ffn_down_exps.weight").unwrap().shape(),
        [EXPERTS, 64, EXPERT_WIDTH]
    );
    assert_eq!(
        g.tensor_info("blk.0.ffn_gate_inp.weight").unwrap().shape(),
        [EXPERTS, 64]
    );
    assert_eq!(
        g.get_u32("qwen3moe.expert_count").unwrap() as usize,
        EXPERTS
    );
    assert_eq!(
        g.get_u32("qwen3moe.expert_used_count").unwrap() as usize,
        EXPERTS_USED
    );
}

/// The routing reads each token's own row and every expert's product is the canonical one, so
/// the bits do not move with the thread count, the vector unit, the prefix path (a tree of
/// uneven prefills, one token at a time) or the lockstep's batched decode, where each sequence
/// is routed on its own (`numerics::report`); f32 from the f32 file, the integer mode from a
/// Q8_0 one. The prompts are `hf-qwen3.json`'s (the same fixture tokenizer).
#[test]
fn qwen3moe_gives_the_same_bits_on_every_path_thread_count_and_vector_unit() {
    let dir = tempfile::tempdir().unwrap();
    let (hf, gguf) = both(dir.path(), "qwen3moe");
    check_configurations(
        &gguf,
        "hf-qwen3.json",
        &[(2, &[]), (1, &[]), (3, &[]), (2, NO_AVX512), (3, PORTABLE)],
    );
    let q8 = dir.path().join("qwen3moe-q8_0.gguf");
    hf_to_gguf(&hf, &q8, Store::Q8_0, None).unwrap();
    check_configurations(
        &q8,
        "hf-qwen3.json",
        &[
            (2, INT8),
            (1, INT8),
            (3, INT8_NO_AVX512),
            (2, INT8_PORTABLE),
        ],
    );
}

/// Issue 45: the integer mode holds repacked experts within a byte budget, the least recently
/// used let go of and repacked from the mapped file when next chosen. With a budget of one byte
/// only the matrix in use is held, every expert is repacked at each use, and the bits are the
/// default budget's.
#[test]
fn a_tiny_expert_budget_holds_one_matrix_and_gives_the_same_bits() {
    let dir = tempfile::tempdir().unwrap();
    let (hf, _) = both(dir.path(), "qwen3moe");
    let q8 = dir.path().join("qwen3moe-q8_0.gguf");
    hf_to_gguf(&hf, &q8, Store::Q8_0, None).unwrap();
    let run = |budget: Option<usize>| {
        let s = Scorer::open(&q8, Backend::Int8).unwrap();
        if let Some(bytes) = budget {
            s.model().set_expert_budget(bytes);
        }
        let t = tokens();
        let state = s.prefill(&s.empty_state(), &t[..12]).unwrap();
        let lp = s.score_continuation(&state, &t[12..]).unwrap();
        let logits = s.next_logits(&state).unwrap();
        (bits(&lp), bits(&logits), s.model().experts_held())
    };
    let (lp, logits, all) = run(None);
    let (lp1, logits1, one) = run(Some(1));
    assert_eq!(lp1, lp, "label log-probs");
    assert_eq!(logits1, logits, "logits");
    // Unbounded, every expert chosen stays: 2 layers, several experts of 3 matrices each.
    assert!(
        one.1 > 0 && all.1 >= 4 * one.1,
        "held {all:?} against {one:?}"
    );
    assert!(one.0 <= one.1);
}

/// The converted fixture with its routers zeroed (every expert equally probable for every
/// token) and its expert tensors replaced by `experts` of the original's, in that order.
fn rerouted(src: &Path, out: &Path, experts: &[usize]) -> std::path::PathBuf {
    let g = Gguf::open(src).unwrap();
    let mut w = GgufWriter::from_gguf(&g).unwrap();
    w.kv("qwen3moe.expert_count", Meta::U32(experts.len() as u32));
    for l in 0..2 {
        let router = format!("blk.{l}.ffn_gate_inp.weight");
        w.remove_tensor(&router);
        w.tensor(
            &router,
            &[experts.len(), 64],
            &vec![0.0; experts.len() * 64],
            Store::F32,
        );
        for proj in ["gate", "up", "down"] {
            let name = format!("blk.{l}.ffn_{proj}_exps.weight");
            let (shape, data) = g.tensor_f32(&name).unwrap();
            let n = shape[1] * shape[2];
            let picked: Vec<f32> = experts
                .iter()
                .flat_map(|&e| data[e * n..(e + 1) * n].iter().copied())
                .collect();
            w.remove_tensor(&name);
            w.tensor(
                &name,
                &[experts.len(), shape[1], shape[2]],
                &picked,
                Store::F32,
            );
        }
    }
    w.write(out).unwrap();
    out.to_path_buf()
}

/// With every router score equal, all experts tie: the two of the lower index run, each with
/// weight 1/2. So the file scores exactly as one holding only those two experts (where they
/// are all there is), and not as the same file with its experts' order reversed.
#[test]
fn tied_experts_go_to_the_lower_index() {
    assert_eq!((EXPERTS, EXPERTS_USED), (4, 2));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, gguf) = both(d, "qwen3moe");
    let tied = scores(&rerouted(&gguf, &d.join("tied.gguf"), &[0, 1, 2, 3]));
    let two = scores(&rerouted(&gguf, &d.join("two.gguf"), &[0, 1]));
    let reversed = scores(&rerouted(&gguf, &d.join("reversed.gguf"), &[3, 2, 1, 0]));
    assert_eq!(bits(&tied.0), bits(&two.0), "tied experts: label log-probs");
    assert_eq!(bits(&tied.1), bits(&two.1), "tied experts: logits");
    assert_ne!(bits(&tied.0), bits(&reversed.0));
    // The routing matters at all: with the fixture's own routers the scores differ again.
    assert_ne!(bits(&scores(&gguf).0), bits(&tied.0));
}

#[test]
fn what_qwen3moe_does_not_implement_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, gguf) = both(d, "qwen3moe");
    let g = Gguf::open(&gguf).unwrap();
    for (key, value) in [
        ("qwen3moe.expert_shared_count", Meta::U32(1)),
        ("qwen3moe.expert_gating_func", Meta::U32(2)),
        ("qwen3moe.expert_weights_scale", Meta::F32(2.5)),
        ("qwen3moe.expert_weights_norm", Meta::Bool(false)),
    ] {
        let mut w = GgufWriter::from_gguf(&g).unwrap();
        w.kv(key, value);
        refused(d, "key.gguf", &w, &format!("metadata key {key}"));
    }
    // A shared expert's tensor, as Qwen2-MoE has.
    let mut w = GgufWriter::from_gguf(&g).unwrap();
    w.tensor(
        "blk.0.ffn_gate_shexp.weight",
        &[32, 64],
        &[0.0; 32 * 64],
        Store::F32,
    );
    refused(d, "shexp.gguf", &w, "blk.0.ffn_gate_shexp.weight");

    for (edit, what) in [
        (
            &(|j: &mut serde_json::Value| j["mlp_only_layers"] = serde_json::json!([1]))
                as &dyn Fn(&mut serde_json::Value),
            "mlp_only_layers",
        ),
        (
            &|j: &mut serde_json::Value| j["decoder_sparse_step"] = serde_json::json!(2),
            "decoder_sparse_step 2",
        ),
        (
            &|j: &mut serde_json::Value| j["norm_topk_prob"] = serde_json::json!(false),
            "norm_topk_prob false",
        ),
    ] {
        let hf = edited_fixture(d, "qwen3moe", edit);
        let e = Scorer::open(&hf, Backend::Flex).err().expect("loaded");
        assert!(e.to_string().contains(what), "{e}");
    }
}

/// The mixture-of-experts families llama.cpp 0.3.36 knows and this engine does not: refused
/// with their names, from GGUF and from config.json.
#[test]
fn unimplemented_moe_families_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, gguf) = both(d, "qwen3moe");
    let g = Gguf::open(&gguf).unwrap();
    for arch in ["qwen35moe", "qwen2moe", "olmoe", "granitemoe"] {
        let mut w = GgufWriter::from_gguf(&g).unwrap();
        w.kv("general.architecture", Meta::Str(arch.into()));
        refused(d, "other.gguf", &w, &format!("architecture {arch:?}"));
    }
    for class in ["OlmoeForCausalLM", "Qwen2MoeForCausalLM"] {
        let hf = edited_fixture(d, "qwen3moe", &|j| {
            j["architectures"] = serde_json::json!([class]);
        });
        let e = Scorer::open(&hf, Backend::Flex).err().expect("loaded");
        assert!(e.to_string().contains(class), "{e}");
    }
}

/// MXFP4 experts (gpt-oss's storage; issue 45), here in the Qwen3-MoE fixture: the f32 mode
/// dequantises them from the mapped file, so the file scores to the bit as one holding the
/// same values as f32 experts; the integer mode repacks them (`PackCache`) and multiplies them
/// as llama.cpp does, against 8-bit activations: near the f32 scores, not equal (measured: max
/// |Δ log-prob| 0.026, max |Δ logit| 0.041). Its agreement with llama.cpp is
/// `gpt_oss_with_mxfp4_experts_agrees_with_llama_cpp`.
/// About twice what was measured (0.026 and 0.041).
const MXFP4_INT_LOGPROB: f32 = 0.05;
const MXFP4_INT_LOGIT: f32 = 0.08;

#[test]
fn mxfp4_experts_score_as_their_values_in_f32_and_near_them_in_the_integer_mode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, gguf) = both(d, "qwen3moe");
    let g = Gguf::open(&gguf).unwrap();
    let (mut packed, mut widened) = (
        GgufWriter::from_gguf(&g).unwrap(),
        GgufWriter::from_gguf(&g).unwrap(),
    );
    for l in 0..2 {
        for proj in ["gate", "up", "down"] {
            let name = format!("blk.{l}.ffn_{proj}_exps.weight");
            let (shape, data) = g.tensor_f32(&name).unwrap();
            let bytes = quantize_mxfp4(&data);
            let mut values = vec![0f32; data.len()];
            deltalogic::model::format::quant::dequantize(
                deltalogic::model::format::quant::GgmlType::Mxfp4,
                &bytes,
                &mut values,
            );
            assert_ne!(values, data, "{name}: MXFP4 rounds");
            packed.remove_tensor(&name);
            packed.raw_tensor(&name, &shape, 39, bytes);
            widened.remove_tensor(&name);
            widened.tensor(&name, &shape, &values, Store::F32);
        }
    }
    let (mx, f32s) = (d.join("mxfp4.gguf"), d.join("widened.gguf"));
    packed.write(&mx).unwrap();
    widened.write(&f32s).unwrap();
    let (a, b) = (scores(&mx), scores(&f32s));
    assert_eq!(bits(&a.0), bits(&b.0), "label log-probs");
    assert_eq!(bits(&a.1), bits(&b.1), "logits");
    assert_ne!(bits(&a.0), bits(&scores(&gguf).0));
    let s = Scorer::open(&mx, Backend::Int8).unwrap();
    let t = tokens();
    let state = s.prefill(&s.empty_state(), &t[..12]).unwrap();
    let lp = s.score_continuation(&state, &t[12..]).unwrap();
    let logits = s.next_logits(&state).unwrap();
    let max_diff = |x: &[f32], y: &[f32]| {
        x.iter()
            .zip(y)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };
    let (dl, dg) = (max_diff(&lp, &a.0), max_diff(&logits, &a.1));
    eprintln!("MXFP4 integer mode against f32: max |Δ log-prob| {dl}, max |Δ logit| {dg}");
    assert!(dl > 0.0 && dl <= MXFP4_INT_LOGPROB, "{dl}");
    assert!(dg > 0.0 && dg <= MXFP4_INT_LOGIT, "{dg}");
    // The experts were repacked: the integer product ran.
    assert!(s.model().experts_held().1 > 0);
}

/// gpt-oss's local layers rotate at `rope.freq_base_swa` when the file gives one (llama.cpp's
/// `get_rope_freq_base` in `openai-moe.cpp`, with the global rope's YaRN scaling): a tiny
/// gpt-oss file (one local and one global layer) scores differently at another local base, the
/// same at the global base, and the same when no layer is local.
#[test]
fn gpt_oss_local_layers_rotate_at_their_own_base() {
    use deltalogic::model::dev::family_files::write_config;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = super::gpt_oss_hf::tiny_config();
    let g = Gguf::open(write_config(d, "gpt-oss-tiny", &cfg, Store::F32).unwrap()).unwrap();
    let run = |name: &str, edit: &dyn Fn(&mut GgufWriter)| {
        let mut w = GgufWriter::from_gguf(&g).unwrap();
        edit(&mut w);
        let path = d.join(name);
        w.write(&path).unwrap();
        bits(&scores(&path).0)
    };
    let plain = run("plain.gguf", &|_| {});
    let base = |b: f32| {
        move |w: &mut GgufWriter| {
            w.kv("gpt-oss.rope.freq_base_swa", Meta::F32(b));
        }
    };
    assert_ne!(run("local.gguf", &base(10_000.0)), plain);
    assert_eq!(run("same.gguf", &base(150_000.0)), plain);
    let global = |w: &mut GgufWriter| {
        w.kv(
            "gpt-oss.attention.sliding_window_pattern",
            Meta::Bools(vec![false, false]),
        );
    };
    let all_global = run("global.gguf", &global);
    let both = |w: &mut GgufWriter| {
        global(w);
        base(10_000.0)(w);
    };
    assert_eq!(run("global-local-base.gguf", &both), all_global);
}
