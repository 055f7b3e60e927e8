//! What `deltalogic model inspect` says about a model file or directory, from its headers alone:
//! the checks a load runs (`scorer::check`), then the family, shapes, parameter count, storage
//! types per tensor group, tokenizer, chat template, context window. A file that cannot be
//! loaded is described as far as it can be, with the reason it is refused.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::model::block::config::{Activation, Config};
use crate::model::family::{Families, FAMILIES};
use crate::model::format::gguf::Gguf;
use crate::model::scorer;

#[derive(Debug, Serialize)]
pub struct Inspection {
    pub path: String,
    /// "gguf" or "hf".
    pub format: String,
    /// The architecture as the file names it.
    pub architecture: String,
    /// `None` when the file loads; otherwise exactly why not.
    pub not_implemented: Option<String>,
    pub family: Option<Family>,
    /// Tensor group ("attn_q", "ffn_down", "token_embd", ...) to storage type to count.
    pub tensor_types: BTreeMap<String, BTreeMap<String, usize>>,
    pub tokenizer: Option<TokenizerInfo>,
    pub chat_template: bool,
}

#[derive(Debug, Serialize)]
pub struct Family {
    pub family: String,
    pub layers: usize,
    pub hidden: usize,
    pub intermediate: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub vocab_size: usize,
    pub parameters: usize,
    pub context_window: usize,
    /// The longest sequence scored (longrope models: the original window).
    pub position_limit: usize,
    pub rope_theta: f32,
    pub rotary_dim: usize,
    pub rope_scaling: Option<String>,
    pub local_rope_theta: Option<f32>,
    pub sliding_window: Option<usize>,
    pub local_layers: usize,
    pub qkv_bias: bool,
    pub qk_norm: bool,
    pub post_norms: bool,
    pub activation: Activation,
    pub attn_softcap: Option<f32>,
    pub final_softcap: Option<f32>,
    pub tied_embeddings: bool,
    // Issue 43.
    /// Layers that run without RoPE (SmolLM3).
    pub no_rope_layers: usize,
    /// Whether blocks norm their input (false: OLMo 2, which norms only the outputs).
    pub pre_norms: bool,
    /// Whether the q/k norms span the whole projection (OLMo 2) rather than one head.
    pub qk_norm_whole: bool,
    /// Llama 4's attention temperature (Mistral 3): "beta over N positions".
    pub attn_temperature: Option<String>,
    /// Issue 45: the mixture of experts, when the MLPs are one.
    pub experts: Option<ExpertsInfo>,
    /// Issue 43 (Gemma 4): the local layers' head size when it differs from `head_dim`, the
    /// layers that attend with an earlier layer's keys and values, the widest MLP when widths
    /// differ, and the per-layer token embeddings' width per layer.
    pub local_head_dim: Option<usize>,
    pub shared_kv_layers: usize,
    pub widest_intermediate: Option<usize>,
    pub per_layer_input: Option<usize>,
}

/// Issue 45: a mixture-of-experts model's experts.
#[derive(Debug, Serialize)]
pub struct ExpertsInfo {
    /// Experts per layer.
    pub experts: usize,
    /// Experts each token runs.
    pub experts_used: usize,
    /// Each expert's MLP width.
    pub expert_intermediate: usize,
    /// Parameters a token runs through: the chosen experts', the router, the rest.
    pub active_parameters: usize,
    /// How the expert tensors are stored: type to tensor count.
    pub storage: BTreeMap<String, usize>,
}

#[derive(Debug, Serialize)]
pub struct TokenizerInfo {
    /// GGUF `tokenizer.ggml.model` / `pre`, or "tokenizer.json".
    pub kind: String,
    pub vocabulary: usize,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
}

fn family(cfg: &Config) -> Family {
    Family {
        family: cfg.arch.clone(),
        layers: cfg.layers,
        hidden: cfg.hidden,
        intermediate: cfg.intermediate,
        heads: cfg.heads,
        kv_heads: cfg.kv_heads,
        head_dim: cfg.head_dim,
        vocab_size: cfg.vocab_size,
        parameters: cfg.parameter_count(),
        context_window: cfg.max_positions,
        position_limit: cfg.position_limit(),
        rope_theta: cfg.rope.theta,
        rotary_dim: cfg.rope.rotary_dim,
        rope_scaling: cfg.rope.scaling.clone(),
        local_rope_theta: cfg.rope_local.as_ref().map(|r| r.theta),
        sliding_window: cfg.sliding_window,
        local_layers: cfg.local_layers.iter().filter(|l| **l).count(),
        qkv_bias: cfg.qkv_bias,
        qk_norm: cfg.qk_norm,
        post_norms: cfg.post_norms,
        activation: cfg.activation,
        attn_softcap: cfg.attn_softcap,
        final_softcap: cfg.final_softcap,
        tied_embeddings: cfg.tied_embeddings,
        no_rope_layers: cfg.no_rope_layers.iter().filter(|l| **l).count(),
        pre_norms: cfg.pre_norms,
        qk_norm_whole: cfg.qk_norm_whole,
        attn_temperature: cfg
            .attn_temperature
            .as_ref()
            .map(|t| format!("{} over {} positions", t.beta, t.floor)),
        experts: cfg.moe.as_ref().map(|m| ExpertsInfo {
            experts: m.experts,
            experts_used: m.experts_used,
            expert_intermediate: m.expert_intermediate,
            active_parameters: cfg.active_parameter_count(),
            storage: BTreeMap::new(),
        }),
        local_head_dim: cfg.head_dim_local,
        shared_kv_layers: cfg.kv_source.iter().filter(|s| s.is_some()).count(),
        widest_intermediate: cfg.layer_intermediate.iter().copied().max(),
        per_layer_input: cfg.per_layer_input,
    }
}

