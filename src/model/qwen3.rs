//! Qwen3: Llama with a per-head RMSNorm on q and k before RoPE, an explicit head_dim, and
//! rotate-halves RoPE in GGUF too. Tensor names are Llama's.

use super::config::{gguf_base_config, Config, HfJson};
use super::gguf::Gguf;
use super::ModelError;

pub fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    json.no_rope_scaling("qwen3")?;
    let mut cfg = json.base_config("qwen3")?;
    cfg.qk_norm = true;
    Ok(cfg)
}

pub fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    let mut cfg = gguf_base_config(g, "qwen3")?;
    cfg.qk_norm = true;
    Ok(cfg)
}
