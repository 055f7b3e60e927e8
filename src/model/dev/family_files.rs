//! Random-weight GGUF files at the real models' shapes and metadata, depth cut to 2 layers (4 for
//! SmolLM3, whose fourth layer is the first without RoPE): what
//! llama.cpp scores for the family goldens (`scripts/llamacpp_families.py`,
//! `fixtures/golden/families-llamacpp.json`) and what `tests/suite/families_llamacpp.rs` writes again
//! to compare our engine with those goldens. Deterministic: the same bytes on every machine
//! (each golden records the sha256 of the file it was made from, and the test checks it).
//!
//! Each file has the real config's hidden size, intermediate size, heads, KV heads, head dim,
//! rope base and scaling, rotary dims, norms epsilon, context length, soft-caps and sliding
//! window; the layer count is cut to 2 and the tokenizer is the fixtures' 320-token byte-level
//! BPE (`fixtures::tokenizer_json`), since no installable package ships these models' own
//! tokenizers at a size CI can carry (the vocabulary sizes the embedding). Gemma 3's two layers
//! are one local and one global, so that both of its ropes are checked. Ministral 3 has a second
//! file with an original window of 16 positions, so that its attention temperature and YaRN ramp
//! are checked within the contexts' length. Gemma 4 E2B's file has 4 layers (see its entry).

use std::path::{Path, PathBuf};

use crate::model::block::config::{
    Activation, AttnTemperature, Config, Gating, LongRope, Moe, Rope, RopeLayout, Shape,
    SwigluClamp, Yarn,
};
use crate::model::block::delta_net::DeltaNet;
use crate::model::block::transformer::{Part, Ssm, Transformer};
use crate::model::dev::gguf_write::{
    config_metadata, encode, rope_factor_tensors, stack, stored_name, tokenizer_from_json,
    GgufWriter, Meta, Store,
};
use crate::model::family::{gemma4, llama, FAMILIES};
use crate::model::ModelError;
use crate::rng::Rng;

/// The seed of every family file.
pub const SEED: u64 = 20_261_126;
const LAYERS: usize = 2;
const VOCAB: usize = 320;

/// The files written: name, and the real model whose shapes it has.
pub const FILES: [(&str, &str); 14] = [
    ("llama3-1b", "Llama-3.2-1B-Instruct"),
    ("qwen3-0.6b", "Qwen3-0.6B"),
    ("phi3-mini4", "Phi-4-mini-instruct"),
    ("gemma2-2b", "gemma-2-2b-it"),
    ("gemma3-1b", "gemma-3-1b-it"),
    // Issue 43.
    ("smollm3-3b", "SmolLM3-3B"),
    ("olmo2-1b", "OLMo-2-0425-1B"),
    ("ministral3-3b", "Ministral-3-3B-Instruct-2512"),
    ("ministral3-3b-window16", "Ministral-3-3B-Instruct-2512"),
    // Issue 45.
    ("qwen3moe-30b-a3b", "Qwen3-30B-A3B"),
    ("gpt-oss-20b-window16", "gpt-oss-20b"),
    // Issue 44.
    ("qwen35-0.8b", "Qwen3.5-0.8B"),
    ("qwen35-2b", "Qwen3.5-2B"),
    // Issue 43.
    ("gemma4-e2b-window16", "gemma-4-E2B"),
];

fn base(
    arch: &str,
    hidden: usize,
    intermediate: usize,
    heads: usize,
    kv: usize,
    hd: usize,
) -> Config {
    let shape = Shape {
        vocab_size: VOCAB,
        hidden,
        intermediate,
        layers: LAYERS,
        heads,
        kv_heads: kv,
        head_dim: hd,
        norm_eps: 1e-6,
        rope_theta: 10_000.0,
        max_positions: 32_768,
    };
    Config {
        tied_embeddings: true,
        ..Config::plain(arch, shape)
    }
}

