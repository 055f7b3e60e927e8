//! One architecture-neutral description of a decoder-only transformer. The per-architecture files
//! (llama, qwen2, qwen3, phi3, gemma2, gemma3) fill it in from config.json or GGUF metadata; the
//! shared block in `transformer` reads nothing else.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::gguf::Gguf;
use super::ModelError;

/// Which pairs of a head's dimensions RoPE rotates together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RopeLayout {
    /// Dimensions (2i, 2i+1): ggml's "normal" mode, used by llama from either format (GGUF files
    /// hold the q/k rows permuted to match; Hugging Face ones are permuted on loading, see
    /// `llama`).
    Interleaved,
    /// Dimensions (i, i + d/2) ("rotate halves"): the other architectures' Hugging Face
    /// checkpoints and ggml's NEOX mode.
    Neox,
}

/// Phi-3's "longrope" scaling: per-frequency divisors and a constant magnitude factor.
#[derive(Clone, Debug, PartialEq)]
pub struct LongRope {
    /// Divisors for sequences up to `original_max_positions` (the only case we run, see
    /// `Rope::max_positions`).
    pub short_factor: Vec<f32>,
    /// Divisors for longer sequences: validated but not used, since switching factors mid-stream
    /// would invalidate a cached prefix.
    pub long_factor: Vec<f32>,
    pub original_max_positions: usize,
    /// Multiplies cos and sin.
    pub attention_factor: f32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rope {
    pub theta: f32,
    pub layout: RopeLayout,
    /// Leading dimensions of each head that are rotated (even; the rest pass through).
    pub rotary_dim: usize,
    pub longrope: Option<LongRope>,
    /// Per-frequency divisors of any other scaling: Llama 3's (`rope_freqs.weight` in GGUF,
    /// computed from `rope_scaling` on Hugging Face, see `llama::llama3_factors`) or linear
    /// scaling's one factor repeated. `None`: every divisor is 1.
    pub freq_factors: Option<Vec<f32>>,
    /// What `freq_factors` came from, for `model inspect` ("llama3", "linear 8").
    pub scaling: Option<String>,
}

impl Rope {
    /// Inverse frequencies, one per rotated pair.
    pub fn inv_freq(&self) -> Vec<f32> {
        let half = self.rotary_dim / 2;
        (0..half)
            .map(|i| {
                // Computed in f64 and rounded once, as the reference does.
                let base = (self.theta as f64).powf(2.0 * i as f64 / self.rotary_dim as f64);
                let ext = match (&self.longrope, &self.freq_factors) {
                    (Some(l), _) => l.short_factor[i] as f64,
                    (None, Some(f)) => f[i] as f64,
                    (None, None) => 1.0,
                };
                (1.0 / (ext * base)) as f32
            })
            .collect()
    }

    /// Magnitude factor applied to cos and sin (1 except under longrope).
    pub fn scale(&self) -> f32 {
        self.longrope.as_ref().map_or(1.0, |l| l.attention_factor)
    }
}

/// The MLP's gate activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    /// SwiGLU: `silu(gate) · up` (Llama, Qwen, Phi-3).
    Silu,
    /// GeGLU with GELU's tanh approximation (Gemma).
    GeluTanh,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The architecture name as the file spells it, for messages.
    pub arch: String,
    pub vocab_size: usize,
    pub hidden: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub norm_eps: f32,
    pub rope: Rope,
    /// Positions the model was built for; longer sequences are refused, not silently degraded.
    pub max_positions: usize,
    pub qkv_bias: bool,
    /// Per-head RMSNorm of q and k before RoPE (Qwen3).
    pub qk_norm: bool,
    /// The LM head reuses the token embedding matrix.
    pub tied_embeddings: bool,
    pub activation: Activation,
    /// Multiplies the token embeddings as they are looked up (Gemma: √hidden).
    pub embed_scale: Option<f32>,
    /// An RMSNorm on the attention output and on the MLP output before each residual add
    /// (Gemma 2 and 3).
    pub post_norms: bool,
    /// Multiplies q·k before the softmax (usually 1/√head_dim).
    pub attn_scale: f32,
    /// Attention scores become `cap · tanh(s / cap)` (Gemma 2).
    pub attn_softcap: Option<f32>,
    /// Logits become `cap · tanh(l / cap)` (Gemma 2).
    pub final_softcap: Option<f32>,
    /// Local (sliding-window) layers see only the last `sliding_window` positions, themselves
    /// included. `local_layers[l]` says which layers are local (empty: none).
    pub sliding_window: Option<usize>,
    pub local_layers: Vec<bool>,
    /// The RoPE of local layers when it differs from `rope` (Gemma 3's own base).
    pub rope_local: Option<Rope>,
}

