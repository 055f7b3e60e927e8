//! Llama. Its tensor names (Hugging Face and GGUF) are shared by Qwen2 and Qwen3, which differ
//! from it only in config flags.
//!
//! Llama's one difference between its two file formats is the order of the rows of each q and k
//! head. Hugging Face keeps the two halves that RoPE pairs, (i, i + d/2); convert_hf_to_gguf
//! permutes them so each pair sits side by side, (2i, 2i + 1), for ggml's pairwise RoPE. The
//! transformer runs llama in GGUF's order whatever the file ([`GgufOrder`] permutes a Hugging
//! Face checkpoint as it loads), because a q·k dot product sums in row order: the same weights
//! then give the same bits from either format (`tests/suite/hf_export.rs`).
//!
//! Llama 3's rope scaling divides each rotary frequency by a factor: GGUF files carry the
//! factors as the tensor `rope_freqs.weight`, which convert_hf_to_gguf computes from
//! `rope_scaling = {"rope_type": "llama3", ...}`; [`llama3_factors`] computes them the same way
//! from config.json, so both formats give the same bits (`tests/suite/families.rs`).

use std::path::Path;

use serde_json::Value;

use crate::model::block::config::{Config, RopeLayout};
use crate::model::block::transformer::{Part, RawTensor, Ssm, TensorDesc, TensorFile};
use crate::model::family::read::{
    apply_linear, gguf_base_config, refuse_unknown_keys, rope_scaling_type, HfJson,
};
use crate::model::format::gguf::Gguf;
use crate::model::{invalid, ModelError};

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    if json.bool_or("mlp_bias", false)? {
        return Err(invalid(&json.path, "mlp_bias is not implemented"));
    }
    json.expect_activation(&["silu"])?;
    let llama3 = json
        .get("rope_scaling")
        .filter(|s| rope_scaling_type(s).as_deref() == Some("llama3"))
        .cloned();
    let linear = match llama3 {
        Some(_) => None,
        None => json.no_rope_scaling("llama")?,
    };
    let mut cfg = json.base_config("llama")?;
    // Loaded through `GgufOrder`, so RoPE pairs neighbouring rows (module docs).
    cfg.rope.layout = RopeLayout::Interleaved;
    if let Some(s) = llama3 {
        cfg.rope.freq_factors = Some(llama3_factors(json, &s, &cfg)?);
        cfg.rope.scaling = Some("llama3".into());
    } else {
        apply_linear(&mut cfg, linear);
    }
    Ok(cfg)
}

/// Llama 3's rope frequency divisors from `rope_scaling`, computed as convert_hf_to_gguf does
/// (its `generate_extra_tensors`), step by step in f32 as torch computes them there.
pub fn llama3_factors(json: &HfJson, s: &Value, cfg: &Config) -> Result<Vec<f32>, ModelError> {
    let num = |key: &str, default: f64| -> Result<f64, ModelError> {
        match s.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v.as_f64().ok_or_else(|| {
                invalid(
                    &json.path,
                    format!("rope_scaling {key} is not a number: {v}"),
                )
            }),
        }
    };
    let factor = num("factor", 8.0)?;
    let low = num("low_freq_factor", 1.0)?;
    let high = num("high_freq_factor", 4.0)?;
    let old = num("original_max_position_embeddings", 8192.0)?;
    if !(factor > 0.0 && low > 0.0 && high > low && old > 0.0) {
        return Err(invalid(
            &json.path,
            format!(
                "rope_scaling {s}: needs factor > 0 and high_freq_factor > low_freq_factor > 0"
            ),
        ));
    }
    let (base, dim) = (cfg.rope.theta, cfg.rope.rotary_dim);
    let (low_wavelen, high_wavelen) = (old / low, old / high);
    Ok((0..dim / 2)
        .map(|i| {
            // freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
            let exponent = (2 * i) as f32 / dim as f32;
            let freq = 1.0f32 / base.powf(exponent);
            let wavelen = (2.0 * std::f64::consts::PI) as f32 / freq;
            if (wavelen as f64) < high_wavelen {
                1.0
            } else if (wavelen as f64) > low_wavelen {
                factor as f32
            } else {
                let smooth = (old as f32 / wavelen - low as f32) / (high as f32 - low as f32);
                1.0 / ((1.0 - smooth) / factor as f32 + smooth)
            }
        })
        .collect())
}

