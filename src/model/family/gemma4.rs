//! Gemma 4 dense text models (E2B, E4B; `Gemma4ForCausalLM`, `gemma4_text`; GGUF `gemma4`), as
//! llama.cpp 0.3.36's `src/models/gemma4.cpp` and transformers' `modeling_gemma4.py` build them:
//! Gemma 3's block (√d embedding scale, GeGLU, q/k norms, post norms, local and global layers
//! with their own ropes, a final logit soft-cap) with these differences:
//! - **no attention scale** (q·k is not divided by √d: the q/k norms set the scale), and v is
//!   RMS-normed per head too, without a weight;
//! - **two head sizes**: local layers' heads are `key_length_swa` wide (256), global layers'
//!   `key_length` (512);
//! - the global layers' rope is **proportional**: it spans the whole 512-wide head at base 10⁶,
//!   but only the first `partial_rotary_factor` (¼) of its frequencies turn. GGUF says so with
//!   `rope_freqs.weight` (1 for a turning pair, 10³⁰ for a still one); config.json with
//!   `rope_parameters.full_attention`. Local layers rotate whole heads at `rope.freq_base_swa`;
//! - **shared keys and values**: the last `shared_kv_layers` layers project q only and attend
//!   with the keys and values of the last earlier layer of their kind (llama.cpp: layer
//!   `n − 2` for a local one, `n − 1` for a global one, `n` the first shared layer; a file where
//!   the two rules differ is refused). Their MLPs may be twice as wide (`use_double_wide_mlp`,
//!   GGUF: `feed_forward_length` per layer);
//! - **per-layer token embeddings**: each token also looks up `layers · p` values
//!   (`per_layer_token_embd`, times √p), added to the normed projection of its embedding
//!   (`per_layer_model_proj`, times 1/√d, `per_layer_proj_norm`), the sum times 1/√2; each layer
//!   then adds `norm(proj(gelu(gate · x) ⊙ its slice))` to its residual after the MLP;
//! - each layer's output times a learnt scalar (`layer_output_scale`, transformers'
//!   `layer_scalar`);
//! - norms are stored as they apply (not as offsets from 1, unlike Gemma 2 and 3's checkpoints).
//!
//! Refused by name: the mixture-of-experts layers of the 26B-A4B (`expert_count`,
//! `ffn_gate_inp`), keys equal to values (`attention_k_eq_v`, the 31B's global layers: no
//! `attn_v`), q/k/v fused (`attn_qkv`), kv head counts or head counts that differ between
//! layers, bidirectional attention, and the multimodal checkpoints
//! (`Gemma4ForConditionalGeneration`: convert them to GGUF, whose `gemma4` text file this reads).
//! A shared layer's own k and v weights, which llama.cpp and transformers load and never use,
//! are read past (`shared_kv_unread`).

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::model::block::config::{Activation, Config, Rope};
use crate::model::block::transformer::{Naming, Part, TensorFile};
use crate::model::family::gemma2::{self, hf_local_layers};
use crate::model::family::read::{gguf_base_config, refuse_unknown_keys, HfJson, Unread};
use crate::model::family::{llama, Family};
use crate::model::format::gguf::{Gguf, Value as Meta};
use crate::model::{invalid, ModelError};

/// The `gemma4.` keys read here beside the common ones.
const OWN_KEYS: &[&str] = &[
    "attention.sliding_window",
    "attention.sliding_window_pattern",
    "attention.key_length_swa",
    "attention.value_length_swa",
    "attention.shared_kv_layers",
    "embedding_length_per_layer_input",
    "final_logit_softcapping",
    "rope.dimension_count_swa",
    "rope.freq_base_swa",
];

/// llama.cpp's base of local layers when the file gives none.
const LOCAL_BASE: f32 = 10_000.0;

/// What a still pair's divisor is in `rope_freqs.weight` (convert_hf_to_gguf's value): its
/// angle stays 0 to f32 precision at every position.
const STILL: f32 = 1e30;

fn refuse_moe(path: &Path, experts: bool) -> Result<(), ModelError> {
    match experts {
        true => Err(invalid(
            path,
            "Gemma 4's mixture-of-experts layers (26B-A4B: a router and experts beside each MLP) \
             are not implemented for gemma4",
        )),
        false => Ok(()),
    }
}

