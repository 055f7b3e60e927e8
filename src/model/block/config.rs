//! One architecture-neutral description of a decoder-only transformer. The per-architecture files
//! (`family/`) fill it in from config.json or GGUF metadata; the
//! shared block in `transformer` reads nothing else.

use std::path::Path;

use crate::model::block::delta_net::DeltaNet;
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
    /// Whether the ramp's ends are rounded out to whole pairs (floor and ceil), as llama.cpp
    /// always does and transformers by default (`truncate`); gpt-oss's released configs say
    /// false.
    pub truncate: bool,
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
        let (low, high) = match self.truncate {
            true => (dim(self.beta_fast).floor(), dim(self.beta_slow).ceil()),
            false => (dim(self.beta_fast), dim(self.beta_slow)),
        };
        let (low, high) = (low.max(0.0), high.min(rotary_dim as f64 - 1.0));
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
    /// Issue 45: every layer's MLP is a mixture of experts (`block::moe`) instead of one MLP.
    pub moe: Option<Moe>,
    /// Issue 45 (gpt-oss): one sink logit per head and layer, a share of the attention softmax
    /// with no value (`attention::attention_with_sinks`).
    pub attn_sinks: bool,
    /// Issue 45 (gpt-oss): a bias on the attention output projection.
    pub o_bias: bool,
    // Issue 44 (Qwen3.5):
    /// Gated delta-net layers in place of attention on the layers it flags (`delta_net`).
    pub delta_net: Option<DeltaNet>,
    /// The q projection holds, per head, q then a gate of the same size: attention's output is
    /// multiplied by `sigmoid(gate)` before the output projection.
    pub attn_gate: bool,
    // Issue 43 (Gemma 4):
    /// The head size of local layers when it differs from `head_dim`, which is then the global
    /// layers' (Gemma 4: 256 beside 512). Their rotary dims are `rope_local`'s.
    pub head_dim_local: Option<usize>,
    /// Each layer's MLP width where the layers differ (Gemma 4's double-wide MLP on its shared-KV
    /// layers); empty: `intermediate` on every layer.
    pub layer_intermediate: Vec<usize>,
    /// Per layer, the earlier layer whose keys and values it attends with instead of computing
    /// its own (Gemma 4's shared-KV layers: q only); empty: every layer its own.
    pub kv_source: Vec<Option<usize>>,
    /// v RMS-normed per head, without a weight, before it is cached (Gemma 4).
    pub v_norm: bool,
    /// Per-layer token embeddings of this width per layer, gated into each layer's residual
    /// after its MLP (Gemma 4's `per_layer_token_embd`; `Transformer::per_layer_inputs`).
    pub per_layer_input: Option<usize>,
    /// A learnt scalar multiplying each layer's output (Gemma 4's `layer_output_scale`).
    pub layer_scale: bool,
}

/// Issue 45: a mixture-of-experts MLP. A router `[experts, hidden]` scores the experts, a
/// softmax over all of them gives probabilities, the `experts_used` most probable are run (ties
/// to the lower index), each a SwiGLU MLP of width `expert_intermediate`, and their outputs are
/// summed weighted by their probabilities (renormalised over the chosen ones with `norm_topk`).
#[derive(Clone, Debug, PartialEq)]
pub struct Moe {
    pub experts: usize,
    pub experts_used: usize,
    pub expert_intermediate: usize,
    /// The chosen experts' probabilities divided by their sum (Qwen3-MoE's `norm_topk_prob`).
    pub norm_topk: bool,
    /// How the router's scores become the chosen experts' weights.
    pub gating: Gating,
    /// Biases on the router and on every expert's three projections (gpt-oss).
    pub biases: bool,
    /// gpt-oss's clamped SwiGLU in place of plain SwiGLU.
    pub clamped: Option<SwigluClamp>,
}

/// Issue 45: how a router's scores weigh the experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gating {
    /// A softmax over every expert, then the most probable chosen (Qwen3-MoE).
    Softmax,
    /// The highest scores chosen, then a softmax over the chosen ones only (gpt-oss; llama.cpp's
    /// `SOFTMAX_WEIGHT`).
    SoftmaxOfChosen,
}

