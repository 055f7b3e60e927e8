//! Qwen3.5 (GGUF `qwen35`, as llama.cpp 0.3.36's `models/qwen35.cpp` reads it): a hybrid of
//! gated delta-net linear attention and full attention over Qwen3's block. What differs:
//!
//! - three of every four layers (`full_attention_interval`, or the per-layer
//!   `attention.recurrent_layers`) are gated delta-net layers (`block::delta_net`): the
//!   `ssm.*` keys give the convolution's kernel, the key heads (`group_count`), the value heads
//!   (`time_step_rank`), the head size (`state_size`) and the value width (`inner_size`);
//! - the full-attention layers' q projection holds each head's q and then an output gate of
//!   the same size (`Config::attn_gate`), with q/k RMSNorms per head;
//! - rope over the first `rope.dimension_count` dimensions of a head (a quarter of 256), NEOX
//!   pairs, multi-section (`rope.dimension_sections`): for text every section's position is the
//!   token's own, which makes it plain rope (`block::delta_net::DeltaNet::rope_sections`);
//! - the norm before the MLP is named `post_attention_norm`; the LM head is the embedding
//!   unless `output.weight` is present.
//!
//! The MTP draft layers (`nextn_predict_layers`, counted in `block_count`, tensors `blk.N.*`
//! after the model's own) are skipped, as llama.cpp's main pass skips them.
//!
//! Refused by name: every key llama.cpp's loader reads that is not implemented
//! (`attention.scale`, ...), q, k and v fused in the attention
//! layers' `attn_qkv`, a key head size other than the value head size (llama.cpp asserts them
//! equal).
//!
//! From a Hugging Face directory (`Qwen3_5ForCausalLM`, the text model; `FromHf`), what
//! convert_hf_to_gguf changes: 1 added to every RMSNorm weight but the delta-net's gated norm
//! (transformers' Qwen3.5 norms are offsets from 1), `A = −exp(A_log)`, the convolution's
//! `[channels, 1, taps]` as `[channels, taps]`, and with fewer key than value heads the value
//! heads reordered from grouped by key head to tiled (llama.cpp's broadcast). The MTP draft
//! layers (`mtp.*`) are not read, as llama.cpp does not read them for scoring.

use std::path::Path;

use serde_json::json;

use crate::model::block::config::Config;
use crate::model::block::delta_net::DeltaNet;
use crate::model::block::transformer::{Naming, Part, RawTensor, Ssm, TensorDesc, TensorFile};
use crate::model::family::read::{gguf_base_config, refuse_unknown_keys, HfJson, Unread};
use crate::model::family::Family;
use crate::model::family::{gemma2, llama};
use crate::model::format::gguf::{self, Gguf, Value};
use crate::model::{invalid, ModelError};

const ARCH: &str = "qwen35";

/// llama.cpp's default when the file gives neither key.
const FULL_ATTENTION_INTERVAL: usize = 4;

/// The `qwen35.` keys this file reads beside the shared ones.
const OWN_KEYS: &[&str] = &[
    "rope.dimension_sections",
    "ssm.conv_kernel",
    "ssm.inner_size",
    "ssm.state_size",
    "ssm.time_step_rank",
    "ssm.group_count",
    "full_attention_interval",
    "attention.recurrent_layers",
    "nextn_predict_layers",
];

/// GGUF names: llama.cpp's, with the MLP's norm called `post_attention_norm`.
pub fn gguf_name(part: Part) -> String {
    match part {
        Part::MlpNorm(l) => format!("blk.{l}.post_attention_norm.weight"),
        other => llama::gguf_name(other),
    }
}

