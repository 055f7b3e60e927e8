//! Mistral 3 text models (Ministral 3: `Ministral3ForCausalLM`, `ministral3`; GGUF `mistral3`):
//! Llama's block and tensor names (q/k rows permuted in GGUF, so a Hugging Face checkpoint loads
//! through `llama::GgufOrder`), with two differences in how positions enter:
//! - YaRN rope scaling ([`Yarn`]): transformers' `rope_parameters` (`rope_type` "yarn", factor
//!   16 over an original window of 16 384 in the released files), GGUF `rope.scaling.*` with
//!   `rope.scaling.yarn_beta_fast`, `yarn_beta_slow` and `yarn_log_multiplier` (what the
//!   converter writes from `mscale_all_dim`);
//! - Llama 4's attention temperature ([`AttnTemperature`]): q multiplied after RoPE by
//!   `1 + β ln(1 + ⌊p / original window⌋)` (`llama_4_scaling_beta`, GGUF
//!   `attention.temperature_scale`), which is 1 before the original window's end.
//!
//! Linear scaling and Llama 3's `rope_freqs.weight` are read as for Llama. What llama.cpp's
//! loader takes besides and this file does not run is refused by name: experts
//! (`expert_count`), biases of the output projection and the MLP (unread tensors), longrope,
//! and a YaRN `attention_factor` (which llama.cpp's mistral3 does not read either). The
//! multimodal checkpoints (`Mistral3ForConditionalGeneration`) are not read: their text model
//! sits under `language_model.` with a nested `text_config`; convert them to GGUF.

use serde_json::Value;

use crate::model::block::config::AttnTemperature;
use crate::model::block::config::Config;
use crate::model::block::config::RopeLayout;
use crate::model::block::config::Yarn;
use crate::model::family::llama;
use crate::model::family::read::apply_linear;
use crate::model::family::read::gguf_config_with;
use crate::model::family::read::refuse_fused_qkv_and_partial_rope;
use crate::model::family::read::refuse_unknown_keys;
use crate::model::family::read::rope_scaling_type;
use crate::model::family::read::HfJson;
use crate::model::format::gguf::Gguf;
use crate::model::invalid;
use crate::model::ModelError;

/// transformers' and llama.cpp's defaults of the ramp's ends.
const BETA_FAST: f32 = 32.0;
const BETA_SLOW: f32 = 1.0;

/// The multimodal checkpoint's architecture, refused with its reason.
pub const MULTIMODAL: &str = "Mistral3ForConditionalGeneration";

pub fn refuse_multimodal(json: &HfJson) -> ModelError {
    invalid(
        &json.path,
        format!(
            "{MULTIMODAL} is not read: its text model sits under language_model. with a nested \
             text_config; convert it to GGUF (mistral3) or give the text model's own directory \
             (Ministral3ForCausalLM)"
        ),
    )
}

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    if json.bool_or("mlp_bias", false)? {
        return Err(invalid(
            &json.path,
            "mlp_bias is not implemented for mistral3",
        ));
    }
    json.expect_activation(&["silu"])?;
    if let Some(w) = json.get("sliding_window") {
        return Err(invalid(
            &json.path,
            format!("sliding_window {w} is not implemented for mistral3"),
        ));
    }
    let mut cfg = json.base_config("mistral3")?;
    // Loaded through `llama::GgufOrder` (module docs).
    cfg.rope.layout = RopeLayout::Interleaved;
    let Some(p) = hf_rope(json, &mut cfg, "mistral3")? else {
        return Ok(cfg);
    };
    let num = |key: &str| rope_number(json, p, key);
    let original = num("original_max_position_embeddings")?;
    if let Some(beta) = num("llama_4_scaling_beta")? {
        let floor = original.ok_or_else(|| {
            invalid(
                &json.path,
                "llama_4_scaling_beta needs original_max_position_embeddings",
            )
        })?;
        cfg.attn_temperature = Some(AttnTemperature {
            beta: beta as f32,
            floor: floor as usize,
        });
    }
    Ok(cfg)
}

