//! Issue 45: the mixture-of-experts MLP (Qwen3-MoE, gpt-oss). A router scores every expert, a
//! softmax turns the scores into probabilities, the `experts_used` most probable experts run on
//! the token (ties go to the lower expert index), and their outputs are added up weighted by
//! their probabilities, renormalised over the chosen experts when the family says so (gpt-oss:
//! the softmax over the chosen experts' scores only, biases, a clamped SwiGLU).
//!
//! Why the bits do not depend on threads, vector unit or prefix path: the router is an ordinary
//! product (row by row), the routing of a token reads only its own row, every expert's product
//! is `kernels::matmul_t`'s canonical dot product per output (whichever other tokens chose the
//! same expert), and a token's weighted sum runs over its chosen experts in one fixed order: by
//! falling probability, the lower index first among equals (llama.cpp's order of additions,
//! `build_moe_ffn`: the products scaled one by one, then added left to right).
//!
//! Where the weights are: an expert's matrices are read from the model file where they lie
//! (GGUF keeps all experts of a layer in one 3-D tensor, each expert a range of its bytes; a
//! safetensors checkpoint one tensor per expert, each mapped in place),
//! dequantised a tile at a time in the f32 mode. In the integer mode a quantised expert is
//! repacked on its first use only (`QMatrix`), so experts no token chose are never copied.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use crate::model::block::config::{Gating, SwigluClamp};
use crate::model::format::gguf::BlockBytes;
use crate::model::format::quant::{dequantize, GgmlType};
use crate::model::numerics::kernels;
use crate::model::numerics::qmatmul::{self, QMatrix};

/// ggml's floor for the sum of the chosen experts' probabilities before it divides by it (the
/// smallest normal f16), kept so that the two engines agree on degenerate routers too.
const MIN_WEIGHT_SUM: f32 = 1.0 / 16_384.0;

/// One expert's matrix `[rows, cols]`, as its file and the numerics mode hold it.
pub enum ExpertMatrix {
    /// Rows without an integer kernel (f32, f16, bf16) left in the mapped file (GGUF or
    /// safetensors), widened a tile at a time.
    Float {
        ty: GgmlType,
        rows: usize,
        cols: usize,
        bytes: BlockBytes,
    },
    /// Quantised blocks (`qmatmul`: dequantised per tile in the f32 mode, repacked on first
    /// use in the integer mode).
    Quant(QMatrix),
}

impl ExpertMatrix {
    fn rows(&self) -> usize {
        match self {
            ExpertMatrix::Float { rows, .. } => *rows,
            ExpertMatrix::Quant(q) => q.rows(),
        }
    }

    /// `x · selfᵀ` for `x: [t, cols]`.
    fn matmul(&self, x: &[f32]) -> Vec<f32> {
        match self {
            ExpertMatrix::Float {
                ty,
                rows,
                cols,
                bytes,
            } => {
                let rb = ty.bytes_for(*cols).expect("checked when loaded");
                kernels::matmul_t_rows(x, *rows, *cols, |r: Range<usize>, buf: &mut [f32]| {
                    dequantize(*ty, &bytes[r.start * rb..r.end * rb], buf)
                })
            }
            ExpertMatrix::Quant(q) => {
                let n = q.rows();
                let mut out = vec![0f32; x.len() / q.cols() * n];
                let mut acts = qmatmul::Activations::new(x);
                qmatmul::qmatmul_t_into(&mut acts, q, &mut out, n, 0);
                out
            }
        }
    }

    /// Multiply-adds of one row through the matrix, and the bytes of its weights as held.
    fn cost(&self) -> (usize, usize) {
        match self {
            ExpertMatrix::Float {
                rows, cols, bytes, ..
            } => (rows * cols, bytes.len()),
            ExpertMatrix::Quant(q) => (q.rows() * q.cols(), q.file_bytes()),
        }
    }
}

/// One expert: a SwiGLU MLP.
pub struct Expert {
    pub gate: ExpertMatrix,
    pub up: ExpertMatrix,
    pub down: ExpertMatrix,
    /// gpt-oss: biases added after the gate, up and down products.
    pub biases: Option<[Vec<f32>; 3]>,
    /// Whether a token has chosen it yet (the memory `deltalogic bench` expects).
    pub chosen: AtomicBool,
}