/// Layer `l` is recurrent unless `(l + 1)` is a multiple of `interval` (llama.cpp's rule).
pub fn recurrent_every(layers: usize, interval: usize) -> Vec<bool> {
    (0..layers).map(|l| (l + 1) % interval != 0).collect()
}

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, ARCH, OWN_KEYS)?;
    let key = |k: &str| format!("{ARCH}.{k}");
    let mut cfg = gguf_base_config(g, ARCH)?;
    let u = |k: &str| g.get_u32(&key(k)).map(|v| v as usize);
    // The MTP draft layers (convert_hf_to_gguf writes them after the model's own and counts
    // them in `block_count`) are not run for scoring, as llama.cpp does not run them in its
    // main pass: the model is the layers before them (`draft`).
    let all = cfg.layers;
    if g.get(&key("nextn_predict_layers")).is_some() {
        let nextn = u("nextn_predict_layers")?;
        if nextn >= all {
            return Err(invalid(
                g.path(),
                format!(
                    "{} {nextn} leaves none of the {all} layers of {}",
                    key("nextn_predict_layers"),
                    key("block_count")
                ),
            ));
        }
        cfg.layers = all - nextn;
    }
    let (k_heads, v_heads, head_dim) = (
        u("ssm.group_count")?,
        u("ssm.time_step_rank")?,
        u("ssm.state_size")?,
    );
    let inner = u("ssm.inner_size")?;
    if v_heads == 0 || inner != v_heads * head_dim {
        return Err(invalid(
            g.path(),
            format!(
                "{} {inner} is not {} {v_heads} × {} {head_dim}: a value head size other than \
                 the key head size is not implemented (llama.cpp requires them equal)",
                key("ssm.inner_size"),
                key("ssm.time_step_rank"),
                key("ssm.state_size")
            ),
        ));
    }
    let recurrent = match g.get(&key("attention.recurrent_layers")) {
        Some(Value::Array(items)) if items.len() == all || items.len() == cfg.layers => items
            [..cfg.layers]
            .iter()
            .map(|v| match v {
                Value::Bool(b) => Ok(*b),
                other => Err(invalid(
                    g.path(),
                    format!(
                        "{} holds {other:?}, expected booleans",
                        key("attention.recurrent_layers")
                    ),
                )),
            })
            .collect::<Result<Vec<bool>, _>>()?,
        Some(other) => {
            return Err(invalid(
                g.path(),
                format!(
                    "{} is {other:?}, expected an array of {all} booleans",
                    key("attention.recurrent_layers")
                ),
            ))
        }
        None => {
            let interval = match g.get(&key("full_attention_interval")) {
                Some(_) => u("full_attention_interval")?,
                None => FULL_ATTENTION_INTERVAL,
            };
            if interval == 0 {
                return Err(invalid(
                    g.path(),
                    format!("{} is 0", key("full_attention_interval")),
                ));
            }
            recurrent_every(cfg.layers, interval)
        }
    };
    let rope_sections = g.get_i32_array(&key("rope.dimension_sections"))?;
    if rope_sections.len() > 4
        || rope_sections.iter().any(|&s| s < 0)
        || rope_sections.iter().all(|&s| s == 0)
    {
        return Err(invalid(
            g.path(),
            format!(
                "{} {rope_sections:?}: llama.cpp takes up to 4 non-negative sections, not all 0",
                key("rope.dimension_sections")
            ),
        ));
    }
    // llama.cpp reads q, k and v fused (`attn_qkv`) before the separate ones on attention
    // layers; there the name is the recurrent layers' input projection.
    for (l, &r) in recurrent.iter().enumerate() {
        let fused = format!("blk.{l}.attn_qkv.weight");
        if !r && g.tensor_info(&fused).is_some() {
            return Err(invalid(
                g.path(),
                format!("tensor {fused} (q, k and v fused on an attention layer) is not implemented for {ARCH}"),
            ));
        }
    }
    cfg.qk_norm = true;
    cfg.attn_gate = true;
    cfg.delta_net = Some(DeltaNet {
        conv_kernel: u("ssm.conv_kernel")?,
        k_heads,
        v_heads,
        head_dim,
        recurrent,
        rope_sections,
    });
    Ok(cfg)
}

