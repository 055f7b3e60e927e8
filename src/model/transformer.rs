//! The one decoder block every supported architecture shares, in burn: RMSNorm, RoPE
//! (interleaved or NEOX, partial rotary, longrope), grouped-query attention over a KV cache that
//! forks for free (tensors are reference-counted, appending makes new ones), SwiGLU MLP, final
//! norm, and an LM head applied only to the rows that are scored.
//!
//! Architectures differ only in how their files name and pack the weights (see `llama`,
//! `phi3`): they hand this module tensors under the canonical names of [`Part`].

use std::path::Path;

use burn_tensor::activation::{log_softmax, silu, softmax};
use burn_tensor::{Device, Int, Tensor, TensorData};

use super::config::{Config, RopeLayout};
use super::ModelError;

/// A tensor as read from a file: PyTorch-order shape, row-major f32 data.
pub struct RawTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// A file (or set of shards) that holds tensors by name.
pub trait TensorFile {
    /// The file named in errors.
    fn path(&self) -> &Path;
    /// The tensor called `name`, `Ok(None)` when the file has none.
    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError>;
}

/// The canonical weights of the model, independent of file naming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Embed,
    FinalNorm,
    LmHead,
    AttnNorm(usize),
    Q(usize),
    K(usize),
    V(usize),
    QBias(usize),
    KBias(usize),
    VBias(usize),
    QNorm(usize),
    KNorm(usize),
    O(usize),
    MlpNorm(usize),
    Gate(usize),
    Up(usize),
    Down(usize),
}

/// Maps a canonical part to the name a file format uses for it.
pub type Naming = fn(Part) -> String;

struct Layer {
    attn_norm: Tensor<1>,
    /// q, k and v projections stacked into one `[(H + 2 KVH) hd, d]` matrix: one matmul.
    wqkv: Tensor<2>,
    bqkv: Option<Tensor<1>>,
    q_norm: Option<Tensor<1>>,
    k_norm: Option<Tensor<1>>,
    wo: Tensor<2>,
    mlp_norm: Tensor<1>,
    /// Gate and up projections stacked into one `[2 I, d]` matrix.
    w_gate_up: Tensor<2>,
    w_down: Tensor<2>,
}

pub struct Transformer {
    cfg: Config,
    device: Device,
    embed: Tensor<2>,
    /// `None` when tied to `embed`.
    lm_head: Option<Tensor<2>>,
    final_norm: Tensor<1>,
    layers: Vec<Layer>,
    inv_freq: Vec<f32>,
}

/// Keys and values of one layer, `[kv heads, positions, head dim]`.
#[derive(Clone)]
struct LayerCache {
    k: Tensor<3>,
    v: Tensor<3>,
}

/// Everything the model has seen so far. Cloning is cheap (tensor handles are shared) and is how
/// a prefix is reused: continue from a clone, the original stays valid.
#[derive(Clone)]
pub struct State {
    /// One entry per layer; empty before the first token.
    cache: Vec<LayerCache>,
    len: usize,
    /// Final-normed hidden state of the last token, `[1, d]`: the LM head over it predicts the
    /// next token, so a continuation's first token is scored without rerunning the prefix.
    last: Option<Tensor<2>>,
}