/// The flags Gemma 4 shares between its readers, on a base config.
fn gemma4_block(cfg: &mut Config) {
    cfg.activation = Activation::GeluTanh;
    cfg.embed_scale = Some((cfg.hidden as f32).sqrt());
    cfg.post_norms = true;
    cfg.qk_norm = true;
    cfg.v_norm = true;
    // llama.cpp's and transformers' `scaling = 1.0`.
    cfg.attn_scale = 1.0;
}

/// The proportional rope's divisors over a head of `rotary_dim`: 1 for the first `turning`
/// pairs, [`STILL`] for the rest.
pub fn proportional(rotary_dim: usize, turning: usize) -> Vec<f32> {
    (0..rotary_dim / 2)
        .map(|i| if i < turning { 1.0 } else { STILL })
        .collect()
}

/// How many pairs of a proportional rope's divisors turn; `None` for other divisors.
fn turning(factors: &[f32]) -> Option<usize> {
    let n = factors.iter().take_while(|f| **f == 1.0).count();
    factors[n..].iter().all(|f| *f == STILL).then_some(n)
}

/// Shared keys and values: layer `l ≥ n` (the first `layers − shared` have their own) attends
/// with llama.cpp's layer `n − 2` when local, `n − 1` when global; transformers takes the last
/// layer of its kind before `n`. Both must agree.
fn kv_sources(
    path: &Path,
    local: &[bool],
    layers: usize,
    shared: usize,
) -> Result<Vec<Option<usize>>, ModelError> {
    if shared == 0 {
        return Ok(Vec::new());
    }
    let n = layers.checked_sub(shared).filter(|n| *n >= 2).ok_or_else(|| {
        invalid(
            path,
            format!("{shared} shared-KV layers of {layers}: llama.cpp needs 2 layers with their own"),
        )
    })?;
    let is_local = |l: usize| local.get(l).copied().unwrap_or(false);
    (0..layers)
        .map(|l| {
            if l < n {
                return Ok(None);
            }
            let cpp = n - if is_local(l) { 2 } else { 1 };
            let hf = (0..n).rev().find(|&s| is_local(s) == is_local(l));
            match hf == Some(cpp) {
                true => Ok(Some(cpp)),
                false => Err(invalid(
                    path,
                    format!(
                        "shared-KV layer {l}: llama.cpp attends with layer {cpp}'s keys and \
                         values, transformers with layer {hf:?}'s; not implemented"
                    ),
                )),
            }
        })
        .collect()
}

