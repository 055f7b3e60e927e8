//! One architecture-neutral description of a decoder-only transformer. The per-architecture files
//! (llama, qwen2, qwen3, phi3, gemma2, gemma3) fill it in from config.json or GGUF metadata; the
//! shared block in `transformer` reads nothing else.

use std::path::Path;

use crate::model::{invalid, ModelError};

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
