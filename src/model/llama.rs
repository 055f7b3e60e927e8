//! Llama. Its tensor names (Hugging Face and GGUF) are shared by Qwen2 and Qwen3, which differ
//! from it only in config flags.

use super::config::{gguf_base_config, Config, HfJson, RopeLayout};
use super::gguf::Gguf;
use super::transformer::Part;
use super::ModelError;

pub fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    json.no_rope_scaling("llama")?;
    if json.bool_or("mlp_bias", false)? {
        return Err(super::config::invalid(
            &json.path,
            "mlp_bias is not supported",
        ));
    }
    json.base_config("llama")
}

pub fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    let mut cfg = gguf_base_config(g, "llama")?;
    // convert_hf_to_gguf permutes llama's q/k rows so that ggml's pairwise rope applies.
    cfg.rope.layout = RopeLayout::Interleaved;
    cfg.qkv_bias = g.tensor_info("blk.0.attn_q.bias").is_some();
    Ok(cfg)
}

/// Hugging Face names.
pub fn hf_name(part: Part) -> String {
    let layer = |l: usize, s: &str| format!("model.layers.{l}.{s}");
    match part {
        Part::Embed => "model.embed_tokens.weight".into(),
        Part::FinalNorm => "model.norm.weight".into(),
        Part::LmHead => "lm_head.weight".into(),
        Part::AttnNorm(l) => layer(l, "input_layernorm.weight"),
        Part::Q(l) => layer(l, "self_attn.q_proj.weight"),
        Part::K(l) => layer(l, "self_attn.k_proj.weight"),
        Part::V(l) => layer(l, "self_attn.v_proj.weight"),
        Part::QBias(l) => layer(l, "self_attn.q_proj.bias"),
        Part::KBias(l) => layer(l, "self_attn.k_proj.bias"),
        Part::VBias(l) => layer(l, "self_attn.v_proj.bias"),
        Part::QNorm(l) => layer(l, "self_attn.q_norm.weight"),
        Part::KNorm(l) => layer(l, "self_attn.k_norm.weight"),
        Part::O(l) => layer(l, "self_attn.o_proj.weight"),
        Part::MlpNorm(l) => layer(l, "post_attention_layernorm.weight"),
        Part::Gate(l) => layer(l, "mlp.gate_proj.weight"),
        Part::Up(l) => layer(l, "mlp.up_proj.weight"),
        Part::Down(l) => layer(l, "mlp.down_proj.weight"),
    }
}

/// GGUF (llama.cpp) names.
pub fn gguf_name(part: Part) -> String {
    let blk = |l: usize, s: &str| format!("blk.{l}.{s}");
    match part {
        Part::Embed => "token_embd.weight".into(),
        Part::FinalNorm => "output_norm.weight".into(),
        Part::LmHead => "output.weight".into(),
        Part::AttnNorm(l) => blk(l, "attn_norm.weight"),
        Part::Q(l) => blk(l, "attn_q.weight"),
        Part::K(l) => blk(l, "attn_k.weight"),
        Part::V(l) => blk(l, "attn_v.weight"),
        Part::QBias(l) => blk(l, "attn_q.bias"),
        Part::KBias(l) => blk(l, "attn_k.bias"),
        Part::VBias(l) => blk(l, "attn_v.bias"),
        Part::QNorm(l) => blk(l, "attn_q_norm.weight"),
        Part::KNorm(l) => blk(l, "attn_k_norm.weight"),
        Part::O(l) => blk(l, "attn_output.weight"),
        Part::MlpNorm(l) => blk(l, "ffn_norm.weight"),
        Part::Gate(l) => blk(l, "ffn_gate.weight"),
        Part::Up(l) => blk(l, "ffn_up.weight"),
        Part::Down(l) => blk(l, "ffn_down.weight"),
    }
}
