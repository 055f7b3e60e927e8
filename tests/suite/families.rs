//! Every family from both formats (issue 23): a random-weight Hugging Face directory
//! (`model::dev::fixtures`) and the GGUF file converted from it as convert_hf_to_gguf converts
//! (`model::dev::gguf_write::hf_to_gguf`: llama's q/k rows permuted, Llama 3's `rope_freqs.weight`,
//! phi3's fused `attn_qkv` / `ffn_up` and rope factor tensors, Gemma's norms plus 1) give the same
//! bits in f32 mode. Then the refusals: every feature a family's llama.cpp loader reads that is
//! not implemented here is refused with an error naming it, by a load and by `model add`.

use std::path::{Path, PathBuf};

use deltalogic::model::dev::fixtures::{self, SEED};
use deltalogic::model::dev::gguf_write::{hf_to_gguf, GgufWriter, Meta, Store};
use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::scorer::{self, Backend, Scorer};

pub(super) fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `arch`'s fixture directory and its GGUF conversion, in `dir`.
pub(super) fn both(dir: &Path, arch: &'static str) -> (PathBuf, PathBuf) {
    fixtures::write_one(dir, arch, SEED).unwrap();
    let hf = dir.join(arch);
    let gguf = dir.join(format!("{arch}.gguf"));
    hf_to_gguf(&hf, &gguf, Store::F32, None).unwrap();
    (hf, gguf)
}

/// 20 tokens: longer than the Gemma fixtures' sliding window of 8.
pub(super) fn tokens() -> Vec<u32> {
    (0..20u32).map(|i| (i * 37 + 11) % 320).collect()
}

/// Log-probs of the last 8 tokens after the first 12 (the context prefilled in two chunks) and
/// the logits after the context.
pub(super) fn scores(model: &Path) -> (Vec<f32>, Vec<f32>) {
    let s = Scorer::open(model, Backend::Flex).unwrap();
    let t = tokens();
    let state = s.prefill(&s.empty_state(), &t[..5]).unwrap();
    let state = s.prefill(&state, &t[5..12]).unwrap();
    let lp = s.score_continuation(&state, &t[12..]).unwrap();
    let logits = s.next_logits(&state).unwrap();
    (lp, logits)
}

pub(super) fn same_bits(arch: &'static str) -> (Vec<f32>, Vec<f32>) {
    let dir = tempfile::tempdir().unwrap();
    let (hf, gguf) = both(dir.path(), arch);
    let (a, b) = (scores(&hf), scores(&gguf));
    assert_eq!(bits(&a.0), bits(&b.0), "{arch}: label log-probs differ");
    assert_eq!(bits(&a.1), bits(&b.1), "{arch}: logits differ");
    assert!(a.0.iter().all(|x| x.is_finite() && *x < 0.0));
    // The cache chunking changes nothing: the same run in one prefill.
    let s = Scorer::open(&gguf, Backend::Flex).unwrap();
    let t = tokens();
    let state = s.prefill(&s.empty_state(), &t[..12]).unwrap();
    assert_eq!(
        bits(&s.score_continuation(&state, &t[12..]).unwrap()),
        bits(&a.0)
    );
    a
}

#[test]
fn llama3_rope_scaling_gives_the_same_bits_from_both_formats() {
    let (lp, _) = same_bits("llama3");
    let dir = tempfile::tempdir().unwrap();
    let (hf, gguf) = both(dir.path(), "llama3");
    // The file carries the factors as convert_hf_to_gguf computes them: 1 for wavelengths
    // under 16, 8 over 64, and the smooth blend between.
    let g = Gguf::open(&gguf).unwrap();
    let (shape, f) = g.tensor_f32("rope_freqs.weight").unwrap();
    assert_eq!(shape, [8]);
    assert_eq!(f[0], 1.0);
    assert!(f[1] > 1.0 && f[1] < f[2] && f[2] < 8.0, "{f:?}");
    assert!(f[3..].iter().all(|&x| x == 8.0), "{f:?}");
    // And they matter: without them the scores differ (what was silently wrong before).
    let mut w = GgufWriter::from_gguf(&g).unwrap();
    w.remove_tensor("rope_freqs.weight");
    let plain = dir.path().join("plain.gguf");
    w.write(&plain).unwrap();
    let (unscaled, _) = scores(&plain);
    assert_ne!(bits(&unscaled), bits(&lp));
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hf.join("config.json")).unwrap()).unwrap();
    config.as_object_mut().unwrap().remove("rope_scaling");
    std::fs::write(hf.join("config.json"), config.to_string()).unwrap();
    assert_eq!(bits(&scores(&hf).0), bits(&unscaled));
}