/// The config of the file `name` (one of `FILES`).
pub fn config(name: &str) -> Option<Config> {
    Some(match name {
        "llama3-1b" => {
            let mut c = base("llama", 2048, 8192, 32, 8, 64);
            c.norm_eps = 1e-5;
            c.rope.theta = 500_000.0;
            c.rope.layout = RopeLayout::Interleaved;
            c.max_positions = 131_072;
            // rope_scaling {"rope_type": "llama3", "factor": 32, "low_freq_factor": 1,
            // "high_freq_factor": 4, "original_max_position_embeddings": 8192}
            let json = crate::model::family::read::HfJson {
                path: PathBuf::from("config.json"),
                value: serde_json::Value::Null,
            };
            let s = serde_json::json!({"rope_type": "llama3", "factor": 32.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192});
            c.rope.freq_factors = llama::llama3_factors(&json, &s, &c).ok();
            c.rope.scaling = Some("llama3".into());
            c
        }
        "qwen3-0.6b" => {
            let mut c = base("qwen3", 1024, 3072, 16, 8, 128);
            c.rope.theta = 1_000_000.0;
            c.qk_norm = true;
            c.max_positions = 40_960;
            c
        }
        "phi3-mini4" => {
            let mut c = base("phi3", 3072, 8192, 24, 8, 128);
            c.norm_eps = 1e-5;
            c.rope.rotary_dim = 96;
            c.max_positions = 131_072;
            // Longrope divisors of Phi-4-mini's shape (48 each); short ones near 1, long ones
            // rising, as in the released config.
            let short: Vec<f32> = (0..48)
                .map(|i| 1.0 + 0.05 * (i as f32 / 47.0).powi(3))
                .collect();
            let long: Vec<f32> = (0..48)
                .map(|i| 1.0 + 40.0 * (i as f32 / 47.0).powi(2))
                .collect();
            let factor = 131_072.0f64 / 4096.0;
            c.rope.longrope = Some(LongRope {
                short_factor: short,
                long_factor: long,
                original_max_positions: 4096,
                attention_factor: (1.0 + factor.ln() / 4096f64.ln()).sqrt() as f32,
            });
            c.rope.scaling = Some("longrope".into());
            c
        }
        "gemma2-2b" => {
            let mut c = base("gemma2", 2304, 9216, 8, 4, 256);
            c.activation = Activation::GeluTanh;
            c.embed_scale = Some((2304f32).sqrt());
            c.post_norms = true;
            c.attn_softcap = Some(50.0);
            c.final_softcap = Some(30.0);
            c.sliding_window = Some(4096);
            c.local_layers = crate::model::family::gemma2::pattern_layers(LAYERS, 2);
            c.max_positions = 8192;
            c
        }
        "gemma3-1b" => {
            let mut c = base("gemma3", 1152, 6912, 4, 1, 256);
            c.activation = Activation::GeluTanh;
            c.embed_scale = Some((1152f32).sqrt());
            c.post_norms = true;
            c.qk_norm = true;
            c.rope.theta = 1_000_000.0;
            c.sliding_window = Some(512);
            c.local_layers = vec![true, false];
            c.rope_local = Some(Rope {
                theta: 10_000.0,
                ..c.rope.clone()
            });
            c
        }
        // Issue 43. transformers' SmolLM3Config defaults (its checkpoint HuggingFaceTB/SmolLM3-3B):
        // 36 layers cut to 4, so that layer 3 runs without RoPE.
        "smollm3-3b" => {
            let mut c = base("smollm3", 2048, 11008, 16, 4, 128);
            c.layers = 4;
            c.rope.theta = 2_000_000.0;
            c.rope.layout = RopeLayout::Interleaved;
            c.no_rope_layers = vec![false, false, false, true];
            c
        }
        // OLMo 2 1B (16 layers): untied, no pre-norms, q/k norms over the whole projection.
        "olmo2-1b" => {
            let mut c = base("olmo2", 2048, 8192, 16, 16, 128);
            c.rope.theta = 500_000.0;
            c.max_positions = 4096;
            c.tied_embeddings = false;
            c.pre_norms = false;
            c.post_norms = true;
            c.qk_norm = true;
            c.qk_norm_whole = true;
            c
        }
        // Ministral 3 3B (26 layers; transformers' Ministral3Config rope_parameters): YaRN factor
        // 16 over an original window of 16 384, log multiplier 1, Llama 4 temperature 0.1.
        "ministral3-3b" => ministral3(16_384),
        // The same with an original window of 16, so that the contexts cross it: the attention
        // temperature is 1 + 0.1 ln 2 from position 16 and 1 + 0.1 ln 3 from 32, and the YaRN
        // ramp moves.
        "ministral3-3b-window16" => ministral3(16),
        // Issue 45: Qwen3-30B-A3B (48 layers) cut to 1: its 128 experts of width 768 are
        // 2.4 GB of f32 per layer. Untied, as the checkpoint.
        "qwen3moe-30b-a3b" => {
            let mut c = base("qwen3moe", 2048, 6144, 32, 4, 128);
            c.layers = 1;
            c.rope.theta = 1_000_000.0;
            c.qk_norm = true;
            c.max_positions = 40_960;
            c.tied_embeddings = false;
            c.moe = Some(Moe {
                experts: 128,
                experts_used: 8,
                expert_intermediate: 768,
                norm_topk: true,
                gating: Gating::Softmax,
                biases: false,
                clamped: None,
            });
            c
        }
        // gpt-oss-20b (24 layers) cut to 1, a local layer, with its window of 128 cut to 16 so
        // that the contexts cross it: its 32 experts of width 2880 are 3.2 GB of f32 per layer.
        // YaRN factor 32 over 4096 positions, sinks, biases, the clamped SwiGLU.
        "gpt-oss-20b-window16" => {
            let mut c = base("gpt-oss", 2880, 2880, 64, 8, 64);
            c.layers = 1;
            c.norm_eps = 1e-5;
            c.rope.theta = 150_000.0;
            c.max_positions = 131_072;
            c.tied_embeddings = false;
            c.rope.yarn = Some(Yarn {
                factor: 32.0,
                original_max_positions: 4096,
                beta_fast: 32.0,
                beta_slow: 1.0,
                mscale: 1.0,
                mscale_all_dim: 0.0,
            });
            c.rope.scaling = Some("yarn 32".into());
            c.qkv_bias = true;
            c.o_bias = true;
            c.attn_sinks = true;
            c.sliding_window = Some(16);
            c.local_layers = vec![true];
            c.moe = Some(Moe {
                experts: 32,
                experts_used: 4,
                expert_intermediate: 2880,
                norm_topk: false,
                gating: Gating::SoftmaxOfChosen,
                biases: true,
                clamped: Some(SwigluClamp {
                    alpha: 1.702,
                    limit: 7.0,
                }),
            });
            c
        }
        // Issue 44. Qwen3.5-0.8B (config.json's text_config): 24 layers cut to 4, one whole
        // period of three gated delta-net layers and one full-attention layer; 16 key and 16
        // value heads of 128, a convolution of 4 taps; attention of 8 heads of 256 over 2 KV
        // heads with an output gate, rope over 64 dimensions at base 10⁷ (sections 11, 11, 10).
        "qwen35-0.8b" => qwen35(1024, 3584),
        // Qwen3.5-2B: the same but for the width, 2048, and the MLP's, 6144.
        "qwen35-2b" => qwen35(2048, 6144),
        // Issue 43. Gemma 4 E2B (35 layers, config.json's text_config) cut to 4: a local and a
        // global layer with keys and values of their own, then one of each attending with
        // theirs (its last 20 layers share; llama.cpp's layers n − 2 and n − 1), their MLPs
        // twice as wide as E2B's shared layers' are. Heads of 256 (local, rope base 10⁴) and 512
        // (global, base 10⁶, a quarter of the pairs turning), one KV head, per-layer inputs of
        // 256, final soft-cap 30. Its window of 512 is cut to 16, so that the contexts cross it.
        "gemma4-e2b-window16" => {
            let mut c = base("gemma4", 1536, 6144, 8, 1, 512);
            c.layers = 4;
            c.activation = Activation::GeluTanh;
            c.embed_scale = Some((1536f32).sqrt());
            c.post_norms = true;
            c.qk_norm = true;
            c.v_norm = true;
            c.attn_scale = 1.0;
            c.final_softcap = Some(30.0);
            c.max_positions = 131_072;
            c.rope.theta = 1_000_000.0;
            c.rope.freq_factors = Some(gemma4::proportional(512, 64));
            c.rope.scaling = Some("proportional, 64 of 256 pairs turning".into());
            c.head_dim_local = Some(256);
            c.rope_local = Some(Rope {
                theta: 10_000.0,
                rotary_dim: 256,
                freq_factors: None,
                scaling: None,
                ..c.rope.clone()
            });
            c.sliding_window = Some(16);
            c.local_layers = vec![true, false, true, false];
            c.kv_source = vec![None, None, Some(0), Some(1)];
            c.layer_intermediate = vec![6144, 6144, 12_288, 12_288];
            c.per_layer_input = Some(256);
            c.layer_scale = true;
            c
        }
        _ => return None,
    })
}

