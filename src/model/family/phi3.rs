//! Phi-3 (Phi-3-mini, Phi-4-mini-instruct): Llama's block with q/k/v and gate/up each stored as
//! one fused matrix, RoPE on only the leading `partial_rotary_factor` of each head, and longrope
//! scaling.
//!
//! From GGUF, as llama.cpp writes and reads it: `attn_qkv` fused (or `attn_q`/`attn_k`/`attn_v`
//! apart), gate and up fused in `ffn_up` (gate first), `rope.dimension_count` rotated dims,
//! `rope_factors_short`/`rope_factors_long` with `rope.scaling.attn_factor` and
//! `rope.scaling.original_context_length`, and the embedding reused when `output.weight` is
//! absent. llama.cpp ignores phi3's `attention.sliding_window` (it disabled Phi SWA), and so does
//! this reader: the window is longer than every position we run (`Config::position_limit` caps
//! sequences at the original context, and a window shorter than that is refused).

use std::path::Path;

use crate::model::block::config::{Config, LongRope};
use crate::model::block::transformer::{Blocks, Naming, Part, RawTensor, TensorDesc, TensorFile};
use crate::model::family::llama;
use crate::model::family::read::{gguf_config_with, refuse_unknown_keys, HfJson};
use crate::model::format::gguf::{BlockBytes, Gguf};
use crate::model::{invalid, ModelError};

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    json.expect_activation(&["silu"])?;
    let mut cfg = json.base_config("phi3")?;
    let partial = json.opt_f32("partial_rotary_factor")?.unwrap_or(1.0);
    if !(partial > 0.0 && partial <= 1.0) {
        return Err(invalid(
            &json.path,
            format!("partial_rotary_factor {partial} is not in (0, 1]"),
        ));
    }
    // As transformers does: int(head_dim * factor).
    cfg.rope.rotary_dim = (cfg.head_dim as f64 * partial as f64) as usize;
    if let Some(scaling) = json.get("rope_scaling") {
        cfg.rope.longrope = Some(longrope(json, scaling, cfg.max_positions)?);
        cfg.rope.scaling = Some("longrope".into());
    }
    if let Some(w) = json.opt_usize("sliding_window")? {
        refuse_short_window(&json.path, "sliding_window", w, &cfg)?;
    }
    Ok(cfg)
}

/// A window shorter than the positions we run would change results: refused by name.
fn refuse_short_window(path: &Path, key: &str, w: usize, cfg: &Config) -> Result<(), ModelError> {
    if w > 0 && w < cfg.position_limit() {
        return Err(invalid(
            path,
            format!(
                "{key} {w} is shorter than the {} positions this model runs: sliding-window \
                 attention is not implemented for phi3 (llama.cpp disables it too)",
                cfg.position_limit()
            ),
        ));
    }
    Ok(())
}

/// The tensors phi3's GGUF reader takes besides the weights of `Part`s.
pub const GGUF_EXTRA_TENSORS: &[&str] = &["rope_factors_long.weight", "rope_factors_short.weight"];

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    refuse_unknown_keys(g, "phi3", &["attention.sliding_window"])?;
    let mut cfg = gguf_config_with(g, "phi3", &["longrope"])?;
    let factor = |name: &str| -> Result<Option<Vec<f32>>, ModelError> {
        if g.tensor_info(name).is_none() {
            return Ok(None);
        }
        let (shape, data) = g.tensor_f32(name)?;
        let want = cfg.rope.rotary_dim / 2;
        if shape != [want] {
            return Err(ModelError::Shape {
                path: g.path().to_path_buf(),
                tensor: name.into(),
                expected: vec![want],
                found: shape,
            });
        }
        Ok(Some(data))
    };
    let short = factor("rope_factors_short.weight")?;
    let long = factor("rope_factors_long.weight")?;
    let attn_factor = match g.get("phi3.rope.scaling.attn_factor") {
        Some(_) => g.get_f32("phi3.rope.scaling.attn_factor")?,
        None => 1.0,
    };
    match (short, long) {
        (Some(short_factor), Some(long_factor)) => {
            let original = g.get_u32("phi3.rope.scaling.original_context_length")? as usize;
            cfg.rope.longrope = Some(LongRope {
                short_factor,
                long_factor,
                original_max_positions: original,
                attention_factor: attn_factor,
            });
            cfg.rope.scaling = Some("longrope".into());
        }
        (None, None) if attn_factor == 1.0 => {}
        (None, None) => {
            return Err(invalid(
                g.path(),
                format!("phi3.rope.scaling.attn_factor {attn_factor} without rope factors is not implemented"),
            ))
        }
        _ => {
            return Err(invalid(
                g.path(),
                "only one of rope_factors_short.weight and rope_factors_long.weight is present",
            ))
        }
    }
    if g.get("phi3.attention.sliding_window").is_some() {
        let w = g.get_u32("phi3.attention.sliding_window")? as usize;
        refuse_short_window(g.path(), "phi3.attention.sliding_window", w, &cfg)?;
    }
    Ok(cfg)
}