#[test]
fn phi3_from_gguf_gives_the_same_bits_as_from_hugging_face() {
    same_bits("phi3");
    let dir = tempfile::tempdir().unwrap();
    let (_, gguf) = both(dir.path(), "phi3");
    let g = Gguf::open(&gguf).unwrap();
    // As llama.cpp writes phi3: fused q/k/v and gate/up, rope factor tensors, partial rotary,
    // no output matrix (tied).
    assert_eq!(
        g.tensor_info("blk.0.attn_qkv.weight").unwrap().shape(),
        [64 + 32 + 32, 64]
    );
    assert_eq!(
        g.tensor_info("blk.0.ffn_up.weight").unwrap().shape(),
        [2 * 96, 64]
    );
    assert!(g.tensor_info("blk.0.ffn_gate.weight").is_none());
    assert!(g.tensor_info("output.weight").is_none());
    assert_eq!(g.get_u32("phi3.rope.dimension_count").unwrap(), 12);
    assert!(g.tensor_info("rope_factors_short.weight").is_some());
}

#[test]
fn qwen_and_llama_give_the_same_bits_from_both_formats() {
    for arch in ["llama", "qwen2", "qwen3"] {
        same_bits(arch);
    }
}

#[test]
fn gemma2_and_gemma3_give_the_same_bits_from_both_formats() {
    same_bits("gemma2");
    same_bits("gemma3");
}

/// A sequence no longer than the window gives the same results with or without it.
#[test]
fn a_window_longer_than_the_sequence_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_, gguf) = both(dir.path(), "gemma2");
    let g = Gguf::open(&gguf).unwrap();
    let mut w = GgufWriter::from_gguf(&g).unwrap();
    w.kv("gemma2.attention.sliding_window", Meta::U32(4096));
    let wide = dir.path().join("wide.gguf");
    w.write(&wide).unwrap();
    let t = &tokens()[..8];
    let run = |p: &Path| {
        let s = Scorer::open(p, Backend::Flex).unwrap();
        let st = s.prefill(&s.empty_state(), &t[..4]).unwrap();
        bits(&s.score_continuation(&st, &t[4..]).unwrap())
    };
    assert_eq!(run(&gguf), run(&wide));
    // Past the window it does change them.
    let (narrow, _) = scores(&gguf);
    assert_ne!(bits(&narrow), bits(&scores(&wide).0));
}

/// The llama fixture as GGUF, to be spoiled one feature at a time.
fn llama_writer(dir: &Path) -> GgufWriter {
    let (_, gguf) = both(dir, "llama");
    GgufWriter::from_gguf(&Gguf::open(&gguf).unwrap()).unwrap()
}

/// `w` written, then refused by a load and by `model add`'s check, naming `what`.
pub(super) fn refused(dir: &Path, name: &str, w: &GgufWriter, what: &str) {
    let path = dir.join(name);
    w.write(&path).unwrap();
    let load = match Scorer::open(&path, Backend::Flex) {
        Ok(_) => panic!("{name}: loaded"),
        Err(e) => e.to_string(),
    };
    assert!(load.contains(what), "{name}: {load}");
    let check = scorer::check(&path).unwrap_err().to_string();
    assert_eq!(check, load, "{name}: model add's check differs from a load");
}

#[test]
fn unimplemented_features_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = || llama_writer(d);

    let mut w = base();
    w.kv("llama.rope.scaling.type", Meta::Str("yarn".into()));
    refused(
        d,
        "yarn.gguf",
        &w,
        "llama.rope.scaling.type \"yarn\" is not implemented",
    );

    let mut w = base();
    w.kv("llama.rope.scaling.attn_factor", Meta::F32(2.0));
    refused(
        d,
        "attn-factor.gguf",
        &w,
        "llama.rope.scaling.attn_factor 2 is not implemented",
    );

    let mut w = base();
    w.kv("llama.expert_count", Meta::U32(8));
    refused(d, "experts.gguf", &w, "metadata key llama.expert_count");

    let mut w = base();
    w.kv("llama.attention.sliding_window", Meta::U32(4));
    refused(
        d,
        "swa.gguf",
        &w,
        "metadata key llama.attention.sliding_window",
    );

    let mut w = base();
    w.tensor("blk.0.attn_output.bias", &[64], &[0.0; 64], Store::F32);
    refused(
        d,
        "bias.gguf",
        &w,
        "tensor blk.0.attn_output.bias is not implemented for llama",
    );

    let mut w = base();
    w.kv("llama.attention.value_length", Meta::U32(8));
    refused(d, "vlen.gguf", &w, "llama.attention.value_length 8 differs");

    let mut w = base();
    w.kv("llama.rope.dimension_count", Meta::U32(8));
    refused(d, "nrot.gguf", &w, "llama.rope.dimension_count 8 differs");

    // What `model add` registered before: a wrong vocabulary size, 7 heads, an unknown type.
    let mut w = base();
    w.kv("llama.vocab_size", Meta::U32(1000));
    refused(
        d,
        "vocab.gguf",
        &w,
        "llama.vocab_size 1000 differs from the 320 tokens",
    );

    let mut w = base();
    w.kv("llama.attention.head_count", Meta::U32(7));
    refused(
        d,
        "heads7.gguf",
        &w,
        "7 heads is not a multiple of 2 kv heads",
    );

    let mut w = base();
    w.remove_tensor("blk.1.ffn_down.weight");
    // Q2_K (type 10) is not implemented: 256 values in 84 bytes a block.
    w.raw_tensor(
        "blk.1.ffn_down.weight",
        &[64, 96 * 256 / 96],
        10,
        vec![0; 64 * 84],
    );
    refused(
        d,
        "q2k.gguf",
        &w,
        "tensor blk.1.ffn_down.weight has unsupported type Q2_K",
    );

    let mut w = base();
    w.kv("general.architecture", Meta::Str("mamba".into()));
    refused(d, "mamba.gguf", &w, "unknown architecture \"mamba\"");

    // Phi3's longrope needs both factor lists.
    let (_, phi3) = both(d, "phi3");
    let mut w = GgufWriter::from_gguf(&Gguf::open(&phi3).unwrap()).unwrap();
    w.remove_tensor("rope_factors_long.weight");
    refused(
        d,
        "phi3-half.gguf",
        &w,
        "only one of rope_factors_short.weight",
    );
    let mut w = GgufWriter::from_gguf(&Gguf::open(&phi3).unwrap()).unwrap();
    w.kv("phi3.attention.sliding_window", Meta::U32(16));
    refused(
        d,
        "phi3-swa.gguf",
        &w,
        "phi3.attention.sliding_window 16 is shorter",
    );
}