fn config_from_gguf(g: &Gguf) -> Result<Config, ModelError> {
    let experts = g.get("gemma4.expert_count").and_then(|v| v.as_i128()) > Some(0)
        || g.tensor_names().any(|n| n.contains(".ffn_gate_inp."));
    refuse_moe(g.path(), experts)?;
    refuse_unknown_keys(g, "gemma4", OWN_KEYS)?;
    if let Some(name) = g.tensor_names().find(|n| n.contains(".attn_qkv.")) {
        return Err(invalid(
            g.path(),
            format!("tensor {name} (q, k and v fused) is not implemented for gemma4"),
        ));
    }
    let mut cfg = gguf_base_config(g, "gemma4")?;
    gemma4_block(&mut cfg);
    let key = |k: &str| format!("gemma4.{k}");
    let opt_u32 = |k: &str| g.get(&key(k)).map(|_| g.get_u32(&key(k))).transpose();
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    // llama.cpp's gemma4 keeps its default of 30 when the key is missing (gemma3 sets 0); 0
    // means none.
    cfg.final_softcap =
        Some(opt_f32("final_logit_softcapping")?.unwrap_or(30.0)).filter(|c| *c != 0.0);
    cfg.sliding_window = Some(g.get_u32(&key("attention.sliding_window"))? as usize);
    // llama.cpp reads the pattern with `get_arr`: a list of flags, one per layer.
    cfg.local_layers = match g.get(&key("attention.sliding_window_pattern")) {
        Some(Meta::Array(_)) => gemma2::gguf_local_layers(g, "gemma4", cfg.layers, 0)?,
        _ => {
            return Err(invalid(
                g.path(),
                "gemma4.attention.sliding_window_pattern is not a list of flags per layer, as \
                 llama.cpp requires",
            ))
        }
    };
    let local_hd = opt_u32("attention.key_length_swa")?.map_or(cfg.head_dim, |v| v as usize);
    if let Some(v) = opt_u32("attention.value_length_swa")? {
        if v as usize != local_hd {
            return Err(invalid(
                g.path(),
                format!(
                    "gemma4.attention.value_length_swa {v} differs from the key length {local_hd}"
                ),
            ));
        }
    }
    if local_hd != cfg.head_dim {
        cfg.head_dim_local = Some(local_hd);
    }
    if let Some(factors) = llama::rope_freqs(g, &cfg)? {
        if cfg.rope.freq_factors.is_some() {
            return Err(invalid(
                g.path(),
                "rope_freqs.weight together with linear rope scaling is not implemented",
            ));
        }
        cfg.rope.scaling = Some(match turning(&factors) {
            Some(n) => format!("proportional, {n} of {} pairs turning", factors.len()),
            None => "rope_freqs.weight".into(),
        });
        cfg.rope.freq_factors = Some(factors);
    }
    cfg.rope_local = Some(Rope {
        theta: opt_f32("rope.freq_base_swa")?.unwrap_or(LOCAL_BASE),
        rotary_dim: opt_u32("rope.dimension_count_swa")?
            .map_or(cfg.rope.rotary_dim, |v| v as usize),
        freq_factors: None,
        scaling: None,
        ..cfg.rope.clone()
    });
    let shared = opt_u32("attention.shared_kv_layers")?.unwrap_or(0) as usize;
    cfg.kv_source = kv_sources(g.path(), &cfg.local_layers, cfg.layers, shared)?;
    // Required by llama.cpp; 0 means none.
    let p = g.get_u32(&key("embedding_length_per_layer_input"))? as usize;
    cfg.per_layer_input = (p > 0).then_some(p);
    cfg.layer_scale = g.tensor_info("blk.0.layer_output_scale.weight").is_some();
    if let Some(l) = (0..cfg.layers).find(|&l| {
        cfg.kv_source_at(l).is_none() && g.tensor_info(&format!("blk.{l}.attn_v.weight")).is_none()
    }) {
        return Err(invalid(
            g.path(),
            format!(
                "layer {l} has no attn_v.weight: keys used as values (attention_k_eq_v) are not \
                 implemented for gemma4"
            ),
        ));
    }
    Ok(cfg)
}

fn config_from_hf(json: &HfJson) -> Result<Config, ModelError> {
    refuse_moe(&json.path, json.bool_or("enable_moe_block", false)?)?;
    for (k, v) in [("attention_k_eq_v", true), ("attention_bias", true)] {
        if json.bool_or(k, false)? == v {
            return Err(invalid(
                &json.path,
                format!("{k} {v} is not implemented for gemma4"),
            ));
        }
    }
    if let Some(b) = json.get("use_bidirectional_attention") {
        return Err(invalid(
            &json.path,
            format!("use_bidirectional_attention {b} is not implemented for gemma4 (causal only)"),
        ));
    }
    json.expect_activation(&["gelu_pytorch_tanh"])?;
    let mut cfg = json.base_config("gemma4")?;
    gemma4_block(&mut cfg);
    cfg.tied_embeddings = json.bool_or("tie_word_embeddings", true)?;
    cfg.final_softcap = json.opt_f32("final_logit_softcapping")?;
    cfg.sliding_window = Some(json.usize("sliding_window")?);
    cfg.local_layers = hf_local_layers(json, cfg.layers, 6)?;
    // transformers forces the last layer global.
    if cfg.local_layers.last() == Some(&true) {
        return Err(invalid(
            &json.path,
            "the last layer is sliding_attention: transformers makes it full_attention, llama.cpp \
             does not; not implemented",
        ));
    }
    let local_hd = cfg.head_dim;
    cfg.head_dim = global_head_dim(json, &cfg)?;
    if local_hd != cfg.head_dim {
        cfg.head_dim_local = Some(local_hd);
    }
    let (global, local) = hf_ropes(json, &cfg, local_hd)?;
    cfg.rope = global;
    cfg.rope_local = Some(local);
    let shared = json.opt_usize("num_kv_shared_layers")?.unwrap_or(0);
    cfg.kv_source = kv_sources(&json.path, &cfg.local_layers, cfg.layers, shared)?;
    if json.bool_or("use_double_wide_mlp", false)? && shared > 0 {
        cfg.layer_intermediate = (0..cfg.layers)
            .map(|l| match cfg.kv_source_at(l) {
                Some(_) => 2 * cfg.intermediate,
                None => cfg.intermediate,
            })
            .collect();
    }
    let p = json.opt_usize("hidden_size_per_layer_input")?.unwrap_or(0);
    cfg.per_layer_input = (p > 0).then_some(p);
    if let Some(v) = json.opt_usize("vocab_size_per_layer_input")? {
        if p > 0 && v != cfg.vocab_size {
            return Err(invalid(
                &json.path,
                format!(
                    "vocab_size_per_layer_input {v} differs from vocab_size {}: not implemented",
                    cfg.vocab_size
                ),
            ));
        }
    }
    // transformers' decoder layer always has its `layer_scalar` (a buffer, 1 unless trained).
    cfg.layer_scale = true;
    Ok(cfg)
}