/// The rope of a config.json in either layout (transformers 5's `rope_parameters` with the base
/// inside, or `rope_theta` and `rope_scaling`): the base, and linear or YaRN scaling, set on
/// `cfg`; any other type refused for `arch`. Returns the parameters for the family's own keys.
pub fn hf_rope<'a>(
    json: &'a HfJson,
    cfg: &mut Config,
    arch: &str,
) -> Result<Option<&'a Value>, ModelError> {
    let params = match (json.get("rope_parameters"), json.get("rope_scaling")) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                &json.path,
                "rope_parameters together with rope_scaling: which applies is ambiguous",
            ))
        }
        (Some(p), None) => {
            if json.get("rope_theta").is_some() {
                return Err(invalid(
                    &json.path,
                    "rope_parameters together with rope_theta: which applies is ambiguous",
                ));
            }
            cfg.rope.theta = p.get("rope_theta").and_then(Value::as_f64).ok_or_else(|| {
                invalid(
                    &json.path,
                    format!("rope_parameters {p} has no numeric rope_theta"),
                )
            })? as f32;
            Some(p)
        }
        (None, s) => s,
    };
    let Some(p) = params else {
        return Ok(None);
    };
    let num = |key: &str| rope_number(json, p, key);
    let original = num("original_max_position_embeddings")?;
    match rope_scaling_type(p).as_deref() {
        None | Some("default") | Some("none") => {}
        Some("linear") => {
            let f = num("factor")?.ok_or_else(|| {
                invalid(
                    &json.path,
                    format!("rope scaling {p}: linear needs a factor"),
                )
            })? as f32;
            apply_linear(cfg, Some((vec![f], format!("linear {f}"))));
        }
        Some("yarn") => {
            let factor = num("factor")?.ok_or_else(|| {
                invalid(&json.path, format!("rope scaling {p}: yarn needs a factor"))
            })?;
            if let Some(a) = p.get("attention_factor").filter(|v| !v.is_null()) {
                return Err(invalid(
                    &json.path,
                    format!(
                        "yarn attention_factor {a} is not implemented for {arch} (llama.cpp's \
                         {arch} does not read it)"
                    ),
                ));
            }
            let truncate = match p.get("truncate").filter(|v| !v.is_null()) {
                None => true,
                Some(t) => t.as_bool().ok_or_else(|| {
                    invalid(&json.path, format!("yarn truncate {t} is not a boolean"))
                })?,
            };
            let window = json.usize("max_position_embeddings")? as f64;
            let original = original.unwrap_or(window);
            // transformers 5 takes the factor as max_position_embeddings over the original
            // window when both are given; older versions take `factor`. Both must agree.
            if window / original != factor {
                return Err(invalid(
                    &json.path,
                    format!(
                        "yarn factor {factor} differs from max_position_embeddings {window} over \
                         original_max_position_embeddings {original}: transformers versions \
                         disagree on which applies"
                    ),
                ));
            }
            let (mscale, all_dim) = (num("mscale")?, num("mscale_all_dim")?);
            // transformers: the ratio when both are given and non-zero, else mscale(factor, 1).
            let (mscale, mscale_all_dim) = match (mscale, all_dim) {
                (Some(m), Some(a)) if m != 0.0 && a != 0.0 => (m as f32, a as f32),
                _ => (1.0, 0.0),
            };
            cfg.rope.yarn = Some(Yarn {
                factor: factor as f32,
                original_max_positions: original as usize,
                beta_fast: num("beta_fast")?.map_or(BETA_FAST, |b| b as f32),
                beta_slow: num("beta_slow")?.map_or(BETA_SLOW, |b| b as f32),
                mscale,
                mscale_all_dim,
                truncate,
            });
            cfg.rope.scaling = Some(format!("yarn {factor}"));
        }
        Some(other) => {
            return Err(invalid(
                &json.path,
                format!("rope scaling type {other} is not implemented for {arch} ({p})"),
            ))
        }
    }
    Ok(Some(p))
}

/// YaRN's rope parameters as [`hf_rope`] reads them back.
pub fn yarn_json(y: &Yarn, p: &mut serde_json::Map<String, Value>) {
    p.insert("rope_type".into(), "yarn".into());
    p.insert("factor".into(), f64::from(y.factor).into());
    p.insert(
        "original_max_position_embeddings".into(),
        y.original_max_positions.into(),
    );
    p.insert("beta_fast".into(), f64::from(y.beta_fast).into());
    p.insert("beta_slow".into(), f64::from(y.beta_slow).into());
    if y.mscale_all_dim != 0.0 {
        p.insert("mscale".into(), f64::from(y.mscale).into());
        p.insert("mscale_all_dim".into(), f64::from(y.mscale_all_dim).into());
    }
    if !y.truncate {
        p.insert("truncate".into(), false.into());
    }
}