impl Config {
    /// Checks the relations the transformer relies on, so a bad file fails here by name.
    pub fn validate(&self, path: &Path) -> Result<(), ModelError> {
        let bad = |what: String| Err(invalid(path, what));
        let dims = [
            ("vocab_size", self.vocab_size),
            ("hidden size", self.hidden),
            ("intermediate size", self.intermediate),
            ("layer count", self.layers),
            ("head count", self.heads),
            ("kv head count", self.kv_heads),
            ("head dim", self.head_dim),
            ("max positions", self.max_positions),
        ];
        if let Some((name, _)) = dims.iter().find(|(_, v)| *v == 0) {
            return bad(format!("{name} is 0"));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return bad(format!(
                "{} heads is not a multiple of {} kv heads",
                self.heads, self.kv_heads
            ));
        }
        for r in std::iter::once(&self.rope).chain(&self.rope_local) {
            validate_rope(path, r, self.head_dim)?;
        }
        if !(self.attn_scale > 0.0 && self.attn_scale.is_finite()) {
            return bad(format!(
                "attention scale {} is not a positive number",
                self.attn_scale
            ));
        }
        for (name, cap) in [
            ("attention", self.attn_softcap),
            ("final logit", self.final_softcap),
        ] {
            if cap.is_some_and(|c| !(c > 0.0 && c.is_finite())) {
                return bad(format!("{name} soft-cap {cap:?} is not a positive number"));
            }
        }
        if self.sliding_window == Some(0) {
            return bad("sliding window is 0".into());
        }
        if !self.local_layers.is_empty() && self.local_layers.len() != self.layers {
            return bad(format!(
                "{} sliding-window flags for {} layers",
                self.local_layers.len(),
                self.layers
            ));
        }
        if !(self.norm_eps >= 0.0 && self.norm_eps.is_finite()) {
            return bad(format!(
                "norm eps {} is not a non-negative number",
                self.norm_eps
            ));
        }
        Ok(())
    }
    /// The f32 parameter count, for the memory target.
    pub fn parameter_count(&self) -> usize {
        let (d, hd) = (self.hidden, self.head_dim);
        let attn = d * self.heads * hd * 2 + d * self.kv_heads * hd * 2;
        let mlp = 3 * d * self.intermediate;
        let embed = self.vocab_size * d * if self.tied_embeddings { 1 } else { 2 };
        self.layers * (attn + mlp + 2 * d) + embed + d
    }

    /// The longest sequence this model may score: longrope models are capped at their original
    /// window, where the short factors apply to every position (see `LongRope::long_factor`).
    pub fn position_limit(&self) -> usize {
        match &self.rope.longrope {
            Some(l) => l.original_max_positions.min(self.max_positions),
            None => self.max_positions,
        }
    }
}

/// The rope's own relations: rotary dimensions, base, scaling factors.
fn validate_rope(path: &Path, r: &Rope, head_dim: usize) -> Result<(), ModelError> {
    let bad = |what: String| Err(invalid(path, what));
    if r.rotary_dim == 0 || !r.rotary_dim.is_multiple_of(2) || r.rotary_dim > head_dim {
        return bad(format!(
            "rotary dim {} must be even and in 1..={head_dim}",
            r.rotary_dim
        ));
    }
    if !(r.theta > 0.0 && r.theta.is_finite()) {
        return bad(format!("rope theta {} is not a positive number", r.theta));
    }
    let want = r.rotary_dim / 2;
    let mut lists: Vec<(&str, &Vec<f32>)> = Vec::new();
    if let Some(l) = &r.longrope {
        lists.push(("longrope short_factor", &l.short_factor));
        lists.push(("longrope long_factor", &l.long_factor));
    }
    if let Some(f) = &r.freq_factors {
        lists.push(("rope frequency factors", f));
    }
    for (name, f) in lists {
        if f.len() != want {
            return bad(format!("{name} has {} entries, expected {want}", f.len()));
        }
        if f.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
            return bad(format!("{name} has a non-positive entry"));
        }
    }
    Ok(())
}