/// Issue 45: gpt-oss's SwiGLU (ggml's `swiglu_oai`): `g = min(gate, limit)`,
/// `u = clamp(up, −limit, limit)`, `g · sigmoid(alpha · g) · (u + 1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwigluClamp {
    pub alpha: f32,
    pub limit: f32,
}

/// The sizes every family's readers find in a file, from which [`Config::plain`] builds the block.
pub struct Shape {
    pub vocab_size: usize,
    pub hidden: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub norm_eps: f32,
    pub rope_theta: f32,
    pub max_positions: usize,
}

impl Config {
    /// Llama's block at `shape`: SwiGLU, NEOX RoPE over whole heads, q·k scaled by
    /// 1/√head_dim, norms before attention and MLP, an LM head of its own, and nothing else. The
    /// readers and the families set what differs.
    pub fn plain(arch: &str, shape: Shape) -> Config {
        Config {
            arch: arch.to_string(),
            vocab_size: shape.vocab_size,
            hidden: shape.hidden,
            intermediate: shape.intermediate,
            layers: shape.layers,
            heads: shape.heads,
            kv_heads: shape.kv_heads,
            head_dim: shape.head_dim,
            norm_eps: shape.norm_eps,
            rope: Rope {
                theta: shape.rope_theta,
                layout: RopeLayout::Neox,
                rotary_dim: shape.head_dim,
                longrope: None,
                freq_factors: None,
                scaling: None,
                yarn: None,
            },
            max_positions: shape.max_positions,
            qkv_bias: false,
            qk_norm: false,
            tied_embeddings: false,
            activation: Activation::Silu,
            embed_scale: None,
            post_norms: false,
            attn_scale: 1.0 / (shape.head_dim as f32).sqrt(),
            attn_softcap: None,
            final_softcap: None,
            sliding_window: None,
            local_layers: Vec::new(),
            rope_local: None,
            no_rope_layers: Vec::new(),
            pre_norms: true,
            qk_norm_whole: false,
            attn_temperature: None,
            moe: None,
            attn_sinks: false,
            o_bias: false,
            delta_net: None,
            attn_gate: false,
            head_dim_local: None,
            layer_intermediate: Vec::new(),
            kv_source: Vec::new(),
            v_norm: false,
            per_layer_input: None,
            layer_scale: false,
        }
    }

    /// Layer `l`'s head size (`head_dim_local` on a local layer).
    pub fn head_dim_at(&self, l: usize) -> usize {
        match (self.head_dim_local, self.local_layers.get(l)) {
            (Some(hd), Some(true)) => hd,
            _ => self.head_dim,
        }
    }

    /// Layer `l`'s rope: `rope_local` on a local layer that has one.
    pub fn rope_at(&self, l: usize) -> &Rope {
        match (&self.rope_local, self.local_layers.get(l)) {
            (Some(r), Some(true)) => r,
            _ => &self.rope,
        }
    }

    /// Layer `l`'s MLP width.
    pub fn intermediate_at(&self, l: usize) -> usize {
        self.layer_intermediate
            .get(l)
            .copied()
            .unwrap_or(self.intermediate)
    }

