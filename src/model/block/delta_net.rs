//! Gated delta-net linear attention: the recurrent layers of Qwen3.5 (llama.cpp's `qwen35`,
//! `delta-net-base.cpp`), computed token by token in f32 in one fixed order of operations.
//!
//! A recurrent layer keeps, per sequence, a state that a token updates and reads:
//! - a causal convolution window: the last `conv_kernel − 1` rows of the projected q, k and v
//!   channels (before the convolution), so that each new row is convolved with the ones before
//!   it;
//! - one `head_dim × head_dim` matrix `S` per value head.
//!
//! For each token, from the layer's input projection `[qkv | z | b | a]`:
//! 1. `conv[c] = Σ_i window[i][c] · w[c][i]` over the window ending at the token, in tap order
//!    from 0.0, then SiLU; q and k L2-normed per key head (`x / √(Σx² + ε)`, llama.cpp's
//!    `rms_norm(x, ε/n) / √n`);
//! 2. `β = sigmoid(b)`, `g = softplus(a + dt_bias) · A` per value head (`A = −exp(A_log)` as the
//!    GGUF file stores it);
//! 3. per value head `h` (key head `h mod k_heads`, llama.cpp's tiled broadcast):
//!    `S ← S · exp(g)`; `δ_j = (v_j − S_j · k) · β`; `S_j ← S_j + δ_j k`; `o_j = (S_j · q) / √d`,
//!    where `S_j` is row `j` (a value dimension) over the key dimensions, and each `·` is the
//!    canonical dot product of `kernels::dot`;
//! 4. `o` RMS-normed per head with the layer's norm, times `silu(z)`.
//!
//! Why token by token: every step at position `p` reads only the state after `p − 1` and the
//! token's own projections (which the kernels compute row by row), so the state at a position
//! is the same computation whether it was reached in one prefill, in several, in a lockstep
//! decode, or from a branch of the prefix tree. A chunked (parallel) form would sum within a
//! chunk in an order that depends on where the chunk starts. Heads are independent and may run
//! on any thread: no sum crosses heads.

use std::path::Path;

use rayon::prelude::*;

use crate::model::numerics::kernels;
use crate::model::{invalid, ModelError};

/// The recurrent layers of a hybrid model, as llama.cpp's `qwen35` reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct DeltaNet {
    /// `ssm.conv_kernel`: taps of the causal convolution (the window keeps one fewer).
    pub conv_kernel: usize,
    /// `ssm.group_count`: key heads.
    pub k_heads: usize,
    /// `ssm.time_step_rank`: value heads (a multiple of the key heads).
    pub v_heads: usize,
    /// `ssm.state_size`: the key and value head size (llama.cpp requires them equal).
    pub head_dim: usize,
    /// `recurrent[l]`: layer `l` is a delta-net layer; the others are full attention.
    pub recurrent: Vec<bool>,
    /// `rope.dimension_sections` as the file holds it (Qwen3.5's multi-section rope). For text
    /// every section's position is the token's own (llama.cpp broadcasts one position to all
    /// sections), so the rotation is NEOX rope over `rope.dimension_count`: kept only to be
    /// written back.
    pub rope_sections: Vec<i32>,
}

impl DeltaNet {
    pub fn key_dim(&self) -> usize {
        self.k_heads * self.head_dim
    }

    pub fn value_dim(&self) -> usize {
        self.v_heads * self.head_dim
    }

    /// Channels of the convolution: q, k and v.
    pub fn conv_dim(&self) -> usize {
        2 * self.key_dim() + self.value_dim()
    }

    /// Columns of a layer's input projection: the convolution's channels, z, b and a.
    pub fn in_width(&self) -> usize {
        self.conv_dim() + self.value_dim() + 2 * self.v_heads
    }

    pub fn is_recurrent(&self, layer: usize) -> bool {
        self.recurrent.get(layer).copied().unwrap_or(false)
    }

    /// Floats of one layer's state: the convolution window and the heads' matrices.
    pub fn state_floats(&self) -> usize {
        (self.conv_kernel - 1) * self.conv_dim() + self.v_heads * self.head_dim * self.head_dim
    }

    /// Bytes of one sequence's recurrent state over every recurrent layer (what a prefix tree's
    /// branch point keeps beside the attention layers' keys and values).
    pub fn snapshot_bytes(&self) -> usize {
        4 * self.state_floats() * self.recurrent.iter().filter(|&&r| r).count()
    }

