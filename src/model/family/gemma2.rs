//! Gemma 2: Llama's block with
//! - the token embedding scaled by √hidden as it is looked up, and always reused as the LM head;
//! - an RMSNorm on the attention output and another on the MLP output, each before its residual
//!   add (`post_attention_layernorm`, `post_feedforward_layernorm`), the MLP's input norm being
//!   `pre_feedforward_layernorm`;
//! - GeGLU (GELU, tanh approximation) in place of SwiGLU;
//! - attention scores soft-capped, `cap · tanh(s / cap)`, and the final logits too;
//! - q scaled by `query_pre_attn_scalar^-½` (llama.cpp: `1/√head_dim`, or `1/√(hidden/heads)`
//!   for the 46-layer 27B, which is what `query_pre_attn_scalar` says for each released size);
//! - every other layer local, attending to the last `sliding_window` positions (layer 0 local).
//!
//! Hugging Face stores every RMSNorm weight as an offset from 1 (`x̂ · (1 + w)`); convert_hf_to_gguf
//! adds the 1 when it writes GGUF. [`NormsPlusOne`] adds it as a Hugging Face checkpoint loads, in
//! f32, so the two formats give the same bits. Tensor names otherwise follow Llama's.
//!
//! Gemma 3 (`gemma3`) shares all of this but the soft-caps; see that file for its differences.

use std::path::Path;

use crate::model::block::config::{Activation, Config};
use crate::model::block::transformer::{Naming, Part, RawTensor, TensorDesc, TensorFile};
use crate::model::family::llama;
use crate::model::family::read::{gguf_base_config, refuse_unknown_keys, HfJson};
use crate::model::format::gguf::{Gguf, Value};
use crate::model::{invalid, ModelError};

/// llama.cpp's Gemma 2 defaults, used when a GGUF file does not say.
const GGUF_DEFAULT_WINDOW: usize = 4096;

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    let mut cfg = gemma_hf_base(json, "gemma2")?;
    let linear = json.no_rope_scaling("gemma2")?;
    crate::model::family::read::apply_linear(&mut cfg, linear);
    cfg.attn_softcap = json.opt_f32("attn_logit_softcapping")?;
    cfg.final_softcap = json.opt_f32("final_logit_softcapping")?;
    cfg.tied_embeddings = true;
    let window = json.usize("sliding_window")?;
    cfg.sliding_window = Some(window);
    cfg.local_layers = hf_local_layers(json, cfg.layers, 2)?;
    Ok(cfg)
}

/// What Gemma 2 and 3 share in config.json.
pub fn gemma_hf_base(json: &HfJson, arch: &str) -> Result<Config, ModelError> {
    json.expect_activation(&["gelu_pytorch_tanh"])?;
    let mut cfg = json.base_config(arch)?;
    cfg.activation = Activation::GeluTanh;
    cfg.embed_scale = Some((cfg.hidden as f32).sqrt());
    cfg.post_norms = true;
    let scalar = json
        .opt_f32("query_pre_attn_scalar")?
        .unwrap_or(cfg.head_dim as f32);
    cfg.attn_scale = 1.0 / scalar.sqrt();
    Ok(cfg)
}

/// Which layers are local: `layer_types` when given, else every layer but each `pattern`-th
/// (`sliding_window_pattern`, default `default_pattern`), as transformers decides.
pub fn hf_local_layers(
    json: &HfJson,
    layers: usize,
    default_pattern: usize,
) -> Result<Vec<bool>, ModelError> {
    if let Some(types) = json.get("layer_types") {
        let list = types
            .as_array()
            .ok_or_else(|| invalid(&json.path, format!("layer_types is not a list: {types}")))?;
        return list
            .iter()
            .map(|t| match t.as_str() {
                Some("sliding_attention") => Ok(true),
                Some("full_attention") => Ok(false),
                _ => Err(invalid(
                    &json.path,
                    format!("layer type {t} is not implemented"),
                )),
            })
            .collect();
    }
    let pattern = json
        .opt_usize("sliding_window_pattern")?
        .unwrap_or(default_pattern);
    Ok(pattern_layers(layers, pattern))
}

/// `layer_types` as [`hf_local_layers`] reads it back: each layer `sliding_attention` when local,
/// else `full_attention`.
pub fn hf_layer_types(cfg: &Config) -> serde_json::Value {
    let types: Vec<&str> = (0..cfg.layers)
        .map(|l| match cfg.local_layers.get(l) {
            Some(true) => "sliding_attention",
            _ => "full_attention",
        })
        .collect();
    serde_json::json!(types)
}