/// The tensors llama's GGUF reader takes besides the weights of `Part`s.
pub const GGUF_EXTRA_TENSORS: &[&str] = &["rope_freqs.weight"];

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, "llama", &[])?;
    let mut cfg = gguf_base_config(g, "llama")?;
    // convert_hf_to_gguf permutes llama's q/k rows so that ggml's pairwise rope applies.
    cfg.rope.layout = RopeLayout::Interleaved;
    cfg.qkv_bias = g.tensor_info("blk.0.attn_q.bias").is_some();
    if cfg.rope.rotary_dim != cfg.head_dim {
        // llama.cpp's own check for this architecture.
        return Err(invalid(
            g.path(),
            format!(
                "llama.rope.dimension_count {} differs from the head dim {}",
                cfg.rope.rotary_dim, cfg.head_dim
            ),
        ));
    }
    if let Some(factors) = rope_freqs(g, &cfg)? {
        if cfg.rope.freq_factors.is_some() {
            return Err(invalid(
                g.path(),
                "rope_freqs.weight together with linear rope scaling is not implemented",
            ));
        }
        cfg.rope.freq_factors = Some(factors);
        cfg.rope.scaling = Some("llama3 (rope_freqs.weight)".into());
    }
    Ok(cfg)
}

/// `rope_freqs.weight`, the per-frequency divisors (ggml's `freq_factors`), when present.
pub fn rope_freqs(g: &Gguf, cfg: &Config) -> Result<Option<Vec<f32>>, ModelError> {
    const NAME: &str = "rope_freqs.weight";
    if g.tensor_info(NAME).is_none() {
        return Ok(None);
    }
    let (shape, data) = g.tensor_f32(NAME)?;
    let want = cfg.rope.rotary_dim / 2;
    if shape != [want] {
        return Err(ModelError::Shape {
            path: g.path().to_path_buf(),
            tensor: NAME.into(),
            expected: vec![want],
            found: shape,
        });
    }
    Ok(Some(data))
}

/// Hugging Face names.
pub fn hf_name(part: Part) -> String {
    let layer = |l: usize, s: &str| format!("model.layers.{l}.{s}");
    match part {
        Part::Embed => "model.embed_tokens.weight".into(),
        Part::FinalNorm => "model.norm.weight".into(),
        Part::LmHead => "lm_head.weight".into(),
        Part::AttnNorm(l) => layer(l, "input_layernorm.weight"),
        Part::Q(l) => layer(l, "self_attn.q_proj.weight"),
        Part::K(l) => layer(l, "self_attn.k_proj.weight"),
        Part::V(l) => layer(l, "self_attn.v_proj.weight"),
        Part::QBias(l) => layer(l, "self_attn.q_proj.bias"),
        Part::KBias(l) => layer(l, "self_attn.k_proj.bias"),
        Part::VBias(l) => layer(l, "self_attn.v_proj.bias"),
        Part::QNorm(l) => layer(l, "self_attn.q_norm.weight"),
        Part::KNorm(l) => layer(l, "self_attn.k_norm.weight"),
        Part::O(l) => layer(l, "self_attn.o_proj.weight"),
        Part::MlpNorm(l) => layer(l, "post_attention_layernorm.weight"),
        // Gemma's own norms (see `gemma2`).
        Part::PostAttnNorm(l) => layer(l, "post_attention_layernorm.weight"),
        Part::PostMlpNorm(l) => layer(l, "post_feedforward_layernorm.weight"),
        Part::Gate(l) => layer(l, "mlp.gate_proj.weight"),
        Part::Up(l) => layer(l, "mlp.up_proj.weight"),
        Part::Down(l) => layer(l, "mlp.down_proj.weight"),
        // Issue 45: transformers' mixture-of-experts names (Qwen2/3-MoE, OLMoE), one tensor per
        // expert.
        Part::Router(l) => layer(l, "mlp.gate.weight"),
        Part::ExpertGate(l, e) => layer(l, &format!("mlp.experts.{e}.gate_proj.weight")),
        Part::ExpertUp(l, e) => layer(l, &format!("mlp.experts.{e}.up_proj.weight")),
        Part::ExpertDown(l, e) => layer(l, &format!("mlp.experts.{e}.down_proj.weight")),
        // gpt-oss's (read from GGUF only).
        Part::Sinks(l) => layer(l, "self_attn.sinks"),
        Part::OBias(l) => layer(l, "self_attn.o_proj.bias"),
        Part::RouterBias(l) => layer(l, "mlp.router.bias"),
        Part::ExpertGateBias(l, e) => layer(l, &format!("mlp.experts.{e}.gate_proj.bias")),
        Part::ExpertUpBias(l, e) => layer(l, &format!("mlp.experts.{e}.up_proj.bias")),
        Part::ExpertDownBias(l, e) => layer(l, &format!("mlp.experts.{e}.down_proj.bias")),
        // transformers' gated delta-net (Qwen3-Next, Qwen3.5; see `qwen35`).
        Part::Ssm(l, s) => layer(
            l,
            match s {
                Ssm::Qkv => "linear_attn.in_proj_qkv.weight",
                Ssm::Gate => "linear_attn.in_proj_z.weight",
                Ssm::Beta => "linear_attn.in_proj_b.weight",
                Ssm::Alpha => "linear_attn.in_proj_a.weight",
                Ssm::Conv => "linear_attn.conv1d.weight",
                Ssm::Dt => "linear_attn.dt_bias",
                Ssm::A => "linear_attn.A_log",
                Ssm::Norm => "linear_attn.norm.weight",
                Ssm::Out => "linear_attn.out_proj.weight",
            },
        ),
        // transformers' Gemma 4 per-layer embeddings and layer scalar (see `gemma4`).
        Part::PerLayerEmbed => "model.embed_tokens_per_layer.weight".into(),
        Part::PerLayerModelProj => "model.per_layer_model_projection.weight".into(),
        Part::PerLayerProjNorm => "model.per_layer_projection_norm.weight".into(),
        Part::PerLayerGate(l) => layer(l, "per_layer_input_gate.weight"),
        Part::PerLayerProj(l) => layer(l, "per_layer_projection.weight"),
        Part::PerLayerPostNorm(l) => layer(l, "post_per_layer_input_norm.weight"),
        Part::LayerScale(l) => layer(l, "layer_scalar"),
    }
}