/// The global layers' head size: `per_layer_config` (what transformers writes) or
/// `global_head_dim` (Google's configs; transformers' default 512). `per_layer_config` may set
/// only the global layers' head size, to one value, and their kv heads to `num_key_value_heads`.
fn global_head_dim(json: &HfJson, cfg: &Config) -> Result<usize, ModelError> {
    let Some(per) = json.get("per_layer_config") else {
        return Ok(json.opt_usize("global_head_dim")?.unwrap_or(512));
    };
    let bad = |what: String| invalid(&json.path, format!("per_layer_config: {what}"));
    let map = per
        .as_object()
        .ok_or_else(|| bad(format!("not a map: {per}")))?;
    let mut head_dim = None;
    for (layer, entry) in map {
        let l: usize = layer.parse().map_err(|_| bad(format!("layer {layer:?}")))?;
        if cfg.local_layers.get(l) != Some(&false) {
            return Err(bad(format!("layer {l} is not a full_attention layer")));
        }
        let fields = entry
            .as_object()
            .ok_or_else(|| bad(format!("layer {l}: {entry}")))?;
        for (k, v) in fields {
            match (k.as_str(), v.as_u64()) {
                ("head_dim", Some(hd)) if head_dim.is_none_or(|h| h == hd) => head_dim = Some(hd),
                ("num_key_value_heads", Some(n)) if n as usize == cfg.kv_heads => {}
                _ => return Err(bad(format!("layer {l}: {k} {v} is not implemented"))),
            }
        }
    }
    Ok(head_dim.map_or(cfg.head_dim, |h| h as usize))
}

/// The global and local ropes of `rope_parameters` (transformers' defaults when absent): the
/// local one `default` over whole heads, the global one `default` or `proportional`.
fn hf_ropes(json: &HfJson, cfg: &Config, local_hd: usize) -> Result<(Rope, Rope), ModelError> {
    let defaults = json!({
        "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
            "rope_theta": 1_000_000.0},
    });
    let params = json.get("rope_parameters").unwrap_or(&defaults);
    if json.get("rope_theta").is_some() || json.get("rope_scaling").is_some() {
        return Err(invalid(
            &json.path,
            "rope_theta or rope_scaling beside Gemma 4's rope_parameters: not implemented",
        ));
    }
    let rope = |kind: &str, hd: usize| -> Result<Rope, ModelError> {
        let p = &params[kind];
        let bad = |what: &str| invalid(&json.path, format!("rope_parameters.{kind}: {what} ({p})"));
        let theta = p["rope_theta"]
            .as_f64()
            .ok_or_else(|| bad("no numeric rope_theta"))? as f32;
        let mut r = Rope {
            theta,
            rotary_dim: hd,
            ..cfg.rope.clone()
        };
        r.freq_factors = None;
        r.scaling = None;
        let factor = p.get("factor").and_then(Value::as_f64).unwrap_or(1.0);
        let partial = p
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        match (p["rope_type"].as_str(), kind) {
            (Some("default"), _) if partial == 1.0 => {}
            (Some("proportional"), "full_attention") if factor == 1.0 => {
                // transformers' `int(partial · head_dim // 2)` turning pairs.
                let turning = (partial * hd as f64 / 2.0).floor() as usize;
                if turning == 0 || turning > hd / 2 {
                    return Err(bad("partial_rotary_factor out of range"));
                }
                r.freq_factors = Some(proportional(hd, turning));
                r.scaling = Some(format!(
                    "proportional, {turning} of {} pairs turning",
                    hd / 2
                ));
            }
            _ => return Err(bad("this rope is not implemented for gemma4")),
        }
        Ok(r)
    };
    Ok((
        rope("full_attention", cfg.head_dim)?,
        rope("sliding_attention", local_hd)?,
    ))
}

