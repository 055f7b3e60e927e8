//! Qwen3-MoE (issue 45): Qwen3's attention (a per-head RMSNorm on q and k before RoPE, an
//! explicit head dim, rotate-halves RoPE), and in every layer a mixture of experts in place of
//! the MLP (`block::moe`): a softmax router over `expert_count` experts, the `expert_used_count`
//! most probable run, their weights renormalised over the chosen ones (llama.cpp's graph
//! hard-codes the renormalisation for this architecture, `build_moe_ffn(.., norm_w = true, ..)`;
//! transformers' `norm_topk_prob`).
//!
//! Its files: GGUF keeps a layer's experts in one 3-D tensor per projection,
//! `blk.N.ffn_{gate,up,down}_exps.weight` (`[experts, rows, cols]`), served expert by expert
//! as slices of the mapped bytes ([`ExpertSlices`]), and the router as `blk.N.ffn_gate_inp`;
//! Hugging Face checkpoints one tensor per expert (`model.layers.N.mlp.experts.E.gate_proj`),
//! the router as `mlp.gate`.
//!
//! Refused by name: transformers' `mlp_only_layers` (dense layers among the sparse ones),
//! `decoder_sparse_step` other than 1, `norm_topk_prob` false (llama.cpp always renormalises,
//! so such a checkpoint has no faithful GGUF), sliding windows, any rope scaling but linear, and
//! every `qwen3moe.` GGUF key not read here (shared experts, gating functions, weight scales).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::read::{
    apply_linear, gguf_base_config, linear_scaling_json, refuse_unknown_keys, HfJson,
};
use super::Family;
use crate::model::block::config::{Config, Gating, Moe};
use crate::model::block::transformer::{Blocks, RawTensor, TensorDesc, TensorFile};
use crate::model::format::gguf::{self, BlockBytes, Gguf};
use crate::model::{invalid, ModelError};

pub struct Qwen3Moe;

/// The `qwen3moe.` keys read here beside the common ones.
const OWN_KEYS: &[&str] = &[
    "expert_count",
    "expert_used_count",
    "expert_feed_forward_length",
];

impl Family for Qwen3Moe {
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        use crate::model::dev::fixtures::{Fixture, EXPERTS, EXPERTS_USED, EXPERT_WIDTH};
        use serde_json::json;
        vec![Fixture {
            head_dim: 24,
            qk_norm: true,
            tied: false,
            moe: true,
            config: |_, c| {
                c["model_type"] = json!("qwen3_moe");
                c["num_experts"] = json!(EXPERTS);
                c["num_experts_per_tok"] = json!(EXPERTS_USED);
                c["moe_intermediate_size"] = json!(EXPERT_WIDTH);
                c["norm_topk_prob"] = json!(true);
                c["decoder_sparse_step"] = json!(1);
                c["mlp_only_layers"] = json!([]);
            },
            ..Fixture::base("qwen3moe", "Qwen3MoeForCausalLM")
        }]
    }

    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::block::config::{Gating, Moe};
        use crate::model::dev::family_files::{base, FamilyFile};
        vec![
            // Issue 45: Qwen3-30B-A3B (48 layers) cut to 1: its 128 experts of width 768 are
            // 2.4 GB of f32 per layer. Untied, as the checkpoint.
            FamilyFile {
                name: "qwen3moe-30b-a3b",
                real: "Qwen3-30B-A3B",
                config: || {
                    let mut c = base("qwen3moe", 2048, 6144, 32, 4, 128);
                    c.layers = 1;
                    c.rope.theta = 1_000_000.0;
                    c.qk_norm = true;
                    c.max_positions = 40_960;
                    c.tied_embeddings = false;
                    c.moe = Some(Moe {
                        experts: 128,
                        experts_used: 8,
                        expert_intermediate: 768,
                        norm_topk: true,
                        gating: Gating::Softmax,
                        biases: false,
                        clamped: None,
                    });
                    c
                },
            },
        ]
    }

    fn gguf_arch(&self) -> &'static str {
        "qwen3moe"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Qwen3MoeForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["qwen3_moe"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        refuse_unknown_keys(g, "qwen3moe", OWN_KEYS)?;
        let mut cfg = gguf_base_config(g, "qwen3moe")?;
        cfg.qk_norm = true;
        let key = |k: &str| format!("qwen3moe.{k}");
        let experts = g.get_u32(&key("expert_count"))? as usize;
        let used = g.get_u32(&key("expert_used_count"))? as usize;
        // llama.cpp's default when the key is absent: the dense width shared among the experts
        // used.
        let width = match g.get(&key("expert_feed_forward_length")) {
            Some(_) => g.get_u32(&key("expert_feed_forward_length"))? as usize,
            None => cfg.intermediate / used.max(1),
        };
        cfg.moe = Some(Moe {
            experts,
            experts_used: used,
            expert_intermediate: width,
            norm_topk: true,
            gating: Gating::Softmax,
            biases: false,
            clamped: None,
        });
        Ok(cfg)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        let linear = json.no_rope_scaling("qwen3moe")?;
        json.no_sliding_window("qwen3moe")?;
        json.expect_activation(&["silu"])?;
        let refuse = |what: String| Err(invalid(&json.path, what));
        if let Some(layers) = json.get("mlp_only_layers") {
            if layers.as_array().is_none_or(|a| !a.is_empty()) {
                return refuse(format!(
                    "mlp_only_layers {layers} (dense layers among the experts) is not implemented"
                ));
            }
        }
        if let Some(step) = json.opt_usize("decoder_sparse_step")? {
            if step != 1 {
                return refuse(format!(
                    "decoder_sparse_step {step} (experts in only some layers) is not implemented"
                ));
            }
        }
        if !json.bool_or("norm_topk_prob", false)? {
            return refuse(
                "norm_topk_prob false is not implemented: llama.cpp's qwen3moe always \
                 renormalises the chosen experts' weights, so such a checkpoint has no faithful \
                 GGUF"
                    .into(),
            );
        }
        let mut cfg = json.base_config("qwen3moe")?;
        apply_linear(&mut cfg, linear);
        cfg.qk_norm = true;
        cfg.moe = Some(Moe {
            experts: json.usize("num_experts")?,
            experts_used: json.usize("num_experts_per_tok")?,
            expert_intermediate: json.usize("moe_intermediate_size")?,
            norm_topk: true,
            gating: Gating::Softmax,
            biases: false,
            clamped: None,
        });
        Ok(cfg)
    }

    fn gguf_view<'a>(&self, file: &'a dyn TensorFile, _cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(ExpertSlices { inner: file })
    }

    fn hf_config(&self, cfg: &Config, json: &mut Map<String, Value>) {
        linear_scaling_json(cfg, json);
        if let Some(m) = &cfg.moe {
            json.insert("num_experts".into(), json!(m.experts));
            json.insert("num_experts_per_tok".into(), json!(m.experts_used));
            json.insert("moe_intermediate_size".into(), json!(m.expert_intermediate));
            json.insert("norm_topk_prob".into(), json!(m.norm_topk));
            json.insert("decoder_sparse_step".into(), json!(1));
            json.insert("mlp_only_layers".into(), json!([]));
        }
    }

    fn gguf_metadata(&self, cfg: &Config) -> Vec<(String, gguf::Value)> {
        let Some(m) = &cfg.moe else {
            return Vec::new();
        };
        let key = |k: &str| format!("{}.{k}", cfg.arch);
        vec![
            (key("expert_count"), gguf::Value::U32(m.experts as u32)),
            (
                key("expert_used_count"),
                gguf::Value::U32(m.experts_used as u32),
            ),
            (
                key("expert_feed_forward_length"),
                gguf::Value::U32(m.expert_intermediate as u32),
            ),
        ]
    }
}