/// config.json keys of `Qwen3_5TextConfig` that change nothing this engine computes.
const HF_INERT: &[&str] = &[
    "architectures",
    "model_type",
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "rms_norm_eps",
    "max_position_embeddings",
    "attention_bias",
    "tie_word_embeddings",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "torch_dtype",
    "dtype",
    "transformers_version",
    "initializer_range",
    "use_cache",
    "attention_dropout",
    "hidden_act",
    "attn_output_gate",
    "full_attention_interval",
    "layer_types",
    "linear_conv_kernel_dim",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "rope_parameters",
    "rope_theta",
    "rope_scaling",
    "partial_rotary_factor",
    // The MTP draft layers, which scoring does not run (module docs).
    "mtp_num_hidden_layers",
    "mtp_use_dedicated_embeddings",
    // The recurrent state's storage type in transformers' cache; this engine keeps it in f32.
    "mamba_ssm_dtype",
];

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    let bad = |what: String| Err(invalid(&json.path, what));
    if let Some(map) = json.value.as_object() {
        if let Some(k) = map.keys().find(|k| !HF_INERT.contains(&k.as_str())) {
            return bad(format!(
                "config.json key {k:?} is not implemented for {ARCH}"
            ));
        }
    }
    json.expect_activation(&["silu"])?;
    if !json.bool_or("attn_output_gate", true)? {
        return bad("attn_output_gate false is not implemented (llama.cpp's qwen35 gates)".into());
    }
    if json.bool_or("attention_bias", false)? {
        return bad(format!("attention_bias is not implemented for {ARCH}"));
    }
    // The rope: `rope_parameters` (transformers 5) or `rope_theta` and `partial_rotary_factor`.
    let (mut theta, mut partial, mut sections) = (json.opt_f32("rope_theta")?, None, None);
    if let Some(p) = json.get("rope_parameters") {
        for (k, v) in p.as_object().into_iter().flatten() {
            match k.as_str() {
                "rope_type" if v.as_str() == Some("default") => {}
                "rope_theta" => theta = v.as_f64().map(|x| x as f32),
                "partial_rotary_factor" => partial = v.as_f64(),
                "mrope_section" => sections = Some(v.clone()),
                "mrope_interleaved" if v.as_bool() == Some(true) => {}
                _ => {
                    return bad(format!(
                        "rope_parameters {k} {v} is not implemented for {ARCH}"
                    ))
                }
            }
        }
    }
    if json.get("rope_scaling").is_some() {
        return bad(format!("rope_scaling is not implemented for {ARCH}"));
    }
    let partial = match partial {
        Some(p) => p,
        None => json
            .opt_f32("partial_rotary_factor")?
            .map_or(0.25, f64::from),
    };
    let mut cfg = json.base_config(ARCH)?;
    cfg.rope.theta = theta.unwrap_or(10_000_000.0);
    cfg.rope.rotary_dim = (cfg.head_dim as f64 * partial).round() as usize;
    cfg.tied_embeddings = json.bool_or("tie_word_embeddings", false)?;
    let rope_sections = match sections {
        None => vec![11, 11, 10, 0],
        Some(v) => {
            let list: Option<Vec<i32>> = v.as_array().map(|a| {
                a.iter()
                    .filter_map(|x| x.as_i64().and_then(|x| i32::try_from(x).ok()))
                    .collect()
            });
            match list {
                Some(mut l) if (1..=4).contains(&l.len()) && l.iter().all(|&s| s >= 0) => {
                    l.resize(4, 0);
                    l
                }
                _ => return bad(format!("mrope_section {v} is not up to 4 sections")),
            }
        }
    };
    let recurrent = match json.get("layer_types") {
        Some(types) => {
            let flags: Option<Vec<bool>> = types.as_array().and_then(|t| {
                t.iter()
                    .map(|t| match t.as_str() {
                        Some("linear_attention") => Some(true),
                        Some("full_attention") => Some(false),
                        _ => None,
                    })
                    .collect::<Option<Vec<bool>>>()
            });
            match flags {
                Some(f) if f.len() == cfg.layers => f,
                _ => {
                    return bad(format!(
                        "layer_types {types} is not {} of linear_attention or full_attention",
                        cfg.layers
                    ))
                }
            }
        }
        None => {
            let interval = json
                .opt_usize("full_attention_interval")?
                .unwrap_or(FULL_ATTENTION_INTERVAL);
            if interval == 0 {
                return bad("full_attention_interval is 0".into());
            }
            recurrent_every(cfg.layers, interval)
        }
    };
    let head_dim = json.usize("linear_key_head_dim")?;
    let value_dim = json.usize("linear_value_head_dim")?;
    if value_dim != head_dim {
        return bad(format!(
            "linear_value_head_dim {value_dim} differs from linear_key_head_dim {head_dim}: not \
             implemented (llama.cpp requires them equal)"
        ));
    }
    cfg.qk_norm = true;
    cfg.attn_gate = true;
    cfg.delta_net = Some(DeltaNet {
        conv_kernel: json.usize("linear_conv_kernel_dim")?,
        k_heads: json.usize("linear_num_key_heads")?,
        v_heads: json.usize("linear_num_value_heads")?,
        head_dim,
        recurrent,
        rope_sections,
    });
    Ok(cfg)
}

