//! SmolLM3 (`SmolLM3ForCausalLM`; GGUF `smollm3`): Llama's block and tensor names, with one
//! difference: every fourth layer (3, 7, 11, …) runs attention without RoPE at all ("NoPE").
//! llama.cpp fixes that step at 4 (`n_no_rope_layer_step`); transformers reads it from
//! `no_rope_layers` (1: RoPE, 0: none), or makes it from `no_rope_layer_interval` (default 4).
//!
//! convert_hf_to_gguf converts SmolLM3 as a Llama model, so its GGUF files hold the q/k rows
//! permuted for pairwise RoPE and a Hugging Face checkpoint loads through `llama::GgufOrder`,
//! giving the same bits from both formats. The LM head is the embedding unless the file has
//! its own (`output.weight`, `lm_head.weight`).

use crate::model::block::config::Config;
use crate::model::block::config::RopeLayout;
use crate::model::family::read::apply_linear;
use crate::model::family::read::gguf_base_config;
use crate::model::family::read::refuse_fused_qkv_and_partial_rope;
use crate::model::family::read::refuse_unknown_keys;
use crate::model::family::read::HfJson;
use crate::model::format::gguf::Gguf;
use crate::model::invalid;
use crate::model::ModelError;

/// llama.cpp's `n_no_rope_layer_step`, and transformers' default `no_rope_layer_interval`.
const NO_ROPE_STEP: usize = 4;

/// Layer `l` runs without RoPE when `(l + 1)` is a multiple of `step`.
fn every(layers: usize, step: usize) -> Vec<bool> {
    (0..layers).map(|l| (l + 1) % step == 0).collect()
}

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    if json.bool_or("mlp_bias", false)? {
        return Err(invalid(
            &json.path,
            "mlp_bias is not implemented for smollm3",
        ));
    }
    json.expect_activation(&["silu"])?;
    json.no_sliding_window("smollm3")?;
    if let Some(types) = json.get("layer_types") {
        let full = types
            .as_array()
            .is_some_and(|t| t.iter().all(|t| t.as_str() == Some("full_attention")));
        if !full {
            return Err(invalid(
                &json.path,
                format!("layer_types {types} is not implemented for smollm3 (only full_attention)"),
            ));
        }
    }
    let linear = json.no_rope_scaling("smollm3")?;
    let theta = json.default_rope_parameters("smollm3")?;
    let mut cfg = json.base_config("smollm3")?;
    if let Some(theta) = theta {
        cfg.rope.theta = theta;
    }
    // Loaded through `llama::GgufOrder` (module docs).
    cfg.rope.layout = RopeLayout::Interleaved;
    apply_linear(&mut cfg, linear);
    cfg.tied_embeddings = json.bool_or("tie_word_embeddings", true)?;
    cfg.no_rope_layers = match json.get("no_rope_layers") {
        Some(list) => {
            let flags = list.as_array().map(|l| {
                l.iter()
                    .map(|v| match v.as_u64() {
                        Some(1) => Some(false),
                        Some(0) => Some(true),
                        _ => None,
                    })
                    .collect::<Option<Vec<bool>>>()
            });
            match flags {
                Some(Some(f)) if f.len() >= cfg.layers => f[..cfg.layers].to_vec(),
                _ => {
                    return Err(invalid(
                        &json.path,
                        format!(
                            "no_rope_layers {list} is not a list of {} flags 0 or 1",
                            cfg.layers
                        ),
                    ))
                }
            }
        }
        None => {
            let step = json
                .opt_usize("no_rope_layer_interval")?
                .unwrap_or(NO_ROPE_STEP);
            if step == 0 {
                return Err(invalid(&json.path, "no_rope_layer_interval is 0"));
            }
            every(cfg.layers, step)
        }
    };
    Ok(cfg)
}

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, "smollm3", &[])?;
    let mut cfg = gguf_base_config(g, "smollm3")?;
    // convert_hf_to_gguf permutes the q/k rows as for llama (module docs).
    cfg.rope.layout = RopeLayout::Interleaved;
    cfg.qkv_bias = g.tensor_info("blk.0.attn_q.bias").is_some();
    refuse_fused_qkv_and_partial_rope(g, &cfg)?;
    cfg.no_rope_layers = every(cfg.layers, NO_ROPE_STEP);
    Ok(cfg)
}

pub struct SmolLm3;

impl super::Family for SmolLm3 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use safetensors::tensor::Dtype;
        vec![
            // Four layers, so that one (layer 3) runs without RoPE in both formats.
            Fixture {
                layers: 4,
                dtype: Dtype::BF16,
                ..Fixture::base("smollm3", "SmolLM3ForCausalLM")
            },
        ]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::block::config::RopeLayout;
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![
            // Issue 43. transformers' SmolLM3Config defaults (its checkpoint
            // HuggingFaceTB/SmolLM3-3B): 36 layers cut to 4, so that layer 3 runs without RoPE.
            FamilyFile {
                name: "smollm3-3b",
                real: "SmolLM3-3B",
                config: || {
                    let mut c = base("smollm3", 2048, 11008, 16, 4, 128);
                    c.layers = 4;
                    c.rope.theta = 2_000_000.0;
                    c.rope.layout = RopeLayout::Interleaved;
                    c.no_rope_layers = vec![false, false, false, true];
                    c
                },
            },
        ]
    }

    fn gguf_arch(&self) -> &'static str {
        "smollm3"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["SmolLM3ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["smollm3"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    /// `no_rope_layers` as transformers spells it: 1 where a layer uses RoPE.
    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        crate::model::family::read::linear_scaling_json(cfg, json);
        let flags: Vec<u8> = cfg.no_rope_layers.iter().map(|&n| u8::from(!n)).collect();
        json.insert("no_rope_layers".into(), serde_json::json!(flags));
    }

    /// Converted as llama is: q/k rows in GGUF's order.
    fn hf_view<'a>(
        &self,
        file: &'a dyn crate::model::block::transformer::TensorFile,
        cfg: &Config,
    ) -> Box<dyn crate::model::block::transformer::TensorFile + 'a> {
        super::Family::hf_view(&super::llama::Llama, file, cfg)
    }

    fn to_hf(
        &self,
        part: crate::model::block::transformer::Part,
        cfg: &Config,
        t: crate::model::block::transformer::RawTensor,
    ) -> Result<crate::model::block::transformer::RawTensor, String> {
        super::Family::to_hf(&super::llama::Llama, part, cfg, t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fourth_layer_runs_without_rope() {
        let flags = every(8, NO_ROPE_STEP);
        assert_eq!(
            flags,
            [false, false, false, true, false, false, false, true]
        );
    }
}
