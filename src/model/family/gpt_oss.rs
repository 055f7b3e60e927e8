//! gpt-oss (issue 45; llama.cpp's `gpt-oss`, `LLM_ARCH_OPENAI_MOE`), from GGUF, as llama.cpp
//! 0.3.36's `openai-moe.cpp` builds it over the shared block:
//! - attention with biases on q, k, v and the output, and one **sink** logit per head
//!   (`blk.N.attn_sinks`), a share of each softmax with no value;
//! - **alternating** sliding-window and full layers: layer `l` is local when `l` is even
//!   (llama.cpp's default pattern of 2; `attention.sliding_window_pattern` as a count or a list
//!   of flags, read as Gemma's), window `attention.sliding_window`;
//! - YaRN rope (read as Mistral 3 reads it), rotate-halves; the local layers at
//!   `rope.freq_base_swa` when the file gives one (llama.cpp's `get_rope_freq_base`, with the
//!   same YaRN scaling; the released files have none);
//! - the norm before the experts is `blk.N.post_attention_norm` (its name, not its place);
//! - a mixture of experts with a biased router: the `expert_used_count` highest scores choose
//!   (ties to the lower index), the softmax runs over the chosen scores only (llama.cpp's
//!   `SOFTMAX_WEIGHT`), no renormalisation; every expert's gate, up and down carry biases, and
//!   the activation is ggml's `swiglu_oai`: `g = min(gate, 7)`, `u = clamp(up, −7, 7)`,
//!   `g · sigmoid(1.702 g) · (u + 1)`.
//!
//! MXFP4 experts (every real gpt-oss GGUF's) are dequantised tile by tile in the f32 mode and
//! multiplied by llama.cpp's integer MXFP4 product in the integer mode (`numerics::qmatmul`).
//!
//! Hugging Face checkpoints (`GptOssForCausalLM`) are read in both forms transformers writes,
//! their fused experts served expert by expert by [`hf::Experts`], and `model export-hf` writes
//! the dense form ([`hf::layout`]); config.json is read by [`config_from_hf`] into the config
//! the GGUF reader gives for the same model.
//!
//! Not implemented, refused by name: any other `gpt-oss.` key, config.json values llama.cpp's
//! graph fixes (another SwiGLU limit or gain, attention without biases), and a tied LM head
//! (llama.cpp requires `output.weight`). The released config.json's YaRN does not round its
//! ramp's ends (`truncate` false), where llama.cpp always does: read as transformers reads it
//! (`Yarn::truncate`), so such a checkpoint scores as transformers scores it, not as its GGUF
//! conversion.
//! The `o200k_harmony` tokenizer is llama.cpp's `gpt-4o` pre-tokenizer over an o200k vocabulary
//! (read like Phi-4-mini's; checked against llama.cpp and openai-harmony in
//! `tokenizer_golden::o200k_harmony_vocab_matches_llama_cpp`); its chat format, harmony, is
//! rendered by `benchmarks::harmony`.

mod hf;

use serde_json::{json, Map, Value};

use super::gemma2::{gguf_local_layers, hf_layer_types, hf_local_layers};
use super::mistral3::{gguf_yarn, hf_rope, yarn_json};
use super::read::{
    gguf_config_with, gguf_local_base, refuse_fused_qkv_and_partial_rope, refuse_unknown_keys,
    HfJson,
};
use super::{llama, qwen3moe, Family, StoredLayout};
use crate::model::block::config::{Config, Gating, Moe, SwigluClamp};
use crate::model::block::transformer::{Naming, Part, TensorFile};
use crate::model::format::gguf::Gguf;
use crate::model::{invalid, ModelError};

pub struct GptOss;

/// The `gpt-oss.` keys read here beside the common ones.
const OWN_KEYS: &[&str] = &[
    "expert_count",
    "expert_used_count",
    "expert_feed_forward_length",
    "attention.sliding_window",
    "attention.sliding_window_pattern",
    "rope.scaling.yarn_beta_fast",
    "rope.scaling.yarn_beta_slow",
    "rope.scaling.yarn_log_multiplier",
    "rope.freq_base_swa",
];

/// llama.cpp's constants for `LLM_FFN_SWIGLU_OAI_MOE` (`build_moe_ffn`).
const SWIGLU: SwigluClamp = SwigluClamp {
    alpha: 1.702,
    limit: 7.0,
};