/// GGUF (llama.cpp) names.
pub fn gguf_name(part: Part) -> String {
    let blk = |l: usize, s: &str| format!("blk.{l}.{s}");
    match part {
        Part::Embed => "token_embd.weight".into(),
        Part::FinalNorm => "output_norm.weight".into(),
        Part::LmHead => "output.weight".into(),
        Part::AttnNorm(l) => blk(l, "attn_norm.weight"),
        Part::Q(l) => blk(l, "attn_q.weight"),
        Part::K(l) => blk(l, "attn_k.weight"),
        Part::V(l) => blk(l, "attn_v.weight"),
        Part::QBias(l) => blk(l, "attn_q.bias"),
        Part::KBias(l) => blk(l, "attn_k.bias"),
        Part::VBias(l) => blk(l, "attn_v.bias"),
        Part::QNorm(l) => blk(l, "attn_q_norm.weight"),
        Part::KNorm(l) => blk(l, "attn_k_norm.weight"),
        Part::O(l) => blk(l, "attn_output.weight"),
        Part::MlpNorm(l) => blk(l, "ffn_norm.weight"),
        Part::PostAttnNorm(l) => blk(l, "post_attention_norm.weight"),
        Part::PostMlpNorm(l) => blk(l, "post_ffw_norm.weight"),
        Part::Gate(l) => blk(l, "ffn_gate.weight"),
        Part::Up(l) => blk(l, "ffn_up.weight"),
        Part::Down(l) => blk(l, "ffn_down.weight"),
        // Issue 45: llama.cpp keeps a layer's experts in one 3-D tensor per projection
        // (`[experts, rows, cols]`); `NAME[e]` is expert `e`'s slice (`qwen3moe::ExpertSlices`).
        Part::Router(l) => blk(l, "ffn_gate_inp.weight"),
        Part::ExpertGate(l, e) => blk(l, &format!("ffn_gate_exps.weight[{e}]")),
        Part::ExpertUp(l, e) => blk(l, &format!("ffn_up_exps.weight[{e}]")),
        Part::ExpertDown(l, e) => blk(l, &format!("ffn_down_exps.weight[{e}]")),
        Part::Sinks(l) => blk(l, "attn_sinks.weight"),
        Part::OBias(l) => blk(l, "attn_output.bias"),
        Part::RouterBias(l) => blk(l, "ffn_gate_inp.bias"),
        Part::ExpertGateBias(l, e) => blk(l, &format!("ffn_gate_exps.bias[{e}]")),
        Part::ExpertUpBias(l, e) => blk(l, &format!("ffn_up_exps.bias[{e}]")),
        Part::ExpertDownBias(l, e) => blk(l, &format!("ffn_down_exps.bias[{e}]")),
        // llama.cpp's names of a gated delta-net layer's tensors (`qwen35`).
        Part::Ssm(l, s) => blk(
            l,
            match s {
                Ssm::Qkv => "attn_qkv.weight",
                Ssm::Gate => "attn_gate.weight",
                Ssm::Beta => "ssm_beta.weight",
                Ssm::Alpha => "ssm_alpha.weight",
                Ssm::Conv => "ssm_conv1d.weight",
                Ssm::Dt => "ssm_dt.bias",
                Ssm::A => "ssm_a",
                Ssm::Norm => "ssm_norm.weight",
                Ssm::Out => "ssm_out.weight",
            },
        ),
        // llama.cpp's names of Gemma 4's per-layer embeddings and layer output scale.
        Part::PerLayerEmbed => "per_layer_token_embd.weight".into(),
        Part::PerLayerModelProj => "per_layer_model_proj.weight".into(),
        Part::PerLayerProjNorm => "per_layer_proj_norm.weight".into(),
        Part::PerLayerGate(l) => blk(l, "inp_gate.weight"),
        Part::PerLayerProj(l) => blk(l, "proj.weight"),
        Part::PerLayerPostNorm(l) => blk(l, "post_norm.weight"),
        Part::LayerScale(l) => blk(l, "layer_output_scale.weight"),
    }
}