/// `arch`'s fixture directory in `dir` with its config.json edited by `edit`.
pub(super) fn edited_fixture(
    dir: &Path,
    arch: &'static str,
    edit: &dyn Fn(&mut serde_json::Value),
) -> PathBuf {
    fixtures::write_one(dir, arch, SEED).unwrap();
    let path = dir.join(arch);
    let config = path.join("config.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    edit(&mut json);
    std::fs::write(&config, json.to_string()).unwrap();
    path
}

/// `arch`'s fixture with config.json edited, refused by a load and by `model add`'s check,
/// naming `what`.
pub(super) fn spoiled(
    dir: &Path,
    arch: &'static str,
    edit: &dyn Fn(&mut serde_json::Value),
    what: &str,
) {
    let path = edited_fixture(dir, arch, edit);
    let err = match Scorer::open(&path, Backend::Flex) {
        Ok(_) => panic!("{arch}: loaded"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(what), "{arch}: {err}");
    assert_eq!(scorer::check(&path).unwrap_err().to_string(), err);
}

/// config.json features that are not implemented, refused by name.
#[test]
fn unimplemented_config_keys_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let spoil = |arch: &'static str, edit: &dyn Fn(&mut serde_json::Value), what: &str| {
        spoiled(dir.path(), arch, edit, what)
    };
    spoil(
        "llama",
        &|j| j["rope_scaling"] = serde_json::json!({"rope_type": "yarn", "factor": 4.0}),
        "rope_scaling type yarn is not implemented for llama",
    );
    spoil(
        "qwen2",
        &|j| {
            j["use_sliding_window"] = true.into();
            j["sliding_window"] = 16.into();
        },
        "use_sliding_window with sliding_window 16 is not implemented for qwen2",
    );
    spoil(
        "llama",
        &|j| j["hidden_act"] = "gelu".into(),
        "hidden_act \"gelu\" is not implemented",
    );
    spoil(
        "phi3",
        &|j| j["sliding_window"] = 64.into(),
        "sliding_window 64 is shorter than the 128 positions",
    );
    spoil(
        "gemma3",
        &|j| j["attn_logit_softcapping"] = 50.0.into(),
        "attn_logit_softcapping 50 is not implemented for gemma3",
    );
    spoil(
        "gemma2",
        &|j| j["layer_types"] = serde_json::json!(["chunked_attention", "full_attention"]),
        "layer type \"chunked_attention\" is not implemented",
    );
}

/// `model add` refuses what a load refuses, and registers nothing; `model inspect` says why.
#[test]
fn model_add_and_inspect_refuse_what_cannot_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = llama_writer(dir.path());
    w.kv("llama.attention.head_count", Meta::U32(7));
    let bad = dir.path().join("heads7.gguf");
    w.write(&bad).unwrap();
    let store = dir.path().join("s.store");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_deltalogic"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[
        "--store",
        store.to_str().unwrap(),
        "model",
        "add",
        bad.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("7 heads is not a multiple"), "{err}");

    let out = run(&["--json", "model", "inspect", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["not_implemented"]
        .as_str()
        .unwrap()
        .contains("7 heads is not a multiple"));

    let good = dir.path().join("llama.gguf");
    let out = run(&["--json", "model", "inspect", good.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["family"]["family"], "llama");
    assert_eq!(v["family"]["layers"], 2);
    assert_eq!(v["numerics"], "flex");
    assert_eq!(v["tensor_types"]["attn_q"]["F32"], 2);
    assert_eq!(v["tokenizer"]["vocabulary"], 320);
    assert_eq!(v["fingerprint"].as_str().unwrap().len(), 64);
    // The fingerprint is the id `model add` gives.
    let out = run(&[
        "--store",
        store.to_str().unwrap(),
        "--json",
        "model",
        "add",
        good.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(added["fingerprint"], v["fingerprint"]);
}