/// GGUF names: q/k/v from the fused `attn_qkv`, gate and up from the fused `ffn_up`.
pub fn gguf_name_fused(part: Part) -> String {
    let blk = |l: usize, s: &str| format!("blk.{l}.{s}");
    match part {
        Part::Q(l) => blk(l, "attn_qkv.weight[q]"),
        Part::K(l) => blk(l, "attn_qkv.weight[k]"),
        Part::V(l) => blk(l, "attn_qkv.weight[v]"),
        other => gguf_name_split(other),
    }
}

/// GGUF names when q, k and v are stored apart.
pub fn gguf_name_split(part: Part) -> String {
    let blk = |l: usize, s: &str| format!("blk.{l}.{s}");
    match part {
        Part::Gate(l) => blk(l, "ffn_up.weight[gate]"),
        Part::Up(l) => blk(l, "ffn_up.weight[up]"),
        other => llama::gguf_name(other),
    }
}

fn longrope(
    json: &HfJson,
    s: &serde_json::Value,
    max_positions: usize,
) -> Result<LongRope, ModelError> {
    let bad = |what: String| invalid(&json.path, format!("rope_scaling: {what}"));
    let kind = s
        .get("rope_type")
        .or_else(|| s.get("type"))
        .and_then(|v| v.as_str());
    if kind != Some("longrope") {
        return Err(bad(format!(
            "type {kind:?} is not supported (only \"longrope\")"
        )));
    }
    let factors = |key: &str| -> Result<Vec<f32>, ModelError> {
        s.get(key)
            .and_then(|v| v.as_array())
            .and_then(|a| a.iter().map(|x| x.as_f64().map(|x| x as f32)).collect())
            .ok_or_else(|| bad(format!("{key} is missing or not a list of numbers")))
    };
    let original = match json.opt_usize("original_max_position_embeddings")? {
        Some(o) => o,
        None => s
            .get("original_max_position_embeddings")
            .and_then(|v| v.as_u64())
            .map(|v| v as usize)
            .ok_or_else(|| bad("original_max_position_embeddings is missing".into()))?,
    };
    if original == 0 {
        return Err(bad("original_max_position_embeddings is 0".into()));
    }
    // transformers' _compute_longrope_parameters.
    let attention_factor = match s.get("attention_factor").and_then(|v| v.as_f64()) {
        Some(f) => f as f32,
        None => {
            let factor = max_positions as f64 / original as f64;
            if factor <= 1.0 {
                1.0
            } else {
                (1.0 + factor.ln() / (original as f64).ln()).sqrt() as f32
            }
        }
    };
    Ok(LongRope {
        short_factor: factors("short_factor")?,
        long_factor: factors("long_factor")?,
        original_max_positions: original,
        attention_factor,
    })
}

/// Names: Llama's, except the fused matrices, whose slices are addressed as `NAME[q]` etc. and
/// cut out by [`Unfused`].
pub fn hf_name(part: Part) -> String {
    let layer = |l: usize, s: &str| format!("model.layers.{l}.{s}");
    match part {
        Part::Q(l) => layer(l, "self_attn.qkv_proj.weight[q]"),
        Part::K(l) => layer(l, "self_attn.qkv_proj.weight[k]"),
        Part::V(l) => layer(l, "self_attn.qkv_proj.weight[v]"),
        Part::Gate(l) => layer(l, "mlp.gate_up_proj.weight[gate]"),
        Part::Up(l) => layer(l, "mlp.gate_up_proj.weight[up]"),
        other => llama::hf_name(other),
    }
}