/// Which way `reorder` moves value heads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Hugging Face's (grouped by key head) to llama.cpp's (tiled), as convert_hf_to_gguf does.
    ToTiled,
    ToGrouped,
}

/// `data`'s rows `[first, first + v_heads · unit)` (each row `cols` wide) with the value heads
/// reordered; with `cols` 1 and a transposed view, the columns of `out_proj`.
fn reorder(data: &mut [f32], cols: usize, first: usize, unit: usize, net: &DeltaNet, to: Order) {
    let (k, r) = (net.k_heads, net.v_heads / net.k_heads);
    if r <= 1 {
        return;
    }
    let block = unit * cols;
    let old = data[first * cols..][..net.v_heads * block].to_vec();
    for n in 0..net.v_heads {
        // Tiled head n is grouped head (n mod k) · r + n / k.
        let grouped = (n % k) * r + n / k;
        let (to_head, from_head) = match to {
            Order::ToTiled => (n, grouped),
            Order::ToGrouped => (grouped, n),
        };
        data[(first + to_head * unit) * cols..][..block]
            .copy_from_slice(&old[from_head * block..][..block]);
    }
}

/// The value heads of a delta-net tensor `part` reordered `to`; `shape` is the block's.
fn reorder_part(part: Ssm, t: &mut RawTensor, net: &DeltaNet, to: Order) {
    let (hd, kd) = (net.head_dim, net.key_dim());
    let cols = |t: &RawTensor| t.data.len() / t.shape[0].max(1);
    match part {
        Ssm::Qkv | Ssm::Conv => {
            let c = cols(t);
            reorder(&mut t.data, c, 2 * kd, hd, net, to)
        }
        Ssm::Gate => {
            let c = cols(t);
            reorder(&mut t.data, c, 0, hd, net, to)
        }
        Ssm::Beta | Ssm::Alpha | Ssm::Dt | Ssm::A => {
            let c = cols(t);
            reorder(&mut t.data, c, 0, 1, net, to)
        }
        Ssm::Out => {
            // Columns: reorder the transpose.
            let (rows, c) = (t.shape[0], cols(t));
            let mut tr = vec![0f32; t.data.len()];
            for i in 0..rows {
                for j in 0..c {
                    tr[j * rows + i] = t.data[i * c + j];
                }
            }
            reorder(&mut tr, rows, 0, hd, net, to);
            for i in 0..rows {
                for j in 0..c {
                    t.data[i * c + j] = tr[j * rows + i];
                }
            }
        }
        Ssm::Norm => {}
    }
}

/// `A = −exp(A_log)`, in f64 and rounded once.
fn a_from_log(x: f32) -> f32 {
    (-(x as f64).exp()) as f32
}

/// The delta-net part a Hugging Face tensor name holds.
fn ssm_of(name: &str) -> Option<Ssm> {
    let rest = name.split_once(".linear_attn.")?.1;
    Some(match rest {
        "in_proj_qkv.weight" => Ssm::Qkv,
        "in_proj_z.weight" => Ssm::Gate,
        "in_proj_b.weight" => Ssm::Beta,
        "in_proj_a.weight" => Ssm::Alpha,
        "conv1d.weight" => Ssm::Conv,
        "dt_bias" => Ssm::Dt,
        "A_log" => Ssm::A,
        "norm.weight" => Ssm::Norm,
        "out_proj.weight" => Ssm::Out,
        _ => return None,
    })
}

/// A Qwen3.5 Hugging Face checkpoint's tensors as the block reads them (module docs).
struct FromHf<'a> {
    inner: &'a dyn TensorFile,
    net: Option<DeltaNet>,
}

/// `[channels, 1, taps]` as `[channels, taps]`.
fn squeezed(shape: &[usize]) -> Vec<usize> {
    match shape {
        [c, 1, k] => vec![*c, *k],
        other => other.to_vec(),
    }
}

