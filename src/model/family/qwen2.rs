//! Qwen2: Llama with biases on q, k and v, and rotate-halves RoPE in GGUF too. Tensor names are
//! Llama's.

use super::read::{
    apply_linear, gguf_base_config, linear_scaling_json, refuse_unknown_keys, HfJson,
};
use super::Family;
use crate::model::block::config::Config;
use crate::model::format::gguf::Gguf;
use crate::model::ModelError;

pub struct Qwen2;

impl Family for Qwen2 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use safetensors::tensor::Dtype;
        vec![Fixture {
            committed: true,
            kv_heads: 1,
            qkv_bias: true,
            tied: false,
            dtype: Dtype::BF16,
            theta: 1_000_000.0,
            ..Fixture::base("qwen2", "Qwen2ForCausalLM")
        }]
    }

    fn gguf_arch(&self) -> &'static str {
        "qwen2"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Qwen2ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["qwen2"]
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        let linear = json.no_rope_scaling("qwen2")?;
        json.no_sliding_window("qwen2")?;
        json.expect_activation(&["silu"])?;
        let mut cfg = json.base_config("qwen2")?;
        apply_linear(&mut cfg, linear);
        cfg.qkv_bias = true;
        Ok(cfg)
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        refuse_unknown_keys(g, "qwen2", &[])?;
        let mut cfg = gguf_base_config(g, "qwen2")?;
        cfg.qkv_bias = true;
        Ok(cfg)
    }

    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        linear_scaling_json(cfg, json);
    }
}
