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
//! Refused by name: every key llama.cpp's loader reads that is not implemented (the MTP draft
//! layers' `nextn_predict_layers`, `attention.scale`, ...), q, k and v fused in the attention
//! layers' `attn_qkv`, a key head size other than the value head size (llama.cpp asserts them
//! equal), and Hugging Face checkpoints (not converted here yet).

use crate::model::block::config::Config;
use crate::model::block::delta_net::DeltaNet;
use crate::model::block::transformer::{Naming, Part};
use crate::model::family::llama;
use crate::model::family::read::{gguf_base_config, refuse_unknown_keys, HfJson};
use crate::model::family::Family;
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
        Some(Value::Array(items)) => items
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
                    "{} is {other:?}, expected an array of booleans",
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

pub struct Qwen35;

impl Family for Qwen35 {
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
        Err(invalid(
            &json.path,
            "Qwen3.5 Hugging Face checkpoints are not implemented yet (issue 44): load its GGUF \
             file",
        ))
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[gguf_name]
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
