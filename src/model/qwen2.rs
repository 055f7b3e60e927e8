//! Qwen2: Llama with biases on q, k and v, and rotate-halves RoPE in GGUF too. Tensor names are
//! Llama's.

use super::config::{apply_linear, gguf_base_config, refuse_unknown_keys, Config, HfJson};
use super::gguf::Gguf;
use super::ModelError;

pub fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    let linear = json.no_rope_scaling("qwen2")?;
    json.no_sliding_window("qwen2")?;
    json.expect_activation(&["silu"])?;
    let mut cfg = json.base_config("qwen2")?;
    apply_linear(&mut cfg, linear);
    cfg.qkv_bias = true;
    Ok(cfg)
}

pub fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, "qwen2", &[])?;
    let mut cfg = gguf_base_config(g, "qwen2")?;
    cfg.qkv_bias = true;
    Ok(cfg)
}