/// The names of the k and v weights of shared-KV layers, which llama.cpp and transformers load
/// and never use: read past ([`Unread`]), not refused as unread.
fn shared_kv_unread<'a>(
    file: &'a dyn TensorFile,
    cfg: &Config,
    naming: Naming,
) -> Box<dyn TensorFile + 'a> {
    let unused: Vec<String> = (0..cfg.layers)
        .filter(|&l| cfg.kv_source_at(l).is_some())
        .flat_map(|l| [Part::K(l), Part::V(l), Part::KNorm(l)])
        .map(naming)
        .collect();
    Box::new(Unread {
        inner: file,
        unread: Box::new(move |n| unused.iter().any(|u| u == n)),
    })
}

/// A Gemma 4 dense model's family file at the given widths, cut to 4 layers: a local and a
/// global layer with keys and values of their own, then one of each attending with theirs
/// (llama.cpp's layers n − 2 and n − 1; E2B's last 20 layers and E4B's last 18 do so), their
/// MLPs twice as wide when `double_wide`. What E2B and E4B share: 8 heads of 256 on local layers
/// (rope base 10⁴) and of 512 on global ones (base 10⁶, a quarter of the pairs turning),
/// per-layer inputs of 256, final soft-cap 30, and a window of 512, cut to 16 so that the
/// contexts cross it.
fn window16(hidden: usize, intermediate: usize, kv: usize, double_wide: bool) -> Config {
    let mut c = crate::model::dev::family_files::base("gemma4", hidden, intermediate, 8, kv, 512);
    c.layers = 4;
    gemma4_block(&mut c);
    c.final_softcap = Some(30.0);
    c.max_positions = 131_072;
    c.rope.theta = 1_000_000.0;
    c.rope.freq_factors = Some(proportional(512, 64));
    c.rope.scaling = Some("proportional, 64 of 256 pairs turning".into());
    c.head_dim_local = Some(256);
    c.rope_local = Some(Rope {
        theta: LOCAL_BASE,
        rotary_dim: 256,
        freq_factors: None,
        scaling: None,
        ..c.rope.clone()
    });
    c.sliding_window = Some(16);
    c.local_layers = vec![true, false, true, false];
    c.kv_source = vec![None, None, Some(0), Some(1)];
    if double_wide {
        let wide = 2 * intermediate;
        c.layer_intermediate = vec![intermediate, intermediate, wide, wide];
    }
    c.per_layer_input = Some(256);
    c.layer_scale = true;
    c
}

pub struct Gemma4;