/// Serves expert `e` of an expert tensor `[experts, rows, cols]` (or `[experts, n]`) under
/// `NAME[e]`: its slice, as a range of the mapped bytes (no copy) or, for `tensor`, read.
pub struct ExpertSlices<'a> {
    pub inner: &'a dyn TensorFile,
}

/// The stored name and expert index behind `NAME[e]`, `None` for any other name.
fn slot(name: &str) -> Option<(&str, usize)> {
    let (stored, e) = name.strip_suffix(']')?.split_once('[')?;
    Some((stored, e.parse().ok()?))
}

/// The `[rows, cols]` of expert `e` in a tensor of `shape`, or why there is none.
fn slice_shape(
    path: &Path,
    stored: &str,
    shape: &[usize],
    e: usize,
) -> Result<Vec<usize>, ModelError> {
    match shape {
        // A matrix per expert or, for gpt-oss's expert biases, a vector.
        [n, rest @ ..] if e < *n && !rest.is_empty() => Ok(rest.to_vec()),
        _ => Err(invalid(
            path,
            format!("expert tensor {stored} has shape {shape:?}: no expert {e} in [experts, ...]"),
        )),
    }
}

impl TensorFile for ExpertSlices<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let Some((stored, e)) = slot(name) else {
            return self.inner.tensor(name);
        };
        let Some(t) = self.inner.tensor(stored)? else {
            return Ok(None);
        };
        let shape = slice_shape(self.path(), stored, &t.shape, e)?;
        let n: usize = shape.iter().product();
        Ok(Some(RawTensor {
            data: t.data[e * n..(e + 1) * n].to_vec(),
            shape,
        }))
    }

    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        let Some((stored, e)) = slot(name) else {
            return self.inner.blocks(name);
        };
        let Some((shape, ty, bytes)) = self.inner.blocks(stored)? else {
            return Ok(None);
        };
        let slice = slice_shape(self.path(), stored, &shape, e)?;
        let (rows, cols) = slice.split_at(slice.len() - 1);
        let Some(row_bytes) = ty.bytes_for(cols[0]) else {
            return Err(invalid(
                self.path(),
                format!(
                    "expert tensor {stored}: rows of {} do not fill whole blocks of {ty:?}",
                    cols[0]
                ),
            ));
        };
        let len = rows.iter().product::<usize>() * row_bytes;
        let bytes = match bytes {
            BlockBytes::Mapped { map, range } => BlockBytes::Mapped {
                map,
                range: range.start + e * len..range.start + (e + 1) * len,
            },
            BlockBytes::Owned(b) => BlockBytes::Owned(b[e * len..(e + 1) * len].to_vec()),
        };
        Ok(Some((slice, ty, bytes)))
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        let Some((stored, e)) = slot(name) else {
            return self.inner.describe(name);
        };
        let Some(d) = self.inner.describe(stored)? else {
            return Ok(None);
        };
        Ok(Some(TensorDesc {
            shape: slice_shape(self.path(), stored, &d.shape, e)?,
            ty: d.ty,
        }))
    }

    fn names(&self) -> Vec<String> {
        self.inner.names()
    }
}