    pub fn validate(&self, path: &Path, layers: usize) -> Result<(), ModelError> {
        let bad = |what: String| Err(invalid(path, what));
        if self.conv_kernel < 2 || self.k_heads == 0 || self.v_heads == 0 || self.head_dim == 0 {
            return bad(format!(
                "delta-net conv kernel {}, key heads {}, value heads {}, head size {}: needs a \
                 kernel of at least 2 and positive sizes",
                self.conv_kernel, self.k_heads, self.v_heads, self.head_dim
            ));
        }
        if !self.v_heads.is_multiple_of(self.k_heads) {
            return bad(format!(
                "delta-net value heads {} are not a multiple of its key heads {}",
                self.v_heads, self.k_heads
            ));
        }
        if self.recurrent.len() != layers {
            return bad(format!(
                "{} recurrent-layer flags for {layers} layers",
                self.recurrent.len()
            ));
        }
        Ok(())
    }
}

/// One recurrent layer's state after a position. Shared (`Arc`) between the states that
/// continue from it. The default is empty, no state: a place left by one moved out.
#[derive(Clone, Debug, Default)]
pub struct LayerState {
    /// `[conv_kernel − 1, conv_dim]`: the latest rows last.
    window: Vec<f32>,
    /// `[v_heads, head_dim (value j), head_dim (key i)]`.
    matrices: Vec<f32>,
}

impl LayerState {
    /// Bytes of its window and matrices.
    pub fn bytes(&self) -> usize {
        4 * (self.window.len() + self.matrices.len())
    }

    /// The state before any token: zeros, as llama.cpp clears a sequence's.
    pub fn zero(net: &DeltaNet) -> LayerState {
        LayerState {
            window: vec![0.0; (net.conv_kernel - 1) * net.conv_dim()],
            matrices: vec![0.0; net.v_heads * net.head_dim * net.head_dim],
        }
    }
}

/// A layer's weights besides its two projections.
pub struct Weights<'a> {
    /// `[conv_dim, conv_kernel]`.
    pub conv: &'a [f32],
    /// `[v_heads]` each: the time-step bias and `A`.
    pub dt_bias: &'a [f32],
    pub a: &'a [f32],
    /// `[head_dim]`: the gated RMSNorm's weight.
    pub norm: &'a [f32],
    pub eps: f32,
}

/// The layer over `proj: [t, in_width]` (the input projection of `t` consecutive tokens of one
/// sequence) from `state`: the gated output `[t, value_dim]` (before the output projection) and
/// the state after the last token, in a copy (`state` stays, for other branches or a rollback).
pub fn run(
    net: &DeltaNet,
    w: &Weights,
    state: &LayerState,
    proj: &[f32],
) -> (Vec<f32>, LayerState) {
    let mut after = state.clone();
    let out = advance(net, w, &mut after, proj);
    (out, after)
}

/// [`run`] on a state no one else holds, advanced in place: the same arithmetic, without the
/// copy (a decode step's, `Transformer::extend_each`).
pub fn advance(net: &DeltaNet, w: &Weights, state: &mut LayerState, proj: &[f32]) -> Vec<f32> {
    let (conv_dim, value_dim, vh) = (net.conv_dim(), net.value_dim(), net.v_heads);
    let width = net.in_width();
    let t = proj.len() / width;
    let taps = net.conv_kernel;
    let keep = taps - 1;

    // The convolution window: the state's rows, then the tokens' q, k, v channels.
    let mut window = Vec::with_capacity((keep + t) * conv_dim);
    window.extend_from_slice(&state.window);
    for row in proj.chunks_exact(width) {
        window.extend_from_slice(&row[..conv_dim]);
    }
    let mut conv = vec![0f32; t * conv_dim];
    for (p, out) in conv.chunks_exact_mut(conv_dim).enumerate() {
        for (c, o) in out.iter_mut().enumerate() {
            let taps_c = &w.conv[c * taps..][..taps];
            let mut sum = 0f32;
            for (i, &wi) in taps_c.iter().enumerate() {
                sum += window[(p + i) * conv_dim + c] * wi;
            }
            *o = sum;
        }
    }
    let ones = vec![1f32; conv_dim];
    for row in conv.chunks_exact_mut(conv_dim) {
        let x = row.to_vec();
        kernels::silu_mul(&x, &ones, row);
    }
    state.window = window[t * conv_dim..].to_vec();

    // q and k L2-normed per key head.
    let (kd, hd) = (net.key_dim(), net.head_dim);
    for row in conv.chunks_exact_mut(conv_dim) {
        for head in row[..2 * kd].chunks_exact_mut(hd) {
            let inv = 1.0 / (kernels::dot(head, head) + w.eps).sqrt();
            head.iter_mut().for_each(|x| *x *= inv);
        }
    }

    // Per token and value head: the decay exp(g) and β.
    let mut decay = vec![0f32; t * vh];
    let mut beta = vec![0f32; t * vh];
    for (p, row) in proj.chunks_exact(width).enumerate() {
        let (b, a) = row[conv_dim + value_dim..].split_at(vh);
        for h in 0..vh {
            beta[p * vh + h] = 1.0 / (1.0 + kernels::exp32(-b[h]));
            let g = softplus(a[h] + w.dt_bias[h]) * w.a[h];
            decay[p * vh + h] = (g as f64).exp() as f32;
        }
    }

    // The recurrence, each value head on its own, token after token.
    let scale = 1.0 / (hd as f32).sqrt();
    let per_head = hd * hd;
    let outs: Vec<Vec<f32>> = state
        .matrices
        .par_chunks_exact_mut(per_head)
        .enumerate()
        .map(|(h, s)| {
            let kh = h % net.k_heads;
            let mut out = vec![0f32; t * hd];
            let mut delta = vec![0f32; hd];
            for p in 0..t {
                let row = &conv[p * conv_dim..][..conv_dim];
                let q = &row[kh * hd..][..hd];
                let k = &row[kd + kh * hd..][..hd];
                let v = &row[2 * kd + h * hd..][..hd];
                let (d, b) = (decay[p * vh + h], beta[p * vh + h]);
                s.iter_mut().for_each(|x| *x *= d);
                for (j, dj) in delta.iter_mut().enumerate() {
                    *dj = (v[j] - kernels::dot(&s[j * hd..][..hd], k)) * b;
                }
                for (sj, &dj) in s.chunks_exact_mut(hd).zip(&delta) {
                    sj.iter_mut().zip(k).for_each(|(x, &ki)| *x += ki * dj);
                }
                for (j, o) in out[p * hd..][..hd].iter_mut().enumerate() {
                    *o = kernels::dot(&s[j * hd..][..hd], q) * scale;
                }
            }
            out
        })
        .collect();
    // `[t, v_heads, head_dim]`, normed per head and gated by silu(z).
    let mut o = vec![0f32; t * value_dim];
    for (h, out) in outs.iter().enumerate() {
        for p in 0..t {
            o[p * value_dim + h * hd..][..hd].copy_from_slice(&out[p * hd..][..hd]);
        }
    }
    let normed = kernels::rms_norm(&o, w.norm, w.eps);
    for (p, (row, gated)) in proj
        .chunks_exact(width)
        .zip(o.chunks_exact_mut(value_dim))
        .enumerate()
    {
        let z = &row[conv_dim..][..value_dim];
        kernels::silu_mul(z, &normed[p * value_dim..][..value_dim], gated);
    }
    o
}