/// GGUF names: llama.cpp's generic ones, but the norm before the experts.
pub fn gguf_name(part: Part) -> String {
    match part {
        Part::MlpNorm(l) => format!("blk.{l}.post_attention_norm.weight"),
        other => llama::gguf_name(other),
    }
}

/// Hugging Face names: Llama's, the router's own, and the experts' fused tensors, `[gate E]`
/// and `[up E]` the interleaved halves of `gate_up_proj` (and its bias) for expert `E`, `[E]`
/// expert `E` of `down_proj` (`hf::Experts` serves them).
pub fn hf_name(part: Part) -> String {
    let layer = |l: usize, s: &str| format!("model.layers.{l}.{s}");
    let experts = |l: usize, s: String| layer(l, &format!("mlp.experts.{s}"));
    match part {
        Part::Router(l) => layer(l, "mlp.router.weight"),
        Part::ExpertGate(l, e) => experts(l, format!("gate_up_proj[gate {e}]")),
        Part::ExpertUp(l, e) => experts(l, format!("gate_up_proj[up {e}]")),
        Part::ExpertDown(l, e) => experts(l, format!("down_proj[{e}]")),
        Part::ExpertGateBias(l, e) => experts(l, format!("gate_up_proj_bias[gate {e}]")),
        Part::ExpertUpBias(l, e) => experts(l, format!("gate_up_proj_bias[up {e}]")),
        Part::ExpertDownBias(l, e) => experts(l, format!("down_proj_bias[{e}]")),
        other => llama::hf_name(other),
    }
}

/// transformers' `GptOssConfig` read into the config the GGUF reader gives for the same model.
/// Keys that only training reads (`router_aux_loss_coef`, `output_router_logits`,
/// `attention_dropout`, `initializer_range`) change no score and are passed by.
fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    let refuse = |what: String| Err(invalid(&json.path, what));
    json.expect_activation(&["silu"])?;
    hf::form(json)?;
    if !json.bool_or("attention_bias", true)? {
        return refuse(
            "attention_bias false is not implemented for gpt-oss (llama.cpp's gpt-oss reads \
             biases on q, k, v and the output)"
                .into(),
        );
    }
    if json.bool_or("tie_word_embeddings", false)? {
        return refuse(
            "tie_word_embeddings true is not implemented for gpt-oss (llama.cpp requires its \
             own LM head)"
                .into(),
        );
    }
    for (key, fixed) in [
        ("swiglu_limit", SWIGLU.limit),
        ("swiglu_alpha", SWIGLU.alpha),
    ] {
        if let Some(v) = json.opt_f32(key)? {
            if v != fixed {
                return refuse(format!(
                    "{key} {v} is not implemented: llama.cpp's gpt-oss fixes it at {fixed}"
                ));
            }
        }
    }
    if json.get("rope_parameters").is_none() && json.get("rope_scaling").is_none() {
        // transformers then applies its own default; a config that says nothing is taken as
        // saying too little to be read with certainty.
        return refuse(
            "neither rope_parameters nor rope_scaling: transformers' default rope for gpt-oss \
             is not read from an absent key; give it"
                .into(),
        );
    }
    let mut cfg = json.base_config("gpt-oss")?;
    hf_rope(json, &mut cfg, "gpt-oss")?;
    cfg.qkv_bias = true;
    cfg.o_bias = true;
    cfg.attn_sinks = true;
    cfg.sliding_window = Some(json.usize("sliding_window")?);
    // transformers' default without `layer_types`: even layers sliding, llama.cpp's pattern of 2.
    cfg.local_layers = hf_local_layers(json, cfg.layers, 2)?;
    let width = json.usize("intermediate_size")?;
    cfg.moe = Some(Moe {
        experts: json.usize("num_local_experts")?,
        experts_used: json.usize("num_experts_per_tok")?,
        expert_intermediate: width,
        norm_topk: false,
        gating: Gating::SoftmaxOfChosen,
        biases: true,
        clamped: Some(SWIGLU),
    });
    Ok(cfg)
}