/// Whether a tensor group holds experts (GGUF `ffn_gate_exps`, Hugging Face `mlp.experts.*`).
fn is_expert_group(group: &str) -> bool {
    group.contains("_exps") || group.contains("experts.")
}

/// The group of a tensor name: the layer number dropped (`blk.3.attn_q.weight` → `attn_q`,
/// `model.layers.3.mlp.up_proj.weight` → `mlp.up_proj`), an expert's number starred
/// (`model.layers.3.mlp.experts.7.up_proj.weight` → `mlp.experts.*.up_proj`).
fn group(name: &str) -> String {
    let name = name.strip_suffix(".weight").unwrap_or(name);
    let parts: Vec<&str> = name.split('.').collect();
    match parts.iter().position(|p| p.parse::<usize>().is_ok()) {
        Some(i) => parts[i + 1..]
            .iter()
            .map(|p| if p.parse::<usize>().is_ok() { "*" } else { p })
            .collect::<Vec<_>>()
            .join("."),
        None => name.to_string(),
    }
}

/// Whether `name` is the `suffix` (`_blocks` or `_scales`) half of an MXFP4 pair of `U8`
/// tensors in `w`.
fn mxfp4_part(w: &crate::model::format::hf::Weights, name: &str, suffix: &str) -> bool {
    use crate::model::block::transformer::TensorFile;
    let Some(stem) = name.strip_suffix(suffix) else {
        return false;
    };
    let u8 = |n: &str| matches!(w.stored(n), Ok(Some((_, ty, _))) if ty == "U8");
    u8(&format!("{stem}_blocks")) && u8(&format!("{stem}_scales"))
}

/// What `model inspect` says of `path`, a model of a built-in family or not.
pub fn inspect(path: &Path) -> Inspection {
    inspect_in(&FAMILIES, path)
}

/// [`inspect`] knowing the families of `families`.
pub fn inspect_in(families: &Families, path: &Path) -> Inspection {
    let mut out = Inspection {
        path: path.display().to_string(),
        format: if path.is_dir() { "hf" } else { "gguf" }.into(),
        architecture: String::new(),
        not_implemented: None,
        family: None,
        tensor_types: BTreeMap::new(),
        tokenizer: None,
        chat_template: false,
    };
    let mut types = |name: &str, ty: String| {
        *out.tensor_types
            .entry(group(name))
            .or_default()
            .entry(ty)
            .or_default() += 1;
    };
    if path.is_dir() {
        if let Ok(text) = std::fs::read_to_string(path.join("config.json")) {
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) {
                out.architecture = json["architectures"][0]
                    .as_str()
                    .or(json["model_type"].as_str())
                    .unwrap_or_default()
                    .to_string();
            }
        }
        if let Ok(w) = crate::model::format::hf::Weights::open(path) {
            use crate::model::block::transformer::TensorFile;
            for name in w.names() {
                let ty = match w.describe(&name) {
                    Ok(Some(d)) => d.ty,
                    Ok(None) => continue,
                    // Issue 45: transformers' MXFP4 (gpt-oss's experts), a tensor as `U8`
                    // blocks and scales: counted once, as MXFP4.
                    Err(_) if mxfp4_part(&w, &name, "_scales") => continue,
                    Err(_) if mxfp4_part(&w, &name, "_blocks") => "MXFP4".into(),
                    Err(_) => "unsupported".into(),
                };
                types(&name, ty);
            }
        }
        out.chat_template = std::fs::read_to_string(path.join("tokenizer_config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| j["chat_template"].is_string());
    } else if let Ok(g) = Gguf::open(path) {
        out.architecture = g.architecture().unwrap_or_default().to_string();
        for name in g.tensor_names() {
            if let Some(info) = g.tensor_info(name) {
                let ty = crate::model::format::quant::type_name(info.type_id);
                types(name, ty.split(" (").next().unwrap_or_default().to_string());
            }
        }
        out.chat_template = g.get("tokenizer.chat_template").is_some();
    }
    match scorer::check_in(families, path) {
        Ok((cfg, tokenizer)) => {
            out.family = Some(family(&cfg));
            out.tokenizer = Some(TokenizerInfo {
                kind: tokenizer.kind().to_string(),
                vocabulary: tokenizer.vocab_size(),
                bos: tokenizer.bos_id(),
                eos: tokenizer.eos_id(),
            });
        }
        Err(e) => {
            // The config alone, when it reads, still describes the model.
            let cfg = if path.is_dir() {
                scorer::hf_config(families, path).ok()
            } else {
                Gguf::open(path)
                    .ok()
                    .and_then(|g| scorer::gguf_config(families, &g).ok())
            };
            out.family = cfg.as_ref().map(|(cfg, _)| family(cfg));
            out.not_implemented = Some(e.to_string());
        }
    }
    if let Some(info) = out.family.as_mut().and_then(|f| f.experts.as_mut()) {
        for (group, types) in &out.tensor_types {
            if is_expert_group(group) {
                for (ty, n) in types {
                    *info.storage.entry(ty.clone()).or_default() += n;
                }
            }
        }
    }
    out
}