impl Expert {
    /// The expert's output for the rows of `h: [rows, d]` that chose it.
    fn forward(&self, h: &[f32], clamped: Option<SwigluClamp>) -> Vec<f32> {
        self.chosen.store(true, Ordering::Relaxed);
        let (mut gate, mut up) = (self.gate.matmul(h), self.up.matmul(h));
        if let Some([bg, bu, _]) = &self.biases {
            add_bias(&mut gate, bg);
            add_bias(&mut up, bu);
        }
        let mut act = vec![0f32; gate.len()];
        match clamped {
            None => kernels::silu_mul(&gate, &up, &mut act),
            Some(c) => swiglu_clamped(c, &gate, &up, &mut act),
        }
        let mut y = self.down.matmul(&act);
        if let Some([_, _, bd]) = &self.biases {
            add_bias(&mut y, bd);
        }
        y
    }

    /// Bytes of its three matrices as the file stores them.
    fn bytes(&self) -> usize {
        [&self.gate, &self.up, &self.down]
            .iter()
            .map(|m| m.cost().1)
            .sum()
    }
}

/// A layer's experts and how many of them each token uses.
pub struct Experts {
    pub experts: Vec<Expert>,
    pub used: usize,
    pub norm_topk: bool,
    pub gating: Gating,
    /// gpt-oss: added to the router's scores.
    pub router_bias: Option<Vec<f32>>,
    pub clamped: Option<SwigluClamp>,
}

/// The experts a token runs and their weights, in the order their outputs are added: falling
/// score, the lower index first among equal scores. `logits` are the router's scores of every
/// expert for the token.
pub fn route(logits: &[f32], used: usize, norm_topk: bool, gating: Gating) -> Vec<(usize, f32)> {
    let chosen = |p: &[f32]| {
        let mut order: Vec<usize> = (0..p.len()).collect();
        // Stable, and the index breaks ties explicitly: the rule does not rest on the sort.
        order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
        order.truncate(used);
        order
    };
    let mut weighted: Vec<(usize, f32)> = match gating {
        Gating::Softmax => {
            let p = softmax(logits);
            chosen(&p).into_iter().map(|i| (i, p[i])).collect()
        }
        // The scores themselves choose; the softmax runs over the chosen ones only. Softmax
        // keeps the order, so the two gatings choose alike.
        Gating::SoftmaxOfChosen => {
            let picked = chosen(logits);
            let scores: Vec<f32> = picked.iter().map(|&i| logits[i]).collect();
            picked.into_iter().zip(softmax(&scores)).collect()
        }
    };
    if norm_topk {
        let total = weighted
            .iter()
            .fold(0f32, |s, &(_, w)| s + w)
            .max(MIN_WEIGHT_SUM);
        weighted.iter_mut().for_each(|(_, w)| *w /= total);
    }
    weighted
}

/// exp of the distance to the largest score (`exp32`: the same bits on every path), summed in
/// f64 in index order, each divided by the sum.
fn softmax(x: &[f32]) -> Vec<f32> {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = x.iter().map(|&l| kernels::exp32(l - max)).collect();
    let sum: f64 = e.iter().map(|&v| f64::from(v)).sum();
    e.iter().map(|&v| (f64::from(v) / sum) as f32).collect()
}

/// gpt-oss's SwiGLU, element by element as ggml's `swiglu_oai` computes it.
fn swiglu_clamped(c: SwigluClamp, gate: &[f32], up: &[f32], out: &mut [f32]) {
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        let g = g.min(c.limit);
        let u = u.clamp(-c.limit, c.limit);
        *o = g / (1.0 + kernels::exp32(c.alpha * -g)) * (u + 1.0);
    }
}

/// Adds `bias` to every row of `x`.
fn add_bias(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
    }
}