/// Serves row blocks of the fused matrices under the names [`hf_name`] gives them.
pub struct Unfused<'a> {
    pub inner: &'a dyn TensorFile,
    /// Rows of q, k, v in the fused qkv matrix.
    pub qkv_rows: [usize; 3],
    /// Rows of gate and up in the fused gate_up matrix.
    pub gate_up_rows: [usize; 2],
}

impl Unfused<'_> {
    pub fn new<'a>(inner: &'a dyn TensorFile, cfg: &Config) -> Unfused<'a> {
        let (q, kv) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        Unfused {
            inner,
            qkv_rows: [q, kv, kv],
            gate_up_rows: [cfg.intermediate; 2],
        }
    }
}

impl Unfused<'_> {
    /// The fused tensor, rows and slot index behind `NAME[slot]`, `None` for a plain name.
    fn slot<'n>(&self, name: &'n str) -> Option<(&'n str, &[usize], usize)> {
        let (fused, slot) = name.strip_suffix(']').and_then(|n| n.split_once('['))?;
        let (blocks, index): (&[usize], usize) = match slot {
            "q" => (&self.qkv_rows, 0),
            "k" => (&self.qkv_rows, 1),
            "v" => (&self.qkv_rows, 2),
            "gate" => (&self.gate_up_rows, 0),
            "up" => (&self.gate_up_rows, 1),
            _ => return None,
        };
        Some((fused, blocks, index))
    }
}

impl TensorFile for Unfused<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    /// Rows of a quantised fused matrix are whole blocks each: a slot is a range of its bytes.
    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        let Some((fused, blocks, index)) = self.slot(name) else {
            return self.inner.blocks(name);
        };
        let Some((shape, ty, bytes)) = self.inner.blocks(fused)? else {
            return Ok(None);
        };
        let rows: usize = blocks.iter().sum();
        let [r, cols] = shape[..] else {
            return Ok(None);
        };
        let Some(row_bytes) = ty.bytes_for(cols) else {
            return Ok(None);
        };
        if r != rows || cols % ty.block_len() != 0 {
            return Ok(None);
        }
        let start: usize = blocks[..index].iter().sum::<usize>() * row_bytes;
        let len = blocks[index] * row_bytes;
        let bytes = match bytes {
            BlockBytes::Mapped { map, range } => BlockBytes::Mapped {
                map,
                range: range.start + start..range.start + start + len,
            },
            BlockBytes::Owned(b) => BlockBytes::Owned(b[start..start + len].to_vec()),
        };
        Ok(Some((vec![blocks[index], cols], ty, bytes)))
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        let Some((fused, blocks, index)) = self.slot(name) else {
            return self.inner.describe(name);
        };
        let Some(d) = self.inner.describe(fused)? else {
            return Ok(None);
        };
        let rows: usize = blocks.iter().sum();
        match d.shape[..] {
            [r, cols] if r == rows => Ok(Some(TensorDesc {
                shape: vec![blocks[index], cols],
                ty: d.ty,
            })),
            _ => Err(shape_error(self.path(), fused, rows, &d.shape)),
        }
    }

    fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let Some((fused, slot)) = name.strip_suffix(']').and_then(|n| n.split_once('[')) else {
            return self.inner.tensor(name);
        };
        let (blocks, index): (&[usize], usize) = match slot {
            "q" => (&self.qkv_rows, 0),
            "k" => (&self.qkv_rows, 1),
            "v" => (&self.qkv_rows, 2),
            "gate" => (&self.gate_up_rows, 0),
            "up" => (&self.gate_up_rows, 1),
            _ => return Ok(None),
        };
        let Some(t) = self.inner.tensor(fused)? else {
            return Ok(None);
        };
        let rows: usize = blocks.iter().sum();
        let [r, cols] = t.shape[..] else {
            return Err(shape_error(self.path(), fused, rows, &t.shape));
        };
        if r != rows {
            return Err(shape_error(self.path(), fused, rows, &t.shape));
        }
        let start: usize = blocks[..index].iter().sum();
        let n = blocks[index];
        let data = t.data[start * cols..(start + n) * cols].to_vec();
        Ok(Some(RawTensor {
            shape: vec![n, cols],
            data,
        }))
    }
}

