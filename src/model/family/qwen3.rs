//! Qwen3: Llama with a per-head RMSNorm on q and k before RoPE, an explicit head_dim, and
//! rotate-halves RoPE in GGUF too. Tensor names are Llama's.

use super::read::{
    apply_linear, gguf_base_config, linear_scaling_json, refuse_unknown_keys, HfJson,
};
use super::Family;
use crate::model::block::config::Config;
use crate::model::format::gguf::Gguf;
use crate::model::ModelError;

pub struct Qwen3;

impl Family for Qwen3 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use safetensors::tensor::Dtype;
        vec![
            // head_dim deliberately differs from hidden / heads, as in real Qwen3 models.
            Fixture {
                committed: true,
                head_dim: 24,
                qk_norm: true,
                tied: false,
                dtype: Dtype::F16,
                shards: 2,
                ..Fixture::base("qwen3", "Qwen3ForCausalLM")
            },
        ]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![FamilyFile {
            name: "qwen3-0.6b",
            real: "Qwen3-0.6B",
            config: || {
                let mut c = base("qwen3", 1024, 3072, 16, 8, 128);
                c.rope.theta = 1_000_000.0;
                c.qk_norm = true;
                c.max_positions = 40_960;
                c
            },
        }]
    }

    fn gguf_arch(&self) -> &'static str {
        "qwen3"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Qwen3ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["qwen3"]
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        let linear = json.no_rope_scaling("qwen3")?;
        json.no_sliding_window("qwen3")?;
        json.expect_activation(&["silu"])?;
        let mut cfg = json.base_config("qwen3")?;
        apply_linear(&mut cfg, linear);
        cfg.qk_norm = true;
        Ok(cfg)
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        refuse_unknown_keys(g, "qwen3", &[])?;
        let mut cfg = gguf_base_config(g, "qwen3")?;
        cfg.qk_norm = true;
        Ok(cfg)
    }

    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        linear_scaling_json(cfg, json);
    }
}
