//! Gemma 3 text models (`Gemma3ForCausalLM`, `gemma3_text`; GGUF `gemma3`): Gemma 2's block
//! (see `gemma2`: √d embedding scale, post norms, GeGLU, norms stored as offsets from 1) with
//! these differences:
//! - no attention soft-cap, and a final logit soft-cap only when the file gives one;
//! - a per-head RMSNorm of q and k before RoPE (`q_norm`, `k_norm`, offsets from 1 as well);
//! - five local layers to each global one (`sliding_window_pattern` 6, or `layer_types`);
//! - local layers rotate with their own base (`rope_local_base_freq`, GGUF
//!   `rope.freq_base_swa`, default 10 000) and without the rope scaling, which (linear, factor 8
//!   on the 4B and larger) applies to the global layers only;
//! - the LM head is the embedding unless the file has its own.
//!
//! The multimodal checkpoints (`Gemma3ForConditionalGeneration`) are not read: their text model
//! sits under `language_model.` with a nested config; convert them to GGUF, whose `gemma3` text
//! file this reads.

use crate::model::block::config::{Config, Rope};
use crate::model::block::transformer::{Naming, Part, RawTensor, TensorFile};
use crate::model::family::gemma2::{
    self, gemma_gguf_base, gemma_hf_base, gguf_local_layers, hf_local_layers,
};
use crate::model::family::read::{refuse_unknown_keys, HfJson};
use crate::model::format::gguf::Gguf;
use crate::model::ModelError;

/// llama.cpp's default base of local layers.
const LOCAL_BASE: f32 = 10_000.0;

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    let mut cfg = gemma_hf_base(json, "gemma3")?;
    let linear = json.no_rope_scaling("gemma3")?;
    let unscaled = cfg.rope.clone();
    crate::model::family::read::apply_linear(&mut cfg, linear);
    cfg.qk_norm = true;
    if let Some(cap) = json.opt_f32("attn_logit_softcapping")? {
        return Err(crate::model::invalid(
            &json.path,
            format!(
                "attn_logit_softcapping {cap} is not implemented for gemma3 (Gemma 3 has none)"
            ),
        ));
    }
    cfg.final_softcap = json.opt_f32("final_logit_softcapping")?;
    cfg.tied_embeddings = json.bool_or("tie_word_embeddings", true)?;
    cfg.sliding_window = Some(json.usize("sliding_window")?);
    cfg.local_layers = hf_local_layers(json, cfg.layers, 6)?;
    cfg.rope_local = Some(Rope {
        theta: json.opt_f32("rope_local_base_freq")?.unwrap_or(LOCAL_BASE),
        ..unscaled
    });
    Ok(cfg)
}

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(
        g,
        "gemma3",
        &[
            "attention.sliding_window",
            "attention.sliding_window_pattern",
            "final_logit_softcapping",
            "rope.freq_base_swa",
        ],
    )?;
    let mut cfg = gemma_gguf_base(g, "gemma3", 62)?;
    let key = |k: &str| format!("gemma3.{k}");
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    cfg.qk_norm = true;
    cfg.final_softcap = opt_f32("final_logit_softcapping")?.filter(|c| *c != 0.0);
    let window = g
        .get(&key("attention.sliding_window"))
        .map(|_| g.get_u32(&key("attention.sliding_window")))
        .transpose()?
        .filter(|w| *w > 0);
    // llama.cpp: no window, no local layers (every layer global, one rope).
    if let Some(w) = window {
        cfg.sliding_window = Some(w as usize);
        cfg.local_layers = gguf_local_layers(g, "gemma3", cfg.layers, 6)?;
        cfg.rope_local = Some(Rope {
            theta: opt_f32("rope.freq_base_swa")?.unwrap_or(LOCAL_BASE),
            freq_factors: None,
            scaling: None,
            ..cfg.rope.clone()
        });
    }
    Ok(cfg)
}

pub struct Gemma3;

impl super::Family for Gemma3 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use safetensors::tensor::Dtype;
        use serde_json::json;
        vec![Fixture {
            gemma: true,
            qk_norm: true,
            head_dim: 24,
            dtype: Dtype::BF16,
            theta: 1_000_000.0,
            config: |f, c| {
                c["model_type"] = json!("gemma3_text");
                c["hidden_activation"] = json!("gelu_pytorch_tanh");
                c["query_pre_attn_scalar"] = json!(f.head_dim);
                c["sliding_window"] = json!(8);
                c["layer_types"] = json!(["sliding_attention", "full_attention"]);
                c["rope_local_base_freq"] = json!(10_000.0);
                c["rope_scaling"] = json!({"rope_type": "linear", "factor": 8.0});
            },
            ..Fixture::base("gemma3", "Gemma3ForCausalLM")
        }]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::block::config::{Activation, Rope};
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![FamilyFile {
            name: "gemma3-1b",
            real: "gemma-3-1b-it",
            config: || {
                let mut c = base("gemma3", 1152, 6912, 4, 1, 256);
                c.activation = Activation::GeluTanh;
                c.embed_scale = Some((1152f32).sqrt());
                c.post_norms = true;
                c.qk_norm = true;
                c.rope.theta = 1_000_000.0;
                c.sliding_window = Some(512);
                c.local_layers = vec![true, false];
                c.rope_local = Some(Rope {
                    theta: 10_000.0,
                    ..c.rope.clone()
                });
                c
            },
        }]
    }

    fn gguf_arch(&self) -> &'static str {
        "gemma3"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Gemma3ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["gemma3_text"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[gemma2::gguf_name]
    }

    fn hf_naming(&self) -> Naming {
        gemma2::hf_name
    }

    fn hf_view<'a>(&self, file: &'a dyn TensorFile, _cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(gemma2::NormsPlusOne { inner: file })
    }

    fn to_hf(&self, part: Part, _cfg: &Config, t: RawTensor) -> Result<RawTensor, String> {
        gemma2::norm_to_hf(&gemma2::hf_name(part), t)
    }

    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        gemma2::gemma_hf_config(cfg, json);
        json.remove("attn_logit_softcapping");
        if let Some(local) = &cfg.rope_local {
            json.insert(
                "rope_local_base_freq".into(),
                serde_json::json!(f64::from(local.theta)),
            );
        }
        json.insert(
            "tie_word_embeddings".into(),
            serde_json::json!(cfg.tied_embeddings),
        );
    }
}