/// How the tensor `stored`, of `rank` dimensions, is stored in a file of `store`. The
/// embedding stays f32 in the quantised files, as in the mixes llama.cpp writes for small
/// vocabularies; every matrix of the blocks is Q8_0. Biases too (gpt-oss's experts' are
/// matrices, `[experts, n]`): llama.cpp adds them as f32 only (`ggml_add_id`), as its converter
/// writes them. The convolution's 4 taps per row cannot form Q8_0 blocks; llama-quantize keeps
/// it f32. Vectors are f32, as llama.cpp's converter stores them.
fn stored_as(stored: &str, rank: usize, store: Store) -> Store {
    if stored == "token_embd.weight"
        || stored.ends_with(".bias")
        || stored.ends_with("ssm_conv1d.weight")
        || rank < 2
    {
        Store::F32
    } else {
        store
    }
}

/// Qwen3.5's shapes at width `hidden` and MLP width `intermediate`, 4 layers (config above).
fn qwen35(hidden: usize, intermediate: usize) -> Config {
    let mut c = base("qwen35", hidden, intermediate, 8, 2, 256);
    c.layers = 4;
    c.rope.theta = 10_000_000.0;
    c.rope.rotary_dim = 64;
    c.max_positions = 262_144;
    c.qk_norm = true;
    c.attn_gate = true;
    c.delta_net = Some(DeltaNet {
        conv_kernel: 4,
        k_heads: 16,
        v_heads: 16,
        head_dim: 128,
        recurrent: crate::model::family::qwen35::recurrent_every(4, 4),
        rope_sections: vec![11, 11, 10, 0],
    });
    c
}

