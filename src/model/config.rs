//! One architecture-neutral description of a decoder-only transformer. The per-architecture files
//! (llama, qwen2, qwen3, phi3) fill it in from config.json or GGUF metadata; the shared block in
//! `transformer` reads nothing else.

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
}

impl Rope {
    /// Inverse frequencies, one per rotated pair.
    pub fn inv_freq(&self) -> Vec<f32> {
        let half = self.rotary_dim / 2;
        (0..half)
            .map(|i| {
                // Computed in f64 and rounded once, as the reference does.
                let base = (self.theta as f64).powf(2.0 * i as f64 / self.rotary_dim as f64);
                let ext = self
                    .longrope
                    .as_ref()
                    .map_or(1.0, |l| l.short_factor[i] as f64);
                (1.0 / (ext * base)) as f32
            })
            .collect()
    }

    /// Magnitude factor applied to cos and sin (1 except under longrope).
    pub fn scale(&self) -> f32 {
        self.longrope.as_ref().map_or(1.0, |l| l.attention_factor)
    }
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
        let r = &self.rope;
        if r.rotary_dim == 0 || !r.rotary_dim.is_multiple_of(2) || r.rotary_dim > self.head_dim {
            return bad(format!(
                "rotary dim {} must be even and in 1..={}",
                r.rotary_dim, self.head_dim
            ));
        }
        if !(r.theta > 0.0 && r.theta.is_finite()) {
            return bad(format!("rope theta {} is not a positive number", r.theta));
        }
        if !(self.norm_eps >= 0.0 && self.norm_eps.is_finite()) {
            return bad(format!(
                "norm eps {} is not a non-negative number",
                self.norm_eps
            ));
        }
        if let Some(l) = &r.longrope {
            let want = r.rotary_dim / 2;
            for (name, f) in [
                ("short_factor", &l.short_factor),
                ("long_factor", &l.long_factor),
            ] {
                if f.len() != want {
                    return bad(format!(
                        "longrope {name} has {} entries, expected {want}",
                        f.len()
                    ));
                }
                if f.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
                    return bad(format!("longrope {name} has a non-positive entry"));
                }
            }
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
    /// model with the wrong positions.
    pub fn no_rope_scaling(&self, arch: &str) -> Result<(), ModelError> {
        match self.get("rope_scaling") {
            None => Ok(()),
            Some(s) => Err(invalid(
                &self.path,
                format!("rope_scaling {s} is not supported for {arch}"),
            )),
        }
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
            },
            max_positions: self.usize("max_position_embeddings")?,
            qkv_bias: self.bool_or("attention_bias", false)?,
            qk_norm: false,
            tied_embeddings: self.bool_or("tie_word_embeddings", false)?,
        })
    }
}

/// The GGUF metadata every supported architecture shares, under its `{arch}.` prefix, with the
/// layout and flags left for the architecture files to set.
pub fn gguf_base_config(g: &Gguf, arch: &str) -> Result<Config, ModelError> {
    let key = |k: &str| format!("{arch}.{k}");
    let opt_u32 = |k: &str| g.get(&key(k)).map(|_| g.get_u32(&key(k))).transpose();
    let hidden = g.get_u32(&key("embedding_length"))? as usize;
    let heads = g.get_u32(&key("attention.head_count"))? as usize;
    if heads == 0 {
        return Err(invalid(
            g.path(),
            format!("{} is 0", key("attention.head_count")),
        ));
    }
    let head_dim = opt_u32("attention.key_length")?.map_or(hidden / heads, |v| v as usize);
    if let Some(kind) = g.get(&key("rope.scaling.type")) {
        if g.get_str(&key("rope.scaling.type"))? != "none" {
            return Err(invalid(
                g.path(),
                format!("rope scaling {kind:?} is not supported"),
            ));
        }
    }
    let vocab_size = match opt_u32("vocab_size")? {
        Some(v) => v as usize,
        None => g.get_str_array("tokenizer.ggml.tokens")?.len(),
    };
    Ok(Config {
        arch: arch.to_string(),
        vocab_size,
        hidden,
        intermediate: g.get_u32(&key("feed_forward_length"))? as usize,
        layers: g.get_u32(&key("block_count"))? as usize,
        heads,
        kv_heads: opt_u32("attention.head_count_kv")?.map_or(heads, |v| v as usize),
        head_dim,
        norm_eps: g.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
        rope: Rope {
            theta: match g.get(&key("rope.freq_base")) {
                Some(_) => g.get_f32(&key("rope.freq_base"))?,
                None => 10_000.0,
            },
            layout: RopeLayout::Neox,
            rotary_dim: opt_u32("rope.dimension_count")?.map_or(head_dim, |v| v as usize),
            longrope: None,
        },
        max_positions: g.get_u32(&key("context_length"))? as usize,
        qkv_bias: false,
        qk_norm: false,
        // llama.cpp's rule: no separate output matrix means the embedding is reused.
        tied_embeddings: g.tensor_info("output.weight").is_none(),
    })
}
