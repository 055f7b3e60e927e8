//! Llama. Its tensor names (Hugging Face and GGUF) are shared by Qwen2 and Qwen3, which differ
//! from it only in config flags.
//!
//! Llama's one difference between its two file formats is the order of the rows of each q and k
//! head. Hugging Face keeps the two halves that RoPE pairs, (i, i + d/2); convert_hf_to_gguf
//! permutes them so each pair sits side by side, (2i, 2i + 1), for ggml's pairwise RoPE. The
//! transformer runs llama in GGUF's order whatever the file ([`GgufOrder`] permutes a Hugging
//! Face checkpoint as it loads), because a q·k dot product sums in row order: the same weights
//! then give the same bits from either format (`tests/hf_export.rs`).

use std::path::Path;

use super::config::{gguf_base_config, Config, HfJson, RopeLayout};
use super::gguf::Gguf;
use super::transformer::{Part, RawTensor, TensorFile};
use super::ModelError;

pub fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    json.no_rope_scaling("llama")?;
    if json.bool_or("mlp_bias", false)? {
        return Err(super::config::invalid(
            &json.path,
            "mlp_bias is not supported",
        ));
    }
    let mut cfg = json.base_config("llama")?;
    // Loaded through `GgufOrder`, so RoPE pairs neighbouring rows (module docs).
    cfg.rope.layout = RopeLayout::Interleaved;
    Ok(cfg)
}

pub fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    let mut cfg = gguf_base_config(g, "llama")?;
    // convert_hf_to_gguf permutes llama's q/k rows so that ggml's pairwise rope applies.
    cfg.rope.layout = RopeLayout::Interleaved;
    cfg.qkv_bias = g.tensor_info("blk.0.attn_q.bias").is_some();
    Ok(cfg)
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
        Part::Gate(l) => layer(l, "mlp.gate_proj.weight"),
        Part::Up(l) => layer(l, "mlp.up_proj.weight"),
        Part::Down(l) => layer(l, "mlp.down_proj.weight"),
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
        Part::Gate(l) => blk(l, "ffn_gate.weight"),
        Part::Up(l) => blk(l, "ffn_up.weight"),
        Part::Down(l) => blk(l, "ffn_down.weight"),
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
