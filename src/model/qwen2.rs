//! Qwen2: Llama with biases on q, k and v, and rotate-halves RoPE in GGUF too. Tensor names are
//! Llama's.

use super::config::{gguf_base_config, Config, HfJson};
use super::gguf::Gguf;
use super::ModelError;

pub fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    json.no_rope_scaling("qwen2")?;
    let mut cfg = json.base_config("qwen2")?;
    cfg.qkv_bias = true;
    Ok(cfg)
}

pub fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    let mut cfg = gguf_base_config(g, "qwen2")?;
    cfg.qkv_bias = true;
    Ok(cfg)
}