impl Experts {
    /// The MLP output for each row of `x: [t, d]` (already normed), given the router's
    /// `logits: [t, experts]`: `[t, d]`.
    pub fn forward(&self, x: &[f32], logits: &[f32]) -> Vec<f32> {
        let n = self.experts.len();
        let t = logits.len() / n;
        let d = x.len() / t.max(1);
        let routes: Vec<Vec<(usize, f32)>> = logits
            .chunks_exact(n)
            .map(|row| match &self.router_bias {
                None => route(row, self.used, self.norm_topk, self.gating),
                Some(b) => {
                    let biased: Vec<f32> = row.iter().zip(b).map(|(l, b)| l + b).collect();
                    route(&biased, self.used, self.norm_topk, self.gating)
                }
            })
            .collect();
        // Each expert runs once over the rows that chose it, in row order; `at[row][slot]` is
        // where that row's output sits in its expert's result.
        let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut at: Vec<Vec<usize>> = Vec::with_capacity(t);
        for (row, chosen) in routes.iter().enumerate() {
            at.push(
                chosen
                    .iter()
                    .map(|&(e, _)| {
                        rows_of[e].push(row);
                        rows_of[e].len() - 1
                    })
                    .collect(),
            );
        }
        // One hand-off to the thread pool for all the chosen experts (each product splitting
        // its outputs further), not three per expert: in decode a token's 8 small experts each
        // paid the pool's start and join three times over. Threads split experts and outputs,
        // never a sum, so the bits are the same for any split.
        let outs: Vec<Vec<f32>> = rows_of
            .par_iter()
            .zip(&self.experts)
            .map(|(rows, expert)| {
                if rows.is_empty() {
                    return Vec::new();
                }
                let mut h = Vec::with_capacity(rows.len() * d);
                rows.iter()
                    .for_each(|&r| h.extend_from_slice(&x[r * d..][..d]));
                expert.forward(&h, self.clamped)
            })
            .collect();
        let mut out = vec![0f32; t * d];
        for ((o, chosen), slots) in out.chunks_exact_mut(d).zip(&routes).zip(&at) {
            for (s, (&(e, w), &i)) in chosen.iter().zip(slots).enumerate() {
                let y = &outs[e][i * d..][..d];
                if s == 0 {
                    o.iter_mut().zip(y).for_each(|(o, &y)| *o = w * y);
                } else {
                    o.iter_mut().zip(y).for_each(|(o, &y)| *o += w * y);
                }
            }
        }
        out
    }

    /// Multiply-adds of one token through its chosen experts, and the bytes of their weights
    /// (the experts' sizes are equal: the first one's, times the number used).
    pub fn cost(&self) -> (usize, usize) {
        let Some(e) = self.experts.first() else {
            return (0, 0);
        };
        let macs: usize = [&e.gate, &e.up, &e.down].iter().map(|m| m.cost().0).sum();
        (macs * self.used, e.bytes() * self.used)
    }

    /// Bytes of the experts any token has chosen so far, and of all of them, as stored.
    pub fn chosen_bytes(&self) -> (usize, usize) {
        self.experts.iter().fold((0, 0), |(chosen, all), e| {
            let b = e.bytes();
            (
                chosen + b * usize::from(e.chosen.load(Ordering::Relaxed)),
                all + b,
            )
        })
    }

    /// The rows of each expert's gate (its width), for checks.
    pub fn width(&self) -> usize {
        self.experts.first().map_or(0, |e| e.gate.rows())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_lower_index_and_weights_renormalise() {
        // Experts 1 and 3 tie for the top, 0 and 2 tie below them.
        let logits = [0.5, 2.0, 0.5, 2.0, -1.0];
        let r = route(&logits, 3, true, Gating::Softmax);
        let idx: Vec<usize> = r.iter().map(|x| x.0).collect();
        assert_eq!(idx, [1, 3, 0]);
        let sum: f32 = r.iter().map(|x| x.1).sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
        assert_eq!(r[0].1, r[1].1);
        // Without renormalising the weights are the softmax's over all five.
        let raw = route(&logits, 2, false, Gating::Softmax);
        let z: f64 = logits.iter().map(|&l| (f64::from(l) - 2.0).exp()).sum();
        assert!((f64::from(raw[0].1) - 1.0 / z).abs() < 1e-6);
        // gpt-oss: the same choice, the softmax over the chosen scores alone.
        let oss = route(&logits, 3, false, Gating::SoftmaxOfChosen);
        assert_eq!(oss.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 3, 0]);
        let z: f64 = [2.0f64, 2.0, 0.5].iter().map(|&l| (l - 2.0).exp()).sum();
        assert!((f64::from(oss[2].1) - (-1.5f64).exp() / z).abs() < 1e-6);
    }
}
