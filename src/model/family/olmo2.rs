//! OLMo 2 (`Olmo2ForCausalLM`; GGUF `olmo2`): Llama's tensors and SwiGLU MLP with the norms
//! moved and widened:
//! - no norm on a block's input: attention and the MLP read the residual stream as it is, and
//!   their outputs are normed before each residual add (`post_attention_layernorm`,
//!   `post_feedforward_layernorm`; GGUF `post_attention_norm`, `post_ffw_norm`);
//! - q and k are each normed once over the whole projection of a token, all heads together
//!   (`q_norm` of `heads · head_dim`, `k_norm` of `kv_heads · head_dim`), before RoPE;
//! - rotate-halves RoPE in both formats (no row permutation), and its own LM head
//!   (`lm_head.weight`, GGUF `output.weight`, which llama.cpp requires).
//!
//! Both formats name the tensors as Llama does (`llama::hf_name`, `llama::gguf_name`).
//! OLMo 3 is written to GGUF as `olmo2` with a sliding window on three layers of four and YaRN
//! on the others; its `olmo2.attention.sliding_window*` keys are refused by name.

use crate::model::block::config::Config;
use crate::model::family::read::apply_linear;
use crate::model::family::read::gguf_base_config;
use crate::model::family::read::refuse_fused_qkv_and_partial_rope;
use crate::model::family::read::refuse_unknown_keys;
use crate::model::family::read::HfJson;
use crate::model::format::gguf::Gguf;
use crate::model::invalid;
use crate::model::ModelError;

/// What both formats share once read: the norms' places and sizes.
fn olmo2(mut cfg: Config, path: &std::path::Path) -> Result<Config, ModelError> {
    // llama.cpp sizes q, its norm and the output projection by the hidden size.
    if cfg.heads * cfg.head_dim != cfg.hidden {
        return Err(invalid(
            path,
            format!(
                "{} heads of {} differ from the hidden size {}: not implemented for olmo2",
                cfg.heads, cfg.head_dim, cfg.hidden
            ),
        ));
    }
    cfg.pre_norms = false;
    cfg.post_norms = true;
    cfg.qk_norm = true;
    cfg.qk_norm_whole = true;
    Ok(cfg)
}

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    json.expect_activation(&["silu"])?;
    for key in ["sliding_window", "layer_types"] {
        if let Some(v) = json.get(key) {
            return Err(invalid(
                &json.path,
                format!("{key} {v} is not implemented for olmo2"),
            ));
        }
    }
    let linear = json.no_rope_scaling("olmo2")?;
    let theta = json.default_rope_parameters("olmo2")?;
    let mut cfg = json.base_config("olmo2")?;
    if let Some(theta) = theta {
        cfg.rope.theta = theta;
    }
    apply_linear(&mut cfg, linear);
    olmo2(cfg, &json.path)
}

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, "olmo2", &[])?;
    let mut cfg = gguf_base_config(g, "olmo2")?;
    cfg.qkv_bias = g.tensor_info("blk.0.attn_q.bias").is_some();
    refuse_fused_qkv_and_partial_rope(g, &cfg)?;
    // llama.cpp reads `output.weight` as required: never the embedding.
    cfg.tied_embeddings = false;
    olmo2(cfg, g.path())
}

pub struct Olmo2;

impl super::Family for Olmo2 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        vec![Fixture {
            olmo: true,
            qk_norm: true,
            tied: false,
            theta: 500_000.0,
            ..Fixture::base("olmo2", "Olmo2ForCausalLM")
        }]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![
            // OLMo 2 1B (16 layers): untied, no pre-norms, q/k norms over the whole projection.
            FamilyFile {
                name: "olmo2-1b",
                real: "OLMo-2-0425-1B",
                config: || {
                    let mut c = base("olmo2", 2048, 8192, 16, 16, 128);
                    c.rope.theta = 500_000.0;
                    c.max_positions = 4096;
                    c.tied_embeddings = false;
                    c.pre_norms = false;
                    c.post_norms = true;
                    c.qk_norm = true;
                    c.qk_norm_whole = true;
                    c
                },
            },
        ]
    }

    fn gguf_arch(&self) -> &'static str {
        "olmo2"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Olmo2ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["olmo2"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        crate::model::family::read::linear_scaling_json(cfg, json);
    }
}