/// llama.cpp's `set_swa_pattern`: layer `l` is local unless `(l + 1)` is a multiple of
/// `pattern` (pattern 0 or 1: no local layer).
pub fn pattern_layers(layers: usize, pattern: usize) -> Vec<bool> {
    (0..layers)
        .map(|l| pattern > 1 && l % pattern < pattern - 1)
        .collect()
}

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(
        g,
        "gemma2",
        &[
            "attention.sliding_window",
            "attention.sliding_window_pattern",
            "attn_logit_softcapping",
            "final_logit_softcapping",
            "rope.freq_base_swa",
        ],
    )?;
    let mut cfg = gemma_gguf_base(g, "gemma2", 46)?;
    let key = |k: &str| format!("gemma2.{k}");
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    // llama.cpp reads both caps as optional keys, with 0 meaning none for the final one; the
    // attention cap is always applied (its default is 50).
    cfg.attn_softcap = Some(opt_f32("attn_logit_softcapping")?.unwrap_or(50.0));
    cfg.final_softcap = opt_f32("final_logit_softcapping")?
        .or(Some(30.0))
        .filter(|c| *c != 0.0);
    cfg.sliding_window = Some(
        g.get(&key("attention.sliding_window"))
            .map(|_| g.get_u32(&key("attention.sliding_window")))
            .transpose()?
            .map_or(GGUF_DEFAULT_WINDOW, |w| w as usize),
    );
    cfg.local_layers = gguf_local_layers(g, "gemma2", cfg.layers, 2)?;
    // The local layers' rope: its own base when the file gives one, else the global one.
    crate::model::family::read::gguf_local_base(g, "gemma2", &mut cfg)?;
    // llama.cpp always reuses the embedding as the LM head; an `output.weight` would be left
    // unread, which `Transformer::check` refuses by name.
    cfg.tied_embeddings = true;
    Ok(cfg)
}

/// What Gemma 2 and 3 share in GGUF metadata: llama.cpp's attention scale rule, √d embedding
/// scale, post norms and GeGLU.
pub fn gemma_gguf_base(g: &Gguf, arch: &str, big_layers: usize) -> Result<Config, ModelError> {
    let mut cfg = gguf_base_config(g, arch)?;
    cfg.activation = Activation::GeluTanh;
    cfg.embed_scale = Some((cfg.hidden as f32).sqrt());
    cfg.post_norms = true;
    // llama.cpp: the 27B size (`big_layers` layers: 46 for Gemma 2, 62 for Gemma 3) scales
    // by 1/√(hidden/heads), the others by 1/√head_dim.
    let big = cfg.layers == big_layers;
    let scalar = if big {
        (cfg.hidden / cfg.heads) as f32
    } else {
        cfg.head_dim as f32
    };
    cfg.attn_scale = 1.0 / scalar.sqrt();
    Ok(cfg)
}

/// Which layers are local from `{arch}.attention.sliding_window_pattern` (a count or a list of
/// flags), else the family's default pattern.
pub fn gguf_local_layers(
    g: &Gguf,
    arch: &str,
    layers: usize,
    default_pattern: usize,
) -> Result<Vec<bool>, ModelError> {
    let key = format!("{arch}.attention.sliding_window_pattern");
    match g.get(&key) {
        None => Ok(pattern_layers(layers, default_pattern)),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::Bool(b) => Ok(*b),
                other => Err(invalid(
                    g.path(),
                    format!("{key} holds {other:?}, expected booleans"),
                )),
            })
            .collect(),
        Some(_) => Ok(pattern_layers(layers, g.get_u32(&key)? as usize)),
    }
}

/// Hugging Face names (Llama's, with Gemma's four norms per layer).
pub fn hf_name(part: Part) -> String {
    let layer = |l: usize, s: &str| format!("model.layers.{l}.{s}");
    match part {
        Part::PostAttnNorm(l) => layer(l, "post_attention_layernorm.weight"),
        Part::MlpNorm(l) => layer(l, "pre_feedforward_layernorm.weight"),
        Part::PostMlpNorm(l) => layer(l, "post_feedforward_layernorm.weight"),
        other => llama::hf_name(other),
    }
}

/// GGUF names (Llama's, with the two post norms).
pub fn gguf_name(part: Part) -> String {
    let blk = |l: usize, s: &str| format!("blk.{l}.{s}");
    match part {
        Part::PostAttnNorm(l) => blk(l, "post_attention_norm.weight"),
        Part::PostMlpNorm(l) => blk(l, "post_ffw_norm.weight"),
        other => llama::gguf_name(other),
    }
}

/// A Gemma Hugging Face checkpoint with 1 added to every RMSNorm weight (module docs).
pub struct NormsPlusOne<'a> {
    pub inner: &'a dyn TensorFile,
}