/// `ln(1 + eˣ)` as ggml computes it (`x` itself above 20), in f64 and rounded once.
fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        (x as f64).exp().ln_1p() as f32
    }
}

/// `sigmoid(x)` from the kernels' exponential, the same bits on every vector unit: the
/// attention layers' output gate.
pub fn sigmoid_mul(gate: &[f32], x: &mut [f32]) {
    for (x, &g) in x.iter_mut().zip(gate) {
        *x *= 1.0 / (1.0 + kernels::exp32(-g));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> DeltaNet {
        DeltaNet {
            conv_kernel: 4,
            k_heads: 2,
            v_heads: 4,
            head_dim: 8,
            recurrent: vec![true],
            rope_sections: vec![1, 1, 1, 0],
        }
    }

    fn draw(n: usize, seed: u32) -> Vec<f32> {
        kernels::awkward(n, seed)
    }

    /// The state after a run of tokens is the same bits whether the run is computed at once or
    /// split anywhere: the property the prefix tree's branch points rely on.
    #[test]
    fn a_run_split_anywhere_gives_the_same_bits() {
        let net = net();
        let conv = draw(net.conv_dim() * net.conv_kernel, 1);
        let dt = draw(net.v_heads, 2);
        let a: Vec<f32> = draw(net.v_heads, 3).iter().map(|x| -x.abs()).collect();
        let norm = draw(net.head_dim, 4);
        let w = Weights {
            conv: &conv,
            dt_bias: &dt,
            a: &a,
            norm: &norm,
            eps: 1e-6,
        };
        let t = 11;
        let proj = draw(t * net.in_width(), 5);
        let (whole, end) = run(&net, &w, &LayerState::zero(&net), &proj);
        for cut in 1..t {
            let (first, mid) = run(
                &net,
                &w,
                &LayerState::zero(&net),
                &proj[..cut * net.in_width()],
            );
            let (second, end2) = run(&net, &w, &mid, &proj[cut * net.in_width()..]);
            let joined: Vec<u32> = first.iter().chain(&second).map(|x| x.to_bits()).collect();
            let whole_bits: Vec<u32> = whole.iter().map(|x| x.to_bits()).collect();
            assert_eq!(joined, whole_bits, "output split at {cut}");
            assert_eq!(end.matrices, end2.matrices, "state split at {cut}");
            assert_eq!(end.window, end2.window, "window split at {cut}");
        }
        assert!(whole.iter().all(|x| x.is_finite()));
        assert!(end.matrices.iter().any(|&x| x != 0.0), "the state moved");
    }
}