/// Ministral 3 3B's shapes with the original window `original`.
fn ministral3(original: usize) -> Config {
    let mut c = base("mistral3", 3072, 9216, 32, 8, 128);
    c.norm_eps = 1e-5;
    c.rope.theta = 1_000_000.0;
    c.rope.layout = RopeLayout::Interleaved;
    c.max_positions = 262_144;
    c.rope.yarn = Some(Yarn {
        factor: 16.0,
        original_max_positions: original,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: 1.0,
        mscale_all_dim: 1.0,
    });
    c.rope.scaling = Some("yarn 16".into());
    c.attn_temperature = Some(AttnTemperature {
        beta: 0.1,
        floor: original,
    });
    c
}

/// Writes `dir/<name>-<f32|q8_0>.gguf` and returns its path.
pub fn write(dir: &Path, name: &str, store: Store) -> Result<PathBuf, ModelError> {
    let cfg = config(name)
        .ok_or_else(|| crate::model::invalid(dir, format!("no family file {name:?}")))?;
    write_config(dir, name, &cfg, store)
}

/// Writes `dir/<name>-<f32|q8_0>.gguf` for `cfg` (any config of a built-in family, e.g. a
/// tiny one a test needs), with the weights drawn as for the family files, and returns its path.
pub fn write_config(
    dir: &Path,
    name: &str,
    cfg: &Config,
    store: Store,
) -> Result<PathBuf, ModelError> {
    let path = dir.join(file_name(name, store));
    for w in writers(dir, name, cfg, &[store])? {
        w.write(&path)?;
    }
    Ok(path)
}