/// A number among the rope parameters `p`, `None` when absent.
fn rope_number(json: &HfJson, p: &Value, key: &str) -> Result<Option<f64>, ModelError> {
    p.get(key)
        .filter(|v| !v.is_null())
        .map(|v| {
            v.as_f64().ok_or_else(|| {
                invalid(
                    &json.path,
                    format!("rope parameter {key} is not a number: {v}"),
                )
            })
        })
        .transpose()
}

/// The `mistral3.` keys read here besides the common ones.
const OWN_KEYS: &[&str] = &[
    "attention.temperature_scale",
    "rope.scaling.yarn_beta_fast",
    "rope.scaling.yarn_beta_slow",
    "rope.scaling.yarn_log_multiplier",
];

/// YaRN from `{arch}.rope.scaling.*` as llama.cpp reads it, set on `cfg`'s rope when the type is
/// `yarn`; returns llama.cpp's `n_ctx_orig_yarn` (the original window when given, else the
/// context length). Shared with gpt-oss (issue 45).
pub fn gguf_yarn(g: &Gguf, arch: &str, cfg: &mut Config) -> Result<usize, ModelError> {
    let key = |k: &str| format!("{arch}.{k}");
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    let original = match g.get(&key("rope.scaling.original_context_length")) {
        Some(_) => g.get_u32(&key("rope.scaling.original_context_length"))? as usize,
        None => cfg.max_positions,
    };
    let kind = match g.get(&key("rope.scaling.type")) {
        Some(_) => g.get_str(&key("rope.scaling.type"))?.to_string(),
        None => String::new(),
    };
    if kind == "yarn" {
        // llama.cpp: no factor (or 0) is a factor of 1.
        let factor = match opt_f32("rope.scaling.factor")? {
            Some(f) => Some(f),
            None => opt_f32("rope.scale_linear")?,
        }
        .filter(|f| *f != 0.0)
        .unwrap_or(1.0);
        cfg.rope.yarn = Some(Yarn {
            factor,
            original_max_positions: original,
            beta_fast: opt_f32("rope.scaling.yarn_beta_fast")?.unwrap_or(BETA_FAST),
            beta_slow: opt_f32("rope.scaling.yarn_beta_slow")?.unwrap_or(BETA_SLOW),
            // llama.cpp assumes mscale 1 and takes the log multiplier as mscale_all_dim.
            mscale: 1.0,
            mscale_all_dim: opt_f32("rope.scaling.yarn_log_multiplier")?.unwrap_or(0.0),
            // ggml_rope_yarn_corr_dims rounds the ramp's ends.
            truncate: true,
        });
        cfg.rope.scaling = Some(format!("yarn {factor}"));
    }
    Ok(original)
}

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, "mistral3", OWN_KEYS)?;
    let mut cfg = gguf_config_with(g, "mistral3", &["yarn"])?;
    let key = |k: &str| format!("mistral3.{k}");
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    // convert_hf_to_gguf permutes the q/k rows as for llama (module docs).
    cfg.rope.layout = RopeLayout::Interleaved;
    cfg.qkv_bias = g.tensor_info("blk.0.attn_q.bias").is_some();
    refuse_fused_qkv_and_partial_rope(g, &cfg)?;
    let original = gguf_yarn(g, "mistral3", &mut cfg)?;
    if let Some(factors) = llama::rope_freqs(g, &cfg)? {
        if cfg.rope.freq_factors.is_some() || cfg.rope.yarn.is_some() {
            return Err(invalid(
                g.path(),
                "rope_freqs.weight together with linear or yarn rope scaling is not implemented",
            ));
        }
        cfg.rope.freq_factors = Some(factors);
        cfg.rope.scaling = Some("llama3 (rope_freqs.weight)".into());
    }
    if let Some(beta) = opt_f32("attention.temperature_scale")?.filter(|b| *b != 0.0) {
        cfg.attn_temperature = Some(AttnTemperature {
            beta,
            floor: original,
        });
    }
    Ok(cfg)
}

pub struct Mistral3;