fn shape_error(path: &Path, tensor: &str, rows: usize, found: &[usize]) -> ModelError {
    invalid(
        path,
        format!("fused tensor {tensor} has shape {found:?}, expected [{rows}, _]"),
    )
}

pub struct Phi3;

impl super::Family for Phi3 {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::Fixture;
        use safetensors::tensor::Dtype;
        use serde_json::json;
        vec![Fixture {
            committed: true,
            fused: true,
            dtype: Dtype::BF16,
            config: |_, c| {
                // 16 * 0.75 = 12 rotated dims: 6 frequencies, each with its own longrope
                // divisor.
                let short: Vec<f64> = (0..6).map(|i| 1.0 + 0.25 * i as f64).collect();
                let long: Vec<f64> = (0..6).map(|i| 2.0 + 0.5 * i as f64).collect();
                c["partial_rotary_factor"] = json!(0.75);
                c["original_max_position_embeddings"] = json!(128);
                c["rope_scaling"] =
                    json!({"type": "longrope", "short_factor": short, "long_factor": long});
            },
            ..Fixture::base("phi3", "Phi3ForCausalLM")
        }]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::block::config::LongRope;
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![FamilyFile {
            name: "phi3-mini4",
            real: "Phi-4-mini-instruct",
            config: || {
                let mut c = base("phi3", 3072, 8192, 24, 8, 128);
                c.norm_eps = 1e-5;
                c.rope.rotary_dim = 96;
                c.max_positions = 131_072;
                // Longrope divisors of Phi-4-mini's shape (48 each); short ones near 1, long ones
                // rising, as in the released config.
                let short: Vec<f32> = (0..48)
                    .map(|i| 1.0 + 0.05 * (i as f32 / 47.0).powi(3))
                    .collect();
                let long: Vec<f32> = (0..48)
                    .map(|i| 1.0 + 40.0 * (i as f32 / 47.0).powi(2))
                    .collect();
                let factor = 131_072.0f64 / 4096.0;
                c.rope.longrope = Some(LongRope {
                    short_factor: short,
                    long_factor: long,
                    original_max_positions: 4096,
                    attention_factor: (1.0 + factor.ln() / 4096f64.ln()).sqrt() as f32,
                });
                c.rope.scaling = Some("longrope".into());
                c
            },
        }]
    }

    fn gguf_arch(&self) -> &'static str {
        "phi3"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Phi3ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["phi3"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[gguf_name_fused, gguf_name_split]
    }

    fn hf_naming(&self) -> Naming {
        hf_name
    }

    fn gguf_extra_tensors(&self) -> &'static [&'static str] {
        GGUF_EXTRA_TENSORS
    }

    fn gguf_view<'a>(&self, file: &'a dyn TensorFile, cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(Unfused::new(file, cfg))
    }

    fn hf_view<'a>(&self, file: &'a dyn TensorFile, cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(Unfused::new(file, cfg))
    }

    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        use serde_json::json;
        json.insert(
            "partial_rotary_factor".into(),
            json!(cfg.rope.rotary_dim as f64 / cfg.head_dim as f64),
        );
        if let Some(l) = &cfg.rope.longrope {
            let list = |f: &[f32]| f.iter().map(|x| f64::from(*x)).collect::<Vec<_>>();
            json.insert(
                "original_max_position_embeddings".into(),
                json!(l.original_max_positions),
            );
            json.insert(
                "rope_scaling".into(),
                json!({"type": "longrope", "short_factor": list(&l.short_factor),
                    "long_factor": list(&l.long_factor),
                    "attention_factor": f64::from(l.attention_factor)}),
            );
        }
    }
}