impl TensorFile for NormsPlusOne<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let t = self.inner.tensor(name)?;
        if !name.ends_with("norm.weight") {
            return Ok(t);
        }
        Ok(t.map(|mut t| {
            t.data.iter_mut().for_each(|v| *v += 1.0);
            t
        }))
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        self.inner.describe(name)
    }

    fn names(&self) -> Vec<String> {
        self.inner.names()
    }
}

/// 1 taken off every RMSNorm weight, as Gemma's Hugging Face checkpoints store them; refused
/// where `(w - 1) + 1` would not give `w` back to the bit.
pub fn norm_to_hf(name: &str, t: RawTensor) -> Result<RawTensor, String> {
    if !name.ends_with("norm.weight") {
        return Ok(t);
    }
    let data: Vec<f32> = t.data.iter().map(|w| w - 1.0).collect();
    if let Some(i) = (0..data.len()).find(|&i| (data[i] + 1.0).to_bits() != t.data[i].to_bits()) {
        return Err(format!(
            "norm weight {i} ({}) cannot be stored as an offset from 1 with the same bits",
            t.data[i]
        ));
    }
    Ok(RawTensor {
        shape: t.shape,
        data,
    })
}

/// What Gemma 2 and 3 write in config.json beside the shared keys.
pub fn gemma_hf_config(cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::json;
    super::read::linear_scaling_json(cfg, json);
    json.insert("hidden_activation".into(), json!("gelu_pytorch_tanh"));
    // The scalar whose inverse square root is the attention scale, of the two llama.cpp uses.
    let scalar = [cfg.head_dim, cfg.hidden / cfg.heads]
        .into_iter()
        .map(|s| s as f32)
        .find(|s| (1.0 / s.sqrt()).to_bits() == cfg.attn_scale.to_bits());
    if let Some(s) = scalar {
        json.insert("query_pre_attn_scalar".into(), json!(f64::from(s)));
    }
    for (key, cap) in [
        ("attn_logit_softcapping", cfg.attn_softcap),
        ("final_logit_softcapping", cfg.final_softcap),
    ] {
        json.insert(key.into(), json!(cap.map(f64::from)));
    }
    if let Some(w) = cfg.sliding_window {
        json.insert("sliding_window".into(), json!(w));
        json.insert("layer_types".into(), hf_layer_types(cfg));
    }
}

pub struct Gemma2;

impl super::Family for Gemma2 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use serde_json::json;
        vec![Fixture {
            gemma: true,
            config: |f, c| {
                c["hidden_activation"] = json!("gelu_pytorch_tanh");
                c["query_pre_attn_scalar"] = json!(f.head_dim);
                c["attn_logit_softcapping"] = json!(50.0);
                c["final_logit_softcapping"] = json!(30.0);
                // A short window, so that the tests' sequences cross it.
                c["sliding_window"] = json!(8);
            },
            ..Fixture::base("gemma2", "Gemma2ForCausalLM")
        }]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::block::config::Activation;
        use crate::model::dev::family_files::{base, FamilyFile, LAYERS};
        vec![FamilyFile {
            name: "gemma2-2b",
            real: "gemma-2-2b-it",
            config: || {
                let mut c = base("gemma2", 2304, 9216, 8, 4, 256);
                c.activation = Activation::GeluTanh;
                c.embed_scale = Some((2304f32).sqrt());
                c.post_norms = true;
                c.attn_softcap = Some(50.0);
                c.final_softcap = Some(30.0);
                c.sliding_window = Some(4096);
                c.local_layers = pattern_layers(LAYERS, 2);
                c.max_positions = 8192;
                c
            },
        }]
    }

    fn gguf_arch(&self) -> &'static str {
        "gemma2"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Gemma2ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["gemma2"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[gguf_name]
    }

    fn hf_naming(&self) -> Naming {
        hf_name
    }

    fn hf_view<'a>(&self, file: &'a dyn TensorFile, _cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(NormsPlusOne { inner: file })
    }

    fn to_hf(&self, part: Part, _cfg: &Config, t: RawTensor) -> Result<RawTensor, String> {
        norm_to_hf(&hf_name(part), t)
    }

    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        gemma_hf_config(cfg, json);
    }

    /// llama.cpp reads a missing final soft-cap as 30: a model without one says 0.
    fn gguf_metadata(&self, cfg: &Config) -> Vec<(String, Value)> {
        match cfg.final_softcap {
            None => vec![("gemma2.final_logit_softcapping".into(), Value::F32(0.0))],
            Some(_) => Vec::new(),
        }
    }
}