impl State {
    /// Tokens consumed so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Transformer {
    /// Builds the model from `file`, checking every tensor's shape against `cfg`.
    pub fn load(
        cfg: Config,
        file: &dyn TensorFile,
        naming: Naming,
        device: &Device,
    ) -> Result<Transformer, ModelError> {
        cfg.validate(file.path())?;
        let (d, hd) = (cfg.hidden, cfg.head_dim);
        let (q_rows, kv_rows) = (cfg.heads * hd, cfg.kv_heads * hd);
        let loader = Loader {
            file,
            naming,
            device,
        };
        let mut layers = Vec::with_capacity(cfg.layers);
        for l in 0..cfg.layers {
            let mut qkv = loader.data(Part::Q(l), &[q_rows, d])?;
            qkv.extend(loader.data(Part::K(l), &[kv_rows, d])?);
            qkv.extend(loader.data(Part::V(l), &[kv_rows, d])?);
            let bqkv = if cfg.qkv_bias {
                let mut b = loader.data(Part::QBias(l), &[q_rows])?;
                b.extend(loader.data(Part::KBias(l), &[kv_rows])?);
                b.extend(loader.data(Part::VBias(l), &[kv_rows])?);
                Some(loader.tensor1(b))
            } else {
                None
            };
            let (q_norm, k_norm) = if cfg.qk_norm {
                (
                    Some(loader.vector(Part::QNorm(l), hd)?),
                    Some(loader.vector(Part::KNorm(l), hd)?),
                )
            } else {
                (None, None)
            };
            let mut gate_up = loader.data(Part::Gate(l), &[cfg.intermediate, d])?;
            gate_up.extend(loader.data(Part::Up(l), &[cfg.intermediate, d])?);
            layers.push(Layer {
                attn_norm: loader.vector(Part::AttnNorm(l), d)?,
                wqkv: loader.tensor2(qkv, [q_rows + 2 * kv_rows, d]),
                bqkv,
                q_norm,
                k_norm,
                wo: loader.matrix(Part::O(l), [d, q_rows])?,
                mlp_norm: loader.vector(Part::MlpNorm(l), d)?,
                w_gate_up: loader.tensor2(gate_up, [2 * cfg.intermediate, d]),
                w_down: loader.matrix(Part::Down(l), [d, cfg.intermediate])?,
            });
        }
        let embed = loader.matrix(Part::Embed, [cfg.vocab_size, d])?;
        let lm_head = if cfg.tied_embeddings {
            None
        } else {
            Some(loader.matrix(Part::LmHead, [cfg.vocab_size, d])?)
        };
        let final_norm = loader.vector(Part::FinalNorm, d)?;
        let inv_freq = cfg.rope.inv_freq();
        Ok(Transformer {
            cfg,
            device: device.clone(),
            embed,
            lm_head,
            final_norm,
            layers,
            inv_freq,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The state before any token.
    pub fn empty_state(&self) -> State {
        State {
            cache: Vec::new(),
            len: 0,
            last: None,
        }
    }

    /// Runs `tokens` after `state` and returns the extended state. The LM head is not applied.
    pub fn prefill(&self, state: &State, tokens: &[u32]) -> Result<State, ModelError> {
        if tokens.is_empty() {
            return Ok(state.clone());
        }
        let (cache, hidden) = self.run(state, tokens)?;
        let t = tokens.len();
        let last = self.norm(hidden.narrow(0, t - 1, 1), &self.final_norm);
        Ok(State {
            cache,
            len: state.len + t,
            last: Some(last),
        })
    }

    /// Log-probability of each of `tokens` in turn, following `state`. Runs only `tokens[..n-1]`
    /// through the blocks (the last token's own output predicts nothing we score) and applies the
    /// LM head to exactly `n` rows.
    pub fn score_continuation(
        &self,
        state: &State,
        tokens: &[u32],
    ) -> Result<Vec<f32>, ModelError> {
        let Some(last) = &state.last else {
            return Err(ModelError::Scoring(
                "cannot score from an empty state: the context must have at least one token".into(),
            ));
        };
        let Some((_, inner)) = tokens.split_last() else {
            return Ok(Vec::new());
        };
        let rows = if inner.is_empty() {
            last.clone()
        } else {
            let (_, hidden) = self.run(state, inner)?;
            Tensor::cat(vec![last.clone(), self.norm(hidden, &self.final_norm)], 0)
        };
        let logits = rows.matmul(self.head().transpose());
        let logp = log_softmax(logits, 1);
        let targets = self.ids(tokens)?.reshape([tokens.len() as i64, 1]);
        let picked = logp.gather(1, targets);
        picked
            .into_data()
            .try_into_vec::<f32>()
            .map_err(|e| ModelError::Scoring(format!("reading log-probs: {e:?}")))
    }

    fn head(&self) -> Tensor<2> {
        self.lm_head.as_ref().unwrap_or(&self.embed).clone()
    }

    fn ids(&self, tokens: &[u32]) -> Result<Tensor<1, Int>, ModelError> {
        let vocab = self.cfg.vocab_size;
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
            return Err(ModelError::Scoring(format!(
                "token id {bad} is outside the model's vocabulary of {vocab}"
            )));
        }
        let ids: Vec<i64> = tokens.iter().map(|&t| i64::from(t)).collect();
        Ok(Tensor::from_data(
            TensorData::new(ids, [tokens.len()]),
            &self.device,
        ))
    }

    /// The blocks over `tokens` at positions `state.len..`: the new cache and the final hidden
    /// states `[t, d]` (before the final norm).
    fn run(
        &self,
        state: &State,
        tokens: &[u32],
    ) -> Result<(Vec<LayerCache>, Tensor<2>), ModelError> {
        let (p0, t) = (state.len, tokens.len());
        let limit = self.cfg.position_limit();
        if p0 + t > limit {
            return Err(ModelError::Scoring(format!(
                "sequence of {} tokens exceeds the model's limit of {limit} positions",
                p0 + t
            )));
        }
        let mut x = self.embed.clone().select(0, self.ids(tokens)?);
        let (cos, sin) = self.rope_tables(p0, t);
        let mask = (t > 1).then(|| self.causal_mask(p0, t));
        let mut cache = Vec::with_capacity(self.layers.len());
        for (i, layer) in self.layers.iter().enumerate() {
            let (x2, lc) = self.block(layer, state.cache.get(i), x, &cos, &sin, mask.as_ref());
            x = x2;
            cache.push(lc);
        }
        Ok((cache, x))
    }

    fn block(
        &self,
        w: &Layer,
        past: Option<&LayerCache>,
        x: Tensor<2>,
        cos: &Tensor<3>,
        sin: &Tensor<3>,
        mask: Option<&Tensor<3>>,
    ) -> (Tensor<2>, LayerCache) {
        let c = &self.cfg;
        let (t, hd, h, kvh) = (x.dims()[0], c.head_dim, c.heads, c.kv_heads);
        let group = h / kvh;

        let hn = self.norm(x.clone(), &w.attn_norm);
        let mut qkv = hn.matmul(w.wqkv.clone().transpose());
        if let Some(b) = &w.bqkv {
            qkv = qkv + b.clone().unsqueeze_dim(0);
        }
        let mut q = qkv.clone().narrow(1, 0, h * hd).reshape([t, h, hd]);
        let mut k = qkv
            .clone()
            .narrow(1, h * hd, kvh * hd)
            .reshape([t, kvh, hd]);
        let v = qkv
            .narrow(1, (h + kvh) * hd, kvh * hd)
            .reshape([t, kvh, hd]);
        if let (Some(qn), Some(kn)) = (&w.q_norm, &w.k_norm) {
            q = self.norm(q, qn);
            k = self.norm(k, kn);
        }
        let q = self.rope(q, cos, sin).swap_dims(0, 1); // [h, t, hd]
        let k = self.rope(k, cos, sin).swap_dims(0, 1); // [kvh, t, hd]
        let v = v.swap_dims(0, 1);
        let (keys, values) = match past {
            Some(p) => (
                Tensor::cat(vec![p.k.clone(), k], 1),
                Tensor::cat(vec![p.v.clone(), v], 1),
            ),
            None => (k, v),
        };

        // Query heads h = kv * group + g share kv head `kv`: lay them out as `group * t` rows of
        // one matrix per kv head instead of copying the keys `group` times.
        let q = q.reshape([kvh, group * t, hd]);
        let mut scores = q
            .matmul(keys.clone().swap_dims(1, 2))
            .mul_scalar(1.0 / (hd as f64).sqrt());
        if let Some(m) = mask {
            scores = scores + m.clone();
        }
        let attn = softmax(scores, 2).matmul(values.clone()); // [kvh, group t, hd]
        let attn = attn
            .reshape([h, t, hd])
            .swap_dims(0, 1)
            .reshape([t, h * hd]);
        let x = x + attn.matmul(w.wo.clone().transpose());

        let hn = self.norm(x.clone(), &w.mlp_norm);
        let gu = hn.matmul(w.w_gate_up.clone().transpose());
        let i = c.intermediate;
        let act = silu(gu.clone().narrow(1, 0, i)) * gu.narrow(1, i, i);
        let x = x + act.matmul(w.w_down.clone().transpose());
        (x, LayerCache { k: keys, v: values })
    }

    /// RMSNorm over the last dimension.
    fn norm<const D: usize>(&self, x: Tensor<D>, weight: &Tensor<1>) -> Tensor<D> {
        let inv = x
            .clone()
            .square()
            .mean_dim(D - 1)
            .add_scalar(self.cfg.norm_eps)
            .sqrt()
            .recip();
        let mut shape = [1; D];
        shape[D - 1] = weight.dims()[0];
        x * inv * weight.clone().reshape(shape)
    }

    /// cos and sin `[t, 1, rotary/2]` for positions `p0..p0+t`, times the longrope factor.
    fn rope_tables(&self, p0: usize, t: usize) -> (Tensor<3>, Tensor<3>) {
        let half = self.inv_freq.len();
        let scale = self.cfg.rope.scale() as f64;
        let mut cos = Vec::with_capacity(t * half);
        let mut sin = Vec::with_capacity(t * half);
        for p in p0..p0 + t {
            for &f in &self.inv_freq {
                // The angle in f64: positions times frequencies lose digits in f32.
                let a = p as f64 * f as f64;
                cos.push((a.cos() * scale) as f32);
                sin.push((a.sin() * scale) as f32);
            }
        }
        let make = |v| Tensor::<3>::from_data(TensorData::new(v, [t, 1, half]), &self.device);
        (make(cos), make(sin))
    }

    /// Rotates the leading `rotary_dim` dimensions of each head of `x: [t, heads, hd]`.
    fn rope(&self, x: Tensor<3>, cos: &Tensor<3>, sin: &Tensor<3>) -> Tensor<3> {
        let [t, h, hd] = x.dims();
        let rd = self.cfg.rope.rotary_dim;
        let half = rd / 2;
        let rot = x.clone().narrow(2, 0, rd);
        let (a, b) = match self.cfg.rope.layout {
            RopeLayout::Neox => (rot.clone().narrow(2, 0, half), rot.narrow(2, half, half)),
            RopeLayout::Interleaved => {
                let pairs = rot.reshape([t, h, half, 2]);
                let even = pairs.clone().narrow(3, 0, 1).reshape([t, h, half]);
                (even, pairs.narrow(3, 1, 1).reshape([t, h, half]))
            }
        };
        let ra = a.clone() * cos.clone() - b.clone() * sin.clone();
        let rb = b * cos.clone() + a * sin.clone();
        let rotated = match self.cfg.rope.layout {
            RopeLayout::Neox => Tensor::cat(vec![ra, rb], 2),
            RopeLayout::Interleaved => Tensor::stack::<4>(vec![ra, rb], 3).reshape([t, h, rd]),
        };
        if rd == hd {
            rotated
        } else {
            Tensor::cat(vec![rotated, x.narrow(2, rd, hd - rd)], 2)
        }
    }

    /// Additive mask `[1, group * t, p0 + t]`: row `(g, i)` is query position `p0 + i` and may
    /// see keys `0..=p0 + i`.
    fn causal_mask(&self, p0: usize, t: usize) -> Tensor<3> {
        let group = self.cfg.heads / self.cfg.kv_heads;
        let s = p0 + t;
        let mut m = vec![0f32; group * t * s];
        for g in 0..group {
            for i in 0..t {
                let row = &mut m[(g * t + i) * s..][..s];
                row[p0 + i + 1..].fill(f32::NEG_INFINITY);
            }
        }
        Tensor::from_data(TensorData::new(m, [1, group * t, s]), &self.device)
    }
}

/// Reads named tensors from a file and checks their shapes.
struct Loader<'a> {
    file: &'a dyn TensorFile,
    naming: Naming,
    device: &'a Device,
}

impl Loader<'_> {
    fn data(&self, part: Part, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let tensor = (self.naming)(part);
        let path = self.file.path().to_path_buf();
        let raw = self
            .file
            .tensor(&tensor)?
            .ok_or_else(|| ModelError::MissingTensor {
                path: path.clone(),
                tensor: tensor.clone(),
            })?;
        if raw.shape != shape || raw.data.len() != shape.iter().product::<usize>() {
            return Err(ModelError::Shape {
                path,
                tensor,
                expected: shape.to_vec(),
                found: raw.shape,
            });
        }
        Ok(raw.data)
    }

    fn vector(&self, part: Part, n: usize) -> Result<Tensor<1>, ModelError> {
        Ok(self.tensor1(self.data(part, &[n])?))
    }

    fn matrix(&self, part: Part, shape: [usize; 2]) -> Result<Tensor<2>, ModelError> {
        Ok(self.tensor2(self.data(part, &shape)?, shape))
    }

    fn tensor1(&self, v: Vec<f32>) -> Tensor<1> {
        let n = v.len();
        Tensor::from_data(TensorData::new(v, [n]), self.device)
    }

    fn tensor2(&self, v: Vec<f32>, shape: [usize; 2]) -> Tensor<2> {
        Tensor::from_data(TensorData::new(v, shape), self.device)
    }
}