    /// The earlier layer whose keys and values layer `l` attends with, if not its own.
    pub fn kv_source_at(&self, l: usize) -> Option<usize> {
        self.kv_source.get(l).copied().flatten()
    }

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
        validate_rope(path, &self.rope, self.head_dim)?;
        if let Some(r) = &self.rope_local {
            validate_rope(path, r, self.head_dim_local.unwrap_or(self.head_dim))?;
        }
        self.validate_per_layer(path)?;
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
        if let Some(m) = &self.moe {
            if self.activation != Activation::Silu {
                return bad("experts with an activation other than SwiGLU: not implemented".into());
            }
            if m.experts_used == 0 || m.experts_used > m.experts || m.expert_intermediate == 0 {
                return bad(format!(
                    "{} experts used of {}, each {} wide: needs 1 to {} experts used and a \
                     positive width",
                    m.experts_used, m.experts, m.expert_intermediate, m.experts
                ));
            }
        }
        if let Some(net) = &self.delta_net {
            net.validate(path, self.layers)?;
        }
        if !(self.norm_eps >= 0.0 && self.norm_eps.is_finite()) {
            return bad(format!(
                "norm eps {} is not a non-negative number",
                self.norm_eps
            ));
        }
        Ok(())
    }
    /// Issue 43: the per-layer sizes and shared keys and values (Gemma 4).
    fn validate_per_layer(&self, path: &Path) -> Result<(), ModelError> {
        let bad = |what: String| Err(invalid(path, what));
        if self.head_dim_local == Some(0) {
            return bad("local head dim is 0".into());
        }
        if self.head_dim_local.is_some() && self.rope_local.is_none() {
            return bad("a local head dim without a local rope".into());
        }
        for (name, n) in [
            ("MLP widths", self.layer_intermediate.len()),
            ("shared-KV sources", self.kv_source.len()),
        ] {
            if n != 0 && n != self.layers {
                return bad(format!("{n} {name} for {} layers", self.layers));
            }
        }
        if self.layer_intermediate.contains(&0) {
            return bad("an MLP width is 0".into());
        }
        for (l, s) in self.kv_source.iter().enumerate() {
            let Some(s) = *s else { continue };
            let local = |l: usize| self.local_layers.get(l).copied().unwrap_or(false);
            if s >= l || self.kv_source_at(s).is_some() || local(s) != local(l) {
                return bad(format!(
                    "layer {l} attends with layer {s}'s keys and values: needs an earlier layer                      of its own kind with keys and values of its own"
                ));
            }
            if self
                .delta_net
                .as_ref()
                .is_some_and(|n| n.is_recurrent(s) || n.is_recurrent(l))
            {
                return bad(format!(
                    "shared keys and values on recurrent layer {l} or {s}"
                ));
            }
        }
        if self.per_layer_input == Some(0) {
            return bad("per-layer input width is 0".into());
        }
        Ok(())
    }

    /// The f32 parameter count, for the memory target (every expert counted).
    pub fn parameter_count(&self) -> usize {
        self.parameters(false)
    }

    /// The parameters one token runs through: with experts, only the `experts_used` chosen
    /// ones and the router (issue 45); otherwise [`Config::parameter_count`].
    pub fn active_parameter_count(&self) -> usize {
        self.parameters(true)
    }

    fn parameters(&self, active: bool) -> usize {
        let d = self.hidden;
        let gate = if self.attn_gate { 2 } else { 1 };
        let attn = |l: usize| {
            let hd = self.head_dim_at(l);
            let kv = match self.kv_source_at(l) {
                Some(_) => 0,
                None => d * self.kv_heads * hd * 2,
            };
            d * self.heads * hd * (1 + gate) + kv
        };
        let mlp = |l: usize| match &self.moe {
            None => 3 * d * self.intermediate_at(l),
            Some(m) => {
                let n = if active { m.experts_used } else { m.experts };
                m.experts * d + n * 3 * d * m.expert_intermediate
            }
        };
        let embed = self.vocab_size * d * if self.tied_embeddings { 1 } else { 2 };
        // Gemma 4's per-layer embeddings: the table, its projection and norm, and per layer a
        // gate, a projection back and a norm.
        let per_layer = self.per_layer_input.map_or(0, |p| {
            let all = self.layers * p;
            self.vocab_size * all + d * all + p + self.layers * (2 * d * p + d)
        });
        let mixers: usize = (0..self.layers)
            .map(|l| match &self.delta_net {
                Some(n) if n.is_recurrent(l) => {
                    d * n.in_width()
                        + n.value_dim() * d
                        + n.conv_dim() * n.conv_kernel
                        + 2 * n.v_heads
                        + n.head_dim
                }
                _ => attn(l),
            })
            .sum();
        let mlps: usize = (0..self.layers).map(mlp).sum();
        mixers + mlps + self.layers * 2 * d + embed + d + per_layer
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
