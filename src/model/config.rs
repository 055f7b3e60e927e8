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
    /// YaRN (Mistral 3): each frequency blended between itself and itself divided by the
    /// factor, and cos and sin scaled by a magnitude.
    pub yarn: Option<Yarn>,
}

/// YaRN rope scaling as llama.cpp's ggml rope and transformers' `_compute_yarn_parameters`
/// compute it: the pairs rotating faster than `beta_fast` turns over the original window keep
/// their frequency, those slower than `beta_slow` turns are divided by `factor`, and a linear
/// ramp blends the ones between.
#[derive(Clone, Debug, PartialEq)]
pub struct Yarn {
    pub factor: f32,
    pub original_max_positions: usize,
    pub beta_fast: f32,
    pub beta_slow: f32,
    /// The magnitude of cos and sin is `mscale(factor, mscale) / mscale(factor, mscale_all_dim)`
    /// (`yarn_mscale`), as transformers computes its `attention_factor` and llama.cpp its
    /// `yarn_attn_factor` from `rope.scaling.yarn_log_multiplier` (with `mscale` 1). An
    /// `mscale_all_dim` of 0 gives transformers' default, `mscale(factor, 1)`.
    pub mscale: f32,
    pub mscale_all_dim: f32,
}

impl Yarn {
    /// What cos and sin are multiplied by.
    pub fn magnitude(&self) -> f32 {
        yarn_mscale(self.factor, self.mscale) / yarn_mscale(self.factor, self.mscale_all_dim)
    }

    /// The divisor of rotated pair `i` of `rotary_dim` at base `theta`: 1 where the ramp keeps
    /// the frequency, `factor` where it interpolates fully.
    fn divisor(&self, i: usize, rotary_dim: usize, theta: f32) -> f64 {
        // ggml_rope_yarn_corr_dim / find_correction_dim: the pair index that turns `rotations`
        // times over the original window.
        let dim = |rotations: f32| {
            rotary_dim as f64
                * (self.original_max_positions as f64
                    / (rotations as f64 * 2.0 * std::f64::consts::PI))
                    .ln()
                / (2.0 * (theta as f64).ln())
        };
        let low = dim(self.beta_fast).floor().max(0.0);
        let high = dim(self.beta_slow).ceil().min(rotary_dim as f64 - 1.0);
        let ramp = ((i as f64 - low) / (high - low).max(0.001)).clamp(0.0, 1.0);
        // `ramp` 0 keeps the frequency (extrapolation), 1 divides it by the factor.
        let kept = 1.0 - ramp;
        1.0 / (ramp / self.factor as f64 + kept)
    }
}

/// transformers' and llama.cpp's YaRN magnitude for a factor and an `mscale`:
/// `0.1 · mscale · ln(factor) + 1` (1 for factors up to 1).
pub fn yarn_mscale(factor: f32, mscale: f32) -> f32 {
    if factor <= 1.0 {
        1.0
    } else {
        0.1 * mscale * factor.ln() + 1.0
    }
}

/// Llama 4's attention temperature (Mistral 3's `llama_4_scaling_beta`): q at position `p` is
/// multiplied by `1 + beta · ln(1 + ⌊p / floor⌋)`, which is 1 within the first `floor` positions.
#[derive(Clone, Debug, PartialEq)]
pub struct AttnTemperature {
    pub beta: f32,
    pub floor: usize,
}

impl AttnTemperature {
    /// The factor at position `p`, in f64 and rounded once (llama.cpp computes it in double).
    pub fn at(&self, p: usize) -> f32 {
        (1.0 + self.beta as f64 * ((p / self.floor) as f64 + 1.0).ln()) as f32
    }
}

impl Rope {
    /// Inverse frequencies, one per rotated pair.
    pub fn inv_freq(&self) -> Vec<f32> {
        let half = self.rotary_dim / 2;
        (0..half)
            .map(|i| {
                // Computed in f64 and rounded once, as the reference does.
                let base = (self.theta as f64).powf(2.0 * i as f64 / self.rotary_dim as f64);
                let ext = match (&self.longrope, &self.freq_factors, &self.yarn) {
                    (Some(l), _, _) => l.short_factor[i] as f64,
                    (None, Some(f), _) => f[i] as f64,
                    (None, None, Some(y)) => y.divisor(i, self.rotary_dim, self.theta),
                    (None, None, None) => 1.0,
                };
                (1.0 / (ext * base)) as f32
            })
            .collect()
    }