impl TensorFile for FromHf<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let Some(mut t) = self.inner.tensor(name)? else {
            return Ok(None);
        };
        match ssm_of(name) {
            Some(part) => {
                if part == Ssm::A {
                    t.data.iter_mut().for_each(|x| *x = a_from_log(*x));
                }
                t.shape = squeezed(&t.shape);
                if let Some(net) = &self.net {
                    reorder_part(part, &mut t, net, Order::ToTiled);
                }
            }
            None if name.ends_with("norm.weight") => t.data.iter_mut().for_each(|v| *v += 1.0),
            None => {}
        }
        Ok(Some(t))
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        Ok(self.inner.describe(name)?.map(|d| TensorDesc {
            shape: squeezed(&d.shape),
            ty: d.ty,
        }))
    }

    fn names(&self) -> Vec<String> {
        self.inner
            .names()
            .into_iter()
            .filter(|n| !n.starts_with("mtp."))
            .collect()
    }
}

/// Whether `name` is one of an MTP draft layer's tensors (`blk.N.*` from N = the model's
/// `layers`), which scoring does not read (`config_from_gguf`).
fn draft(name: &str, layers: usize) -> bool {
    name.strip_prefix("blk.")
        .and_then(|r| r.split_once('.'))
        .and_then(|(l, _)| l.parse::<usize>().ok())
        .is_some_and(|l| l >= layers)
}

/// A block weight as a Qwen3.5 checkpoint stores it: the inverse of `FromHf`, refused where no
/// stored value gives the same bits back.
fn to_hf(part: Part, cfg: &Config, mut t: RawTensor) -> Result<RawTensor, String> {
    match part {
        Part::Ssm(_, s) => {
            if let Some(net) = &cfg.delta_net {
                reorder_part(s, &mut t, net, Order::ToGrouped);
            }
            if s == Ssm::A {
                for (i, a) in t.data.iter_mut().enumerate() {
                    *a = a_log_of(*a)
                        .ok_or_else(|| format!("A {i} ({a}) is −exp of no f32 A_log"))?;
                }
            }
            Ok(t)
        }
        Part::AttnNorm(_)
        | Part::MlpNorm(_)
        | Part::FinalNorm
        | Part::QNorm(_)
        | Part::KNorm(_) => gemma2::norm_to_hf("norm.weight", t),
        _ => Ok(t),
    }
}

/// An f32 `x` with `a_from_log(x) == a` to the bit, near `ln(−a)`.
fn a_log_of(a: f32) -> Option<f32> {
    // NaN and non-negative values have no preimage.
    if a.is_nan() || a >= 0.0 {
        return None;
    }
    let guess = (-(a as f64)).ln() as f32;
    (0..=8u32)
        .flat_map(|k| {
            [
                guess.to_bits().wrapping_add(k),
                guess.to_bits().wrapping_sub(k),
            ]
        })
        .map(f32::from_bits)
        .find(|&x| a_from_log(x).to_bits() == a.to_bits())
}

/// A family file's config: Qwen3.5's shapes at width `hidden` and MLP width `intermediate`, 4
/// layers (`Family::family_files`).
fn family_file(hidden: usize, intermediate: usize) -> Config {
    use crate::model::block::delta_net::DeltaNet;
    let mut c = crate::model::dev::family_files::base("qwen35", hidden, intermediate, 8, 2, 256);
    c.layers = 4;
    c.rope.theta = 10_000_000.0;
    c.rope.rotary_dim = 64;
    c.max_positions = 262_144;
    c.qk_norm = true;
    c.attn_gate = true;
    c.delta_net = Some(DeltaNet {
        conv_kernel: 4,
        k_heads: 16,
        v_heads: 16,
        head_dim: 128,
        recurrent: recurrent_every(4, 4),
        rope_sections: vec![11, 11, 10, 0],
    });
    c
}

pub struct Qwen35;