impl Family for Gemma4 {
    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        use crate::model::dev::family_files::FamilyFile;
        vec![
            // Issue 43. Gemma 4 E2B (35 layers, config.json's text_config): one KV head, MLPs of
            // 6144, twice as wide on its last 20 layers, which share (`use_double_wide_mlp`).
            FamilyFile {
                name: "gemma4-e2b-window16",
                real: "gemma-4-E2B",
                config: || window16(1536, 6144, 1, true),
            },
            // Gemma 4 E4B (42 layers, its last 18 sharing): two KV heads, MLPs of 10 240 on
            // every layer (`use_double_wide_mlp` false).
            FamilyFile {
                name: "gemma4-e4b-window16",
                real: "gemma-4-E4B",
                config: || window16(2560, 10_240, 2, false),
            },
        ]
    }

    fn gguf_arch(&self) -> &'static str {
        "gemma4"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["Gemma4ForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["gemma4_text"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        config_from_gguf(g)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        config_from_hf(json)
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[gemma2::gguf_name]
    }

    fn hf_naming(&self) -> Naming {
        gemma2::hf_name
    }

    fn gguf_extra_tensors(&self) -> &'static [&'static str] {
        llama::GGUF_EXTRA_TENSORS
    }

    fn gguf_view<'a>(&self, file: &'a dyn TensorFile, cfg: &Config) -> Box<dyn TensorFile + 'a> {
        shared_kv_unread(file, cfg, gemma2::gguf_name)
    }

    fn hf_view<'a>(&self, file: &'a dyn TensorFile, cfg: &Config) -> Box<dyn TensorFile + 'a> {
        shared_kv_unread(file, cfg, gemma2::hf_name)
    }

    fn hf_config(&self, cfg: &Config, json: &mut Map<String, Value>) {
        json.remove("rope_theta");
        json.remove("rope_scaling");
        json.insert("hidden_activation".into(), json!("gelu_pytorch_tanh"));
        json.insert(
            "head_dim".into(),
            json!(cfg.head_dim_local.unwrap_or(cfg.head_dim)),
        );
        json.insert("global_head_dim".into(), json!(cfg.head_dim));
        json.insert(
            "final_logit_softcapping".into(),
            json!(cfg.final_softcap.map(f64::from)),
        );
        if let Some(w) = cfg.sliding_window {
            json.insert("sliding_window".into(), json!(w));
        }
        json.insert("layer_types".into(), gemma2::hf_layer_types(cfg));
        let rope_json = |r: &Rope| {
            let turning = r.freq_factors.as_deref().and_then(turning);
            match turning {
                Some(n) => json!({"rope_type": "proportional", "rope_theta": f64::from(r.theta),
                    "partial_rotary_factor": 2.0 * n as f64 / r.rotary_dim as f64}),
                None => json!({"rope_type": "default", "rope_theta": f64::from(r.theta)}),
            }
        };
        let local = cfg.rope_local.as_ref().unwrap_or(&cfg.rope);
        json.insert(
            "rope_parameters".into(),
            json!({"full_attention": rope_json(&cfg.rope),
                "sliding_attention": rope_json(local)}),
        );
        let shared = cfg.kv_source.iter().filter(|s| s.is_some()).count();
        json.insert("num_kv_shared_layers".into(), json!(shared));
        json.insert(
            "use_double_wide_mlp".into(),
            json!(!cfg.layer_intermediate.is_empty()),
        );
        json.insert(
            "hidden_size_per_layer_input".into(),
            json!(cfg.per_layer_input.unwrap_or(0)),
        );
        json.insert("vocab_size_per_layer_input".into(), json!(cfg.vocab_size));
        json.insert("attention_k_eq_v".into(), json!(false));
        json.insert("enable_moe_block".into(), json!(false));
    }

    fn gguf_metadata(&self, cfg: &Config) -> Vec<(String, Meta)> {
        let key = |k: &str| format!("gemma4.{k}");
        let local = cfg.rope_local.as_ref().unwrap_or(&cfg.rope);
        let local_hd = cfg.head_dim_local.unwrap_or(cfg.head_dim) as u32;
        // No soft-cap is a 0: llama.cpp reads a missing key as 30.
        let softcap = match cfg.final_softcap {
            None => vec![(key("final_logit_softcapping"), Meta::F32(0.0))],
            Some(_) => Vec::new(),
        };
        softcap
            .into_iter()
            .chain([
                (key("attention.key_length_swa"), Meta::U32(local_hd)),
                (key("attention.value_length_swa"), Meta::U32(local_hd)),
                (
                    key("rope.dimension_count_swa"),
                    Meta::U32(local.rotary_dim as u32),
                ),
                (
                    key("attention.shared_kv_layers"),
                    Meta::U32(cfg.kv_source.iter().filter(|s| s.is_some()).count() as u32),
                ),
                (
                    key("embedding_length_per_layer_input"),
                    Meta::U32(cfg.per_layer_input.unwrap_or(0) as u32),
                ),
            ])
            .collect()
    }
}