    /// Magnitude factor applied to cos and sin (1 except under longrope and YaRN).
    pub fn scale(&self) -> f32 {
        match (&self.longrope, &self.yarn) {
            (Some(l), _) => l.attention_factor,
            (None, Some(y)) => y.magnitude(),
            (None, None) => 1.0,
        }
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
    // Issue 43 (SmolLM3, OLMo 2, Mistral 3):
    /// Layers that run without RoPE (SmolLM3: every fourth); empty: none.
    pub no_rope_layers: Vec<bool>,
    /// An RMSNorm on each block's input before attention and before the MLP. OLMo 2 has none:
    /// it norms the outputs only (`post_norms`).
    pub pre_norms: bool,
    /// With `qk_norm`, one RMSNorm over the whole q (and k) projection of a token, all heads
    /// together (OLMo 2), rather than one per head.
    pub qk_norm_whole: bool,
    /// Llama 4's attention temperature on q after RoPE (Mistral 3).
    pub attn_temperature: Option<AttnTemperature>,
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
        if !self.no_rope_layers.is_empty() && self.no_rope_layers.len() != self.layers {
            return bad(format!(
                "{} no-rope flags for {} layers",
                self.no_rope_layers.len(),
                self.layers
            ));
        }
        if let Some(t) = &self.attn_temperature {
            if t.floor == 0 || !(t.beta >= 0.0 && t.beta.is_finite()) {
                return bad(format!(
                    "attention temperature beta {} over {} positions: needs a non-negative beta \
                     and a positive length",
                    t.beta, t.floor
                ));
            }
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
    if let Some(y) = &r.yarn {
        let positive = |x: f32| x > 0.0 && x.is_finite();
        if !(positive(y.factor)
            && positive(y.beta_slow)
            && positive(y.magnitude())
            && y.beta_fast > y.beta_slow
            && y.beta_fast.is_finite()
            && y.original_max_positions > 0)
        {
            return bad(format!(
                "yarn factor {}, beta_fast {}, beta_slow {}, original context {}, magnitude {}: \
                 needs positive values and beta_fast > beta_slow",
                y.factor,
                y.beta_fast,
                y.beta_slow,
                y.original_max_positions,
                y.magnitude()
            ));
        }
        if r.longrope.is_some() || r.freq_factors.is_some() {
            return bad("yarn together with other rope scaling is not implemented".into());
        }
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
                yarn: None,
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
            no_rope_layers: Vec::new(),
            pre_norms: true,
            qk_norm_whole: false,
            attn_temperature: None,
        })
    }

    /// Issue 43: transformers 5 writes `rope_parameters` (`rope_type`, `rope_theta`, and the
    /// scaling's own fields) where older configs have `rope_theta` and `rope_scaling`. The base it
    /// gives, `None` when the file has none; any type but the default is refused for `arch`, as
    /// are both layouts at once.
    pub fn default_rope_parameters(&self, arch: &str) -> Result<Option<f32>, ModelError> {
        let Some(p) = self.get("rope_parameters") else {
            return Ok(None);
        };
        if self.get("rope_scaling").is_some() || self.get("rope_theta").is_some() {
            return Err(invalid(
                &self.path,
                "rope_parameters together with rope_theta or rope_scaling: which applies is \
                 ambiguous",
            ));
        }
        match rope_scaling_type(p).as_deref() {
            None | Some("default") => {}
            Some(other) => {
                return Err(invalid(
                    &self.path,
                    format!("rope_parameters type {other} is not implemented for {arch} ({p})"),
                ))
            }
        }
        let theta = p.get("rope_theta").and_then(Value::as_f64).ok_or_else(|| {
            invalid(
                &self.path,
                format!("rope_parameters {p} has no numeric rope_theta"),
            )
        })?;
        Ok(Some(theta as f32))
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
    // Read by llama.cpp only for YaRN, which only `mistral3` implements (the others refuse it by
    // name).
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

/// Issue 43: what llama.cpp's smollm3, olmo2 and mistral3 loaders take but this engine does
/// not: q, k and v fused in one `attn_qkv` tensor (read before the separate ones), and a rotary
/// dimension other than the head size (their graphs assert it equals).
pub fn refuse_fused_qkv_and_partial_rope(g: &Gguf, cfg: &Config) -> Result<(), ModelError> {
    if let Some(name) = g
        .tensor_names()
        .find(|n| n.starts_with("blk.") && n.contains(".attn_qkv."))
    {
        return Err(invalid(
            g.path(),
            format!(
                "tensor {name} (q, k and v fused) is not implemented for {}",
                cfg.arch
            ),
        ));
    }
    if cfg.rope.rotary_dim != cfg.head_dim {
        return Err(invalid(
            g.path(),
            format!(
                "{}.rope.dimension_count {} differs from the head dim {}: llama.cpp's {} needs them equal",
                cfg.arch, cfg.rope.rotary_dim, cfg.head_dim, cfg.arch
            ),
        ));
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
        // Issue 43: Mistral 3 reads its YaRN parameters itself (`mistral3`).
        "yarn" if arch == "mistral3" => (None, None),
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
            yarn: None,
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
        no_rope_layers: Vec::new(),
        pre_norms: true,
        qk_norm_whole: false,
        attn_temperature: None,
    })
}
