//! Phi-3 (Phi-4-mini-instruct): Llama's block with q/k/v and gate/up each stored as one fused
//! matrix, RoPE on only the leading `partial_rotary_factor` of each head, and longrope scaling.

use std::path::Path;

use super::config::{invalid, Config, HfJson, LongRope};
use super::llama;
use super::transformer::{Part, RawTensor, TensorFile};
use super::ModelError;

pub fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
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
    }
    Ok(cfg)
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

impl TensorFile for Unfused<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
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