/// The name `write` gives the file `name` stored as `store`.
pub fn file_name(name: &str, store: Store) -> String {
    let suffix = match store {
        Store::F32 => "f32",
        Store::F16 => "f16",
        Store::Q8_0 => "q8_0",
    };
    format!("{name}-{suffix}.gguf")
}

/// The files of `write_config`, one per store, built but not written (`GgufWriter::write_into`
/// streams one, e.g. into memory), the weights drawn once for all of them; `dir` holds a
/// temporary tokenizer file while they are built.
pub fn writers(
    dir: &Path,
    name: &str,
    cfg: &Config,
    stores: &[Store],
) -> Result<Vec<GgufWriter>, ModelError> {
    let cfg = cfg.clone();
    let family = FAMILIES
        .by_arch(&cfg.arch)
        .ok_or_else(|| crate::model::invalid(dir, format!("no family {:?}", cfg.arch)))?;
    let mut w = GgufWriter::default();
    config_metadata(&mut w, &cfg, family);
    // Not the file name: llama.cpp changes token attributes for a general.name containing
    // "phi3", which needs that family's own special tokens.
    let real = FILES.iter().find(|f| f.0 == name).map_or(name, |f| f.1);
    w.kv(
        "general.name",
        Meta::Str(format!("{real} shapes, random weights")),
    );
    let tok = dir.join(format!("{name}-tokenizer.json"));
    crate::model::format::hf::write(
        &tok,
        &crate::model::format::hf::pretty(&crate::model::dev::fixtures::tokenizer_json()),
    )?;
    tokenizer_from_json(&mut w, &tok)?;
    let _ = std::fs::remove_file(&tok);
    let naming = family.gguf_namings()[0];
    let mut rng = Rng::derive(SEED, name);
    let clamped = cfg.moe.as_ref().is_some_and(|m| m.clamped.is_some());
    // Per store, each stored tensor's bytes: a part is encoded as soon as it is drawn, so
    // that no f32 copy of a multi-GB file is held.
    let mut stacked: Vec<Vec<(String, Vec<usize>, Vec<u8>)>> = vec![Vec::new(); stores.len()];
    for (part, shape) in Transformer::parts(&cfg) {
        let n: usize = shape.iter().product();
        let fan_in = *shape.last().unwrap_or(&1);
        let scale = (3.0 / fan_in as f64).sqrt();
        let vector = shape.len() == 1;
        let gemma_norm = cfg.post_norms
            && vector
            && !matches!(part, Part::QBias(_) | Part::KBias(_) | Part::VBias(_));
        let data: Vec<f32> = (0..n)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                (match part {
                    Part::Embed | Part::LmHead => 0.3 * u,
                    // gpt-oss: gate and up five times as wide, so that a share of them passes
                    // the clamp at 7 on both sides.
                    Part::ExpertGate(..) | Part::ExpertUp(..) if clamped => 5.0 * u * scale,
                    // A decay below 1 (`A = −exp(A_log)` is negative), and small time-step
                    // biases, as the released weights have. `A` is −exp of an f32 `A_log` (as
                    // a checkpoint's is), so that `model export-hf` can store it.
                    Part::Ssm(_, Ssm::A) => -(((0.6 * u) as f32) as f64).exp(),
                    Part::Ssm(_, Ssm::Dt) => 0.5 * u,
                    _ if gemma_norm => 1.0 + 0.2 * u,
                    _ if vector => 1.0 + 0.2 * u,
                    _ => u * scale,
                }) as f32
            })
            .collect();
        let name = naming(part);
        let (stored, expert) = stored_name(&name);
        for (&store, stacked) in stores.iter().zip(&mut stacked) {
            let s = stored_as(stored, shape.len() + usize::from(expert), store);
            stack(stacked, &name, &shape, encode(&data, s));
        }
    }
    let mut out = Vec::with_capacity(stores.len());
    for (&store, stacked) in stores.iter().zip(stacked) {
        let mut w = w.clone();
        for (name, shape, bytes) in stacked {
            let id = stored_as(&name, shape.len(), store).type_id();
            w.raw_tensor(name, &shape, id, bytes);
        }
        rope_factor_tensors(&mut w, &cfg);
        out.push(w);
    }
    Ok(out)
}