/// Which way [`permute_heads`] moves rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOrder {
    /// Hugging Face's order to GGUF's (what convert_hf_to_gguf does).
    ToGguf,
    /// GGUF's order back to Hugging Face's.
    ToHf,
}

/// The rows of a q or k projection (weight `[rows, cols]` or bias `[rows]`) of `heads` heads,
/// permuted within each head between the two orders (module docs); `None` when the rows do not
/// split into heads of even size, which the shape check reports when the tensor is used.
pub fn permute_heads(t: &RawTensor, heads: usize, to: RowOrder) -> Option<Vec<f32>> {
    let rows = *t.shape.first()?;
    if heads == 0 || !rows.is_multiple_of(heads) || !(rows / heads).is_multiple_of(2) {
        return None;
    }
    let cols = t.data.len() / rows;
    let half = rows / heads / 2;
    let mut out = vec![0f32; t.data.len()];
    for head in 0..heads {
        let base = head * 2 * half;
        for i in 0..half {
            for side in 0..2 {
                let hf = base + side * half + i;
                let gguf = base + 2 * i + side;
                let (from, to) = match to {
                    RowOrder::ToGguf => (hf, gguf),
                    RowOrder::ToHf => (gguf, hf),
                };
                out[to * cols..][..cols].copy_from_slice(&t.data[from * cols..][..cols]);
            }
        }
    }
    Some(out)
}

/// A Hugging Face llama checkpoint served with its q and k rows (and biases) in GGUF's order.
pub struct GgufOrder<'a> {
    pub inner: &'a dyn TensorFile,
    pub heads: usize,
    pub kv_heads: usize,
}

impl GgufOrder<'_> {
    /// The head count of a q or k projection tensor, `None` for every other tensor.
    fn heads_of(&self, name: &str) -> Option<usize> {
        let (_, module) = name.rsplit_once(".self_attn.")?;
        match module {
            "q_proj.weight" | "q_proj.bias" => Some(self.heads),
            "k_proj.weight" | "k_proj.bias" => Some(self.kv_heads),
            _ => None,
        }
    }
}

impl TensorFile for GgufOrder<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        self.inner.describe(name)
    }

    fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let tensor = self.inner.tensor(name)?;
        let Some(heads) = self.heads_of(name) else {
            return Ok(tensor);
        };
        Ok(
            tensor.map(|t| match permute_heads(&t, heads, RowOrder::ToGguf) {
                Some(data) => RawTensor {
                    shape: t.shape,
                    data,
                },
                // A shape that does not split into heads fails the loader's check, by name.
                None => t,
            }),
        )
    }
}

pub struct Llama;