impl Family for Qwen35 {
    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::dev::family_files::FamilyFile;
        vec![
            // Issue 44. Qwen3.5-0.8B (config.json's text_config): 24 layers cut to 4, one whole
            // period of three gated delta-net layers and one full-attention layer; 16 key and 16
            // value heads of 128, a convolution of 4 taps; attention of 8 heads of 256 over 2 KV
            // heads with an output gate, rope over 64 dimensions at base 10⁷ (sections 11, 11, 10).
            FamilyFile {
                name: "qwen35-0.8b",
                real: "Qwen3.5-0.8B",
                config: || family_file(1024, 3584),
            },
            // Qwen3.5-2B: the same but for the width, 2048, and the MLP's, 6144.
            FamilyFile {
                name: "qwen35-2b",
                real: "Qwen3.5-2B",
                config: || family_file(2048, 6144),
            },
        ]
    }

    fn gguf_arch(&self) -> &'static str {
        ARCH
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Qwen3_5ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["qwen3_5_text"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn hf_view<'a>(&self, file: &'a dyn TensorFile, cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(FromHf {
            inner: file,
            net: cfg.delta_net.clone(),
        })
    }

    fn to_hf(&self, part: Part, cfg: &Config, t: RawTensor) -> Result<RawTensor, String> {
        to_hf(part, cfg, t)
    }

    /// The convolution as transformers' `Conv1d` holds it.
    fn hf_shape(&self, part: Part, shape: Vec<usize>) -> Vec<usize> {
        match (part, shape.as_slice()) {
            (Part::Ssm(_, Ssm::Conv), &[c, k]) => vec![c, 1, k],
            _ => shape,
        }
    }

    /// Qwen3.5's own keys; the rope as `rope_parameters`, as its checkpoints write it.
    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        let Some(net) = &cfg.delta_net else {
            return;
        };
        json.remove("rope_theta");
        json.remove("rope_scaling");
        let mut sections = net.rope_sections.clone();
        sections.truncate(3);
        json.insert(
            "rope_parameters".into(),
            json!({
                "rope_type": "default",
                "rope_theta": f64::from(cfg.rope.theta),
                "partial_rotary_factor": cfg.rope.rotary_dim as f64 / cfg.head_dim as f64,
                "mrope_section": sections,
                "mrope_interleaved": true,
            }),
        );
        let types: Vec<&str> = net
            .recurrent
            .iter()
            .map(|&r| {
                if r {
                    "linear_attention"
                } else {
                    "full_attention"
                }
            })
            .collect();
        json.insert("layer_types".into(), json!(types));
        // Also at the top level, where Qwen3-Next's configs say it (and `model export-hf`
        // looks for it).
        json.insert(
            "partial_rotary_factor".into(),
            json!(cfg.rope.rotary_dim as f64 / cfg.head_dim as f64),
        );
        json.insert("hidden_act".into(), json!("silu"));
        json.insert("attn_output_gate".into(), json!(true));
        json.insert("linear_conv_kernel_dim".into(), json!(net.conv_kernel));
        json.insert("linear_key_head_dim".into(), json!(net.head_dim));
        json.insert("linear_value_head_dim".into(), json!(net.head_dim));
        json.insert("linear_num_key_heads".into(), json!(net.k_heads));
        json.insert("linear_num_value_heads".into(), json!(net.v_heads));
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[gguf_name]
    }

    fn gguf_view<'a>(&self, file: &'a dyn TensorFile, cfg: &Config) -> Box<dyn TensorFile + 'a> {
        let layers = cfg.layers;
        Box::new(Unread {
            inner: file,
            unread: Box::new(move |n| draft(n, layers)),
        })
    }

    /// The recurrent layers' keys as convert_hf_to_gguf writes them: the interval when the
    /// pattern is llama.cpp's rule for one, else the flags.
    fn gguf_metadata(&self, cfg: &Config) -> Vec<(String, gguf::Value)> {
        let Some(net) = &cfg.delta_net else {
            return Vec::new();
        };
        let key = |k: &str| format!("{ARCH}.{k}");
        let mut out = vec![
            (
                key("rope.dimension_sections"),
                Value::Array(net.rope_sections.iter().map(|&s| Value::I32(s)).collect()),
            ),
            (key("ssm.conv_kernel"), Value::U32(net.conv_kernel as u32)),
            (key("ssm.state_size"), Value::U32(net.head_dim as u32)),
            (key("ssm.group_count"), Value::U32(net.k_heads as u32)),
            (key("ssm.time_step_rank"), Value::U32(net.v_heads as u32)),
            (key("ssm.inner_size"), Value::U32(net.value_dim() as u32)),
        ];
        let interval =
            (1..=cfg.layers + 1).find(|&i| recurrent_every(cfg.layers, i) == net.recurrent);
        match interval {
            Some(i) => out.push((key("full_attention_interval"), Value::U32(i as u32))),
            None => out.push((
                key("attention.recurrent_layers"),
                Value::Array(net.recurrent.iter().map(|&r| Value::Bool(r)).collect()),
            )),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fourth_layer_attends() {
        assert_eq!(
            recurrent_every(8, 4),
            [true, true, true, false, true, true, true, false]
        );
    }
}
