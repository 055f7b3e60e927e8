//! Qwen3: Llama with a per-head RMSNorm on q and k before RoPE, an explicit head_dim, and
//! rotate-halves RoPE in GGUF too. Tensor names are Llama's.

use super::config::{apply_linear, gguf_base_config, refuse_unknown_keys, Config, HfJson};
use super::gguf::Gguf;
use super::ModelError;

pub fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    let linear = json.no_rope_scaling("qwen3")?;
    json.no_sliding_window("qwen3")?;
    json.expect_activation(&["silu"])?;
    let mut cfg = json.base_config("qwen3")?;
    apply_linear(&mut cfg, linear);
    cfg.qk_norm = true;
    Ok(cfg)
}

pub fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, "qwen3", &[])?;
    let mut cfg = gguf_base_config(g, "qwen3")?;
    cfg.qk_norm = true;
    Ok(cfg)
}