impl super::Family for Mistral3 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use safetensors::tensor::Dtype;
        use serde_json::json;
        vec![Fixture {
            tied: false,
            dtype: Dtype::BF16,
            // transformers 5's layout: the base inside rope_parameters. An original window
            // of 8 (factor 512 / 8), so that the tests' 20 tokens cross it and meet the
            // attention temperature; no mscale, so the magnitude is transformers' default
            // 0.1 ln 64 + 1.
            config: |_, c| {
                c.as_object_mut().map(|o| o.remove("rope_theta"));
                c["rope_parameters"] = json!({"rope_type": "yarn", "rope_theta": 1_000_000.0,
                    "factor": 64.0, "original_max_position_embeddings": 8,
                    "beta_fast": 32.0, "beta_slow": 1.0, "llama_4_scaling_beta": 0.1});
            },
            ..Fixture::base("ministral3", "Ministral3ForCausalLM")
        }]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::dev::family_files::FamilyFile;
        vec![
            // Ministral 3 3B (26 layers; transformers' Ministral3Config rope_parameters): YaRN
            // factor 16 over an original window of 16 384, log multiplier 1, Llama 4
            // temperature 0.1.
            FamilyFile {
                name: "ministral3-3b",
                real: "Ministral-3-3B-Instruct-2512",
                config: || ministral3(16_384),
            },
            // The same with an original window of 16, so that the contexts cross it: the
            // attention temperature is 1 + 0.1 ln 2 from position 16 and 1 + 0.1 ln 3 from 32,
            // and the YaRN ramp moves.
            FamilyFile {
                name: "ministral3-3b-window16",
                real: "Ministral-3-3B-Instruct-2512",
                config: || ministral3(16),
            },
        ]
    }

    fn gguf_arch(&self) -> &'static str {
        "mistral3"
    }

    /// The multimodal class is known only to be refused with its reason.
    fn hf_classes(&self) -> &'static [&'static str] {
        &["Ministral3ForCausalLM", MULTIMODAL]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["ministral3"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        let class = json
            .get("architectures")
            .and_then(|a| a.get(0))
            .and_then(|a| a.as_str());
        if class == Some(MULTIMODAL) {
            return Err(refuse_multimodal(json));
        }
        config_from_hf(json)
    }

    /// YaRN and the attention temperature in `rope_scaling`, as the reader above takes them.
    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, Value>) {
        crate::model::family::read::linear_scaling_json(cfg, json);
        let mut p = serde_json::Map::new();
        if let Some(y) = &cfg.rope.yarn {
            yarn_json(y, &mut p);
        }
        if let Some(t) = &cfg.attn_temperature {
            p.entry("rope_type").or_insert_with(|| "default".into());
            p.insert("original_max_position_embeddings".into(), t.floor.into());
            p.insert("llama_4_scaling_beta".into(), f64::from(t.beta).into());
        }
        if !p.is_empty() {
            json.insert("rope_scaling".into(), Value::Object(p));
        }
    }

    /// Llama 3's `rope_freqs.weight`, as llama's reader takes it.
    fn gguf_extra_tensors(&self) -> &'static [&'static str] {
        llama::GGUF_EXTRA_TENSORS
    }

    /// Converted as llama is: q/k rows in GGUF's order.
    fn hf_view<'a>(
        &self,
        file: &'a dyn crate::model::block::transformer::TensorFile,
        cfg: &Config,
    ) -> Box<dyn crate::model::block::transformer::TensorFile + 'a> {
        super::Family::hf_view(&llama::Llama, file, cfg)
    }

    fn to_hf(
        &self,
        part: crate::model::block::transformer::Part,
        cfg: &Config,
        t: crate::model::block::transformer::RawTensor,
    ) -> Result<crate::model::block::transformer::RawTensor, String> {
        super::Family::to_hf(&llama::Llama, part, cfg, t)
    }
}

/// Ministral 3 3B's shapes with the original window `original`.
fn ministral3(original: usize) -> Config {
    let mut c = crate::model::dev::family_files::base("mistral3", 3072, 9216, 32, 8, 128);
    c.norm_eps = 1e-5;
    c.rope.theta = 1_000_000.0;
    c.rope.layout = RopeLayout::Interleaved;
    c.max_positions = 262_144;
    c.rope.yarn = Some(Yarn {
        factor: 16.0,
        original_max_positions: original,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: 1.0,
        mscale_all_dim: 1.0,
        truncate: true,
    });
    c.rope.scaling = Some("yarn 16".into());
    c.attn_temperature = Some(AttnTemperature {
        beta: 0.1,
        floor: original,
    });
    c
}