/// config.json's gpt-oss keys, as [`config_from_hf`] reads them back (the dense form: no
/// `quantization_config`).
fn hf_config(cfg: &Config, json: &mut Map<String, Value>) {
    if let Some(y) = &cfg.rope.yarn {
        let mut p = Map::new();
        yarn_json(y, &mut p);
        // Said either way: transformers' default for gpt-oss when absent is false.
        p.insert("truncate".into(), json!(y.truncate));
        json.insert("rope_scaling".into(), Value::Object(p));
    }
    if let Some(w) = cfg.sliding_window {
        json.insert("sliding_window".into(), json!(w));
    }
    json.insert("layer_types".into(), hf_layer_types(cfg));
    json.insert("swiglu_limit".into(), json!(f64::from(SWIGLU.limit)));
    json.insert("swiglu_alpha".into(), json!(f64::from(SWIGLU.alpha)));
    json.insert("hidden_act".into(), json!("silu"));
    json.insert("attention_bias".into(), json!(cfg.qkv_bias));
    if let Some(m) = &cfg.moe {
        json.insert("num_local_experts".into(), json!(m.experts));
        json.insert("num_experts_per_tok".into(), json!(m.experts_used));
        json.insert("intermediate_size".into(), json!(m.expert_intermediate));
    }
}

impl Family for GptOss {
    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::block::config::{Gating, Moe, SwigluClamp, Yarn};
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![
            // gpt-oss-20b (24 layers) cut to 1, a local layer, with its window of 128 cut to 16 so
            // that the contexts cross it: its 32 experts of width 2880 are 3.2 GB of f32 per layer.
            // YaRN factor 32 over 4096 positions, sinks, biases, the clamped SwiGLU.
            FamilyFile {
                name: "gpt-oss-20b-window16",
                real: "gpt-oss-20b",
                config: || {
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
                        truncate: true,
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
                },
            },
        ]
    }

    fn gguf_arch(&self) -> &'static str {
        "gpt-oss"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["GptOssForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["gpt_oss"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        refuse_unknown_keys(g, "gpt-oss", OWN_KEYS)?;
        let mut cfg = gguf_config_with(g, "gpt-oss", &["yarn"])?;
        refuse_fused_qkv_and_partial_rope(g, &cfg)?;
        gguf_yarn(g, "gpt-oss", &mut cfg)?;
        if cfg.tied_embeddings {
            return Err(invalid(
                g.path(),
                "no output.weight: llama.cpp's gpt-oss requires its own LM head",
            ));
        }
        let key = |k: &str| format!("gpt-oss.{k}");
        cfg.qkv_bias = true;
        cfg.o_bias = true;
        cfg.attn_sinks = true;
        cfg.sliding_window = Some(g.get_u32(&key("attention.sliding_window"))? as usize);
        cfg.local_layers = gguf_local_layers(g, "gpt-oss", cfg.layers, 2)?;
        gguf_local_base(g, "gpt-oss", &mut cfg)?;
        cfg.moe = Some(Moe {
            experts: g.get_u32(&key("expert_count"))? as usize,
            experts_used: g.get_u32(&key("expert_used_count"))? as usize,
            expert_intermediate: g.get_u32(&key("expert_feed_forward_length"))? as usize,
            norm_topk: false,
            gating: Gating::SoftmaxOfChosen,
            biases: true,
            clamped: Some(SWIGLU),
        });
        Ok(cfg)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[gguf_name]
    }

    fn gguf_view<'a>(&self, file: &'a dyn TensorFile, _cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(qwen3moe::ExpertSlices { inner: file })
    }

    fn hf_naming(&self) -> Naming {
        hf_name
    }

    fn hf_view<'a>(&self, file: &'a dyn TensorFile, _cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(hf::Experts::new(file))
    }

    fn hf_layout(&self, parts: &[(Part, Vec<usize>)]) -> Option<StoredLayout> {
        hf::layout(parts)
    }

    fn hf_config(&self, cfg: &Config, json: &mut Map<String, Value>) {
        hf_config(cfg, json)
    }

    fn gguf_metadata(&self, cfg: &Config) -> Vec<(String, crate::model::format::gguf::Value)> {
        use crate::model::format::gguf::Value as V;
        let Some(m) = &cfg.moe else {
            return Vec::new();
        };
        let key = |k: &str| format!("gpt-oss.{k}");
        vec![
            (key("expert_count"), V::U32(m.experts as u32)),
            (key("expert_used_count"), V::U32(m.experts_used as u32)),
            (
                key("expert_feed_forward_length"),
                V::U32(m.expert_intermediate as u32),
            ),
        ]
    }
}