impl super::Family for Llama {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use serde_json::json;
        vec![
            Fixture {
                committed: true,
                ..Fixture::base("llama", "LlamaForCausalLM")
            },
            // A llama with Llama 3 rope scaling.
            Fixture {
                tied: false,
                theta: 500_000.0,
                config: |_, c| {
                    // Wavelengths of the 8 frequencies (head dim 16) fall on both sides of the
                    // band [16, 64] and inside it, so every branch of the factors is taken.
                    c["model_type"] = json!("llama");
                    c["rope_theta"] = json!(10_000.0);
                    c["rope_scaling"] = json!({"rope_type": "llama3", "factor": 8.0,
                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 64});
                },
                ..Fixture::base("llama3", "LlamaForCausalLM")
            },
        ]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::block::config::RopeLayout;
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![FamilyFile {
            name: "llama3-1b",
            real: "Llama-3.2-1B-Instruct",
            config: || {
                let mut c = base("llama", 2048, 8192, 32, 8, 64);
                c.norm_eps = 1e-5;
                c.rope.theta = 500_000.0;
                c.rope.layout = RopeLayout::Interleaved;
                c.max_positions = 131_072;
                // rope_scaling {"rope_type": "llama3", "factor": 32, "low_freq_factor": 1,
                // "high_freq_factor": 4, "original_max_position_embeddings": 8192}
                let json = crate::model::family::read::HfJson {
                    path: std::path::PathBuf::from("config.json"),
                    value: serde_json::Value::Null,
                };
                let s = serde_json::json!({"rope_type": "llama3", "factor": 32.0,
                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8192});
                c.rope.freq_factors = llama3_factors(&json, &s, &c).ok();
                c.rope.scaling = Some("llama3".into());
                c
            },
        }]
    }

    fn gguf_arch(&self) -> &'static str {
        "llama"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["LlamaForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["llama"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn gguf_extra_tensors(&self) -> &'static [&'static str] {
        GGUF_EXTRA_TENSORS
    }

    fn hf_view<'a>(&self, file: &'a dyn TensorFile, cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(GgufOrder {
            inner: file,
            heads: cfg.heads,
            kv_heads: cfg.kv_heads,
        })
    }

    /// q and k rows (and biases) back in Hugging Face's order.
    fn to_hf(&self, part: Part, cfg: &Config, t: RawTensor) -> Result<RawTensor, String> {
        let heads = match part {
            Part::Q(_) | Part::QBias(_) => cfg.heads,
            Part::K(_) | Part::KBias(_) => cfg.kv_heads,
            _ => return Ok(t),
        };
        let data = permute_heads(&t, heads, RowOrder::ToHf).ok_or_else(|| {
            format!(
                "shape {:?} does not split into {heads} heads of even size",
                t.shape
            )
        })?;
        Ok(RawTensor {
            shape: t.shape,
            data,
        })
    }

    /// Llama 3's factors are written as the released `rope_scaling` parameters that give the
    /// same factors to the bit (the export refuses the file when none does).
    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, Value>) {
        super::read::linear_scaling_json(cfg, json);
        let Some(factors) = &cfg.rope.freq_factors else {
            return;
        };
        if !cfg
            .rope
            .scaling
            .as_deref()
            .is_some_and(|s| s.starts_with("llama3"))
        {
            return;
        }
        if let Some(s) = LLAMA3_RELEASES.iter().map(|r| r.json()).find(|s| {
            let probe = HfJson {
                path: Path::new("config.json").to_path_buf(),
                value: Value::Null,
            };
            llama3_factors(&probe, s, cfg).ok().as_ref() == Some(factors)
        }) {
            json.insert("rope_scaling".into(), s);
        }
    }
}

/// Llama 3's released `rope_scaling` parameters: factor, low and high frequency factors, and the
/// original window (Llama 3.1: 8; Llama 3.2: 32).
struct Llama3Scaling(f64, f64, f64, f64);

const LLAMA3_RELEASES: [Llama3Scaling; 2] = [
    Llama3Scaling(8.0, 1.0, 4.0, 8192.0),
    Llama3Scaling(32.0, 1.0, 4.0, 8192.0),
];

impl Llama3Scaling {
    fn json(&self) -> Value {
        serde_json::json!({"rope_type": "llama3", "factor": self.0, "low_freq_factor": self.1,
            "high_freq_factor": self.2, "original_max_position_embeddings": self.3})
    }
}