pub fn invalid(path: &Path, what: impl Into<String>) -> ModelError {
    ModelError::Invalid {
        path: path.to_path_buf(),
        detail: what.into(),
    }
}

/// Typed access to a parsed config.json, with errors naming the file and key.
pub struct HfJson {
    pub path: PathBuf,
    pub value: Value,
}

impl HfJson {
    pub fn read(path: &Path) -> Result<HfJson, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let value = serde_json::from_str(&text)
            .map_err(|e| invalid(path, format!("not valid JSON: {e}")))?;
        Ok(HfJson {
            path: path.to_path_buf(),
            value,
        })
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.value.get(key).filter(|v| !v.is_null())
    }

    pub fn usize(&self, key: &str) -> Result<usize, ModelError> {
        self.opt_usize(key)?
            .ok_or_else(|| invalid(&self.path, format!("missing key {key:?}")))
    }

    pub fn opt_usize(&self, key: &str) -> Result<Option<usize>, ModelError> {
        self.get(key)
            .map(|v| {
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| invalid(&self.path, format!("{key:?} is not a count: {v}")))
            })
            .transpose()
    }

    pub fn opt_f32(&self, key: &str) -> Result<Option<f32>, ModelError> {
        self.get(key)
            .map(|v| {
                v.as_f64()
                    .map(|x| x as f32)
                    .ok_or_else(|| invalid(&self.path, format!("{key:?} is not a number: {v}")))
            })
            .transpose()
    }

    pub fn f32(&self, key: &str) -> Result<f32, ModelError> {
        self.opt_f32(key)?
            .ok_or_else(|| invalid(&self.path, format!("missing key {key:?}")))
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ModelError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(&self.path, format!("{key:?} is not a boolean: {v}"))),
        }
    }

    /// Refuses a rope_scaling this architecture's file does not implement, rather than run the
    /// model with the wrong positions; `linear` (one factor) is implemented for every
    /// architecture, as llama.cpp implements it for every one.
    pub fn no_rope_scaling(&self, arch: &str) -> Result<Option<(Vec<f32>, String)>, ModelError> {
        let Some(s) = self.get("rope_scaling") else {
            return Ok(None);
        };
        let kind = rope_scaling_type(s);
        match kind.as_deref() {
            Some("default") | Some("none") => Ok(None),
            Some("linear") => {
                let factor = s.get("factor").and_then(|f| f.as_f64()).ok_or_else(|| {
                    invalid(
                        &self.path,
                        format!("rope_scaling {s}: linear needs a factor"),
                    )
                })? as f32;
                Ok(Some((vec![factor], format!("linear {factor}"))))
            }
            _ => Err(invalid(
                &self.path,
                format!(
                    "rope_scaling type {} is not implemented for {arch} ({s})",
                    kind.unwrap_or_else(|| "(none given)".into())
                ),
            )),
        }
    }

    /// Refuses an MLP activation other than `want` (`hidden_act` / `hidden_activation`).
    pub fn expect_activation(&self, want: &[&str]) -> Result<(), ModelError> {
        for key in ["hidden_act", "hidden_activation"] {
            if let Some(v) = self.get(key) {
                let name = v.as_str().unwrap_or_default();
                if !want.contains(&name) {
                    return Err(invalid(
                        &self.path,
                        format!(
                            "{key} {v} is not implemented (expected {})",
                            want.join(" or ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The fields every supported Hugging Face architecture shares, with Llama's defaults; the
    /// architecture files adjust the rest.
    pub fn base_config(&self, arch: &str) -> Result<Config, ModelError> {
        let hidden = self.usize("hidden_size")?;
        let heads = self.usize("num_attention_heads")?;
        if heads == 0 || !hidden.is_multiple_of(heads) && self.get("head_dim").is_none() {
            return Err(invalid(
                &self.path,
                format!("hidden_size {hidden} is not a multiple of num_attention_heads {heads}"),
            ));
        }
        let head_dim = self.opt_usize("head_dim")?.unwrap_or(hidden / heads);
        Ok(Config {
            arch: arch.to_string(),
            vocab_size: self.usize("vocab_size")?,
            hidden,
            intermediate: self.usize("intermediate_size")?,
            layers: self.usize("num_hidden_layers")?,
            heads,
            kv_heads: self.opt_usize("num_key_value_heads")?.unwrap_or(heads),
            head_dim,
            norm_eps: self.f32("rms_norm_eps")?,
            rope: Rope {
                theta: self.opt_f32("rope_theta")?.unwrap_or(10_000.0),
                layout: RopeLayout::Neox,
                rotary_dim: head_dim,
                longrope: None,
                freq_factors: None,
                scaling: None,
            },
            max_positions: self.usize("max_position_embeddings")?,
            qkv_bias: self.bool_or("attention_bias", false)?,
            qk_norm: false,
            tied_embeddings: self.bool_or("tie_word_embeddings", false)?,
            activation: Activation::Silu,
            embed_scale: None,
            post_norms: false,
            attn_scale: 1.0 / (head_dim as f32).sqrt(),
            attn_softcap: None,
            final_softcap: None,
            sliding_window: None,
            local_layers: Vec::new(),
            rope_local: None,
        })
    }

    /// Refuses a sliding window this architecture does not apply (`use_sliding_window`
    /// true with a `sliding_window`), which would change results past the window.
    pub fn no_sliding_window(&self, arch: &str) -> Result<(), ModelError> {
        if self.bool_or("use_sliding_window", false)? {
            if let Some(w) = self.get("sliding_window") {
                return Err(invalid(
                    &self.path,
                    format!(
                        "use_sliding_window with sliding_window {w} is not implemented for {arch}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Linear rope scaling as `no_rope_scaling` returned it, set on `cfg`'s rope.
pub fn apply_linear(cfg: &mut Config, linear: Option<(Vec<f32>, String)>) {
    if let Some((f, name)) = linear {
        cfg.rope.freq_factors = Some(vec![f[0]; cfg.rope.rotary_dim / 2]);
        cfg.rope.scaling = Some(name);
    }
}

/// `rope_scaling`'s type, under either of its keys.
pub fn rope_scaling_type(s: &Value) -> Option<String> {
    s.get("rope_type")
        .or_else(|| s.get("type"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// The `{arch}.` metadata keys every family's reader below implements.
const GGUF_COMMON_KEYS: &[&str] = &[
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "attention.layer_norm_rms_epsilon",
    "rope.dimension_count",
    "rope.freq_base",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scale_linear",
    "rope.scaling.attn_factor",
    // Read by llama.cpp only for YaRN, which is refused by name.
    "rope.scaling.original_context_length",
    "rope.scaling.finetuned",
    "vocab_size",
];

/// Refuses any `{arch}.` metadata key outside `GGUF_COMMON_KEYS` and the family's `own` keys,
/// unless it holds the value that changes nothing (`harmless`): llama.cpp's loader may read it,
/// and running without it could be silently wrong.
pub fn refuse_unknown_keys(g: &Gguf, arch: &str, own: &[&str]) -> Result<(), ModelError> {
    let prefix = format!("{arch}.");
    for (k, v) in g.metadata() {
        let Some(rest) = k.strip_prefix(&prefix) else {
            continue;
        };
        if GGUF_COMMON_KEYS.contains(&rest) || own.contains(&rest) {
            continue;
        }
        let harmless = match rest {
            "attention.causal" => *v == super::gguf::Value::Bool(true),
            "expert_count" | "expert_used_count" | "pooling_type" => v.as_i128() == Some(0),
            _ => false,
        };
        if !harmless {
            return Err(invalid(
                g.path(),
                format!("metadata key {k} ({v:?}) is not implemented for {arch}"),
            ));
        }
    }
    Ok(())
}

/// The GGUF metadata every supported architecture shares, under its `{arch}.` prefix, with the
/// layout and flags left for the architecture files to set. Rope scaling: `none`, and `linear`
/// (llama.cpp's default type when a factor is given) are implemented here; the families take
/// `longrope` (phi3) themselves, and every other type is refused by name.
pub fn gguf_base_config(g: &Gguf, arch: &str) -> Result<Config, ModelError> {
    let key = |k: &str| format!("{arch}.{k}");
    let opt_u32 = |k: &str| g.get(&key(k)).map(|_| g.get_u32(&key(k))).transpose();
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    let hidden = g.get_u32(&key("embedding_length"))? as usize;
    let heads = g.get_u32(&key("attention.head_count"))? as usize;
    if heads == 0 {
        return Err(invalid(
            g.path(),
            format!("{} is 0", key("attention.head_count")),
        ));
    }
    let head_dim = opt_u32("attention.key_length")?.map_or(hidden / heads, |v| v as usize);
    if let Some(v) = opt_u32("attention.value_length")? {
        if v as usize != head_dim {
            return Err(invalid(
                g.path(),
                format!(
                    "{} {v} differs from the key length {head_dim}: not implemented",
                    key("attention.value_length")
                ),
            ));
        }
    }
    let kind = match g.get(&key("rope.scaling.type")) {
        Some(_) => g.get_str(&key("rope.scaling.type"))?.to_string(),
        None => "linear".to_string(),
    };
    let rotary_dim = opt_u32("rope.dimension_count")?.map_or(head_dim, |v| v as usize);
    let factor = match opt_f32("rope.scaling.factor")? {
        Some(f) => Some(f),
        None => opt_f32("rope.scale_linear")?,
    };
    let (freq_factors, scaling) = match kind.as_str() {
        "none" => (None, None),
        "linear" => match factor {
            Some(f) if f != 0.0 && f != 1.0 => {
                (Some(vec![f; rotary_dim / 2]), Some(format!("linear {f}")))
            }
            _ => (None, None),
        },
        "longrope" if arch == "phi3" => (None, None),
        other => {
            return Err(invalid(
                g.path(),
                format!(
                    "{} {other:?} is not implemented for {arch}",
                    key("rope.scaling.type")
                ),
            ))
        }
    };
    if arch != "phi3" {
        if let Some(f) = opt_f32("rope.scaling.attn_factor")? {
            if f != 1.0 {
                return Err(invalid(
                    g.path(),
                    format!(
                        "{} {f} is not implemented for {arch}",
                        key("rope.scaling.attn_factor")
                    ),
                ));
            }
        }
    }
    // llama.cpp sizes the vocabulary by the tokenizer's token list.
    let tokens = g.get_str_array("tokenizer.ggml.tokens")?.len();
    if let Some(v) = opt_u32("vocab_size")? {
        if v as usize != tokens {
            return Err(invalid(
                g.path(),
                format!(
                    "{} {v} differs from the {tokens} tokens of tokenizer.ggml.tokens",
                    key("vocab_size")
                ),
            ));
        }
    }
    Ok(Config {
        arch: arch.to_string(),
        vocab_size: tokens,
        hidden,
        intermediate: g.get_u32(&key("feed_forward_length"))? as usize,
        layers: g.get_u32(&key("block_count"))? as usize,
        heads,
        kv_heads: opt_u32("attention.head_count_kv")?.map_or(heads, |v| v as usize),
        head_dim,
        norm_eps: g.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
        rope: Rope {
            theta: opt_f32("rope.freq_base")?.unwrap_or(10_000.0),
            layout: RopeLayout::Neox,
            rotary_dim,
            longrope: None,
            freq_factors,
            scaling,
        },
        max_positions: g.get_u32(&key("context_length"))? as usize,
        qkv_bias: false,
        qk_norm: false,
        // llama.cpp's rule: no separate output matrix means the embedding is reused.
        tied_embeddings: g.tensor_info("output.weight").is_none(),
        activation: Activation::Silu,
        embed_scale: None,
        post_norms: false,
        attn_scale: 1.0 / (head_dim as f32).sqrt(),
        attn_softcap: None,
        final_softcap: None,
        sliding_window: None,
        local_layers: Vec::new(),
        rope_local: None,
    })
}
