//! The one decoder block every supported architecture shares: RMSNorm (before attention and the
//! MLP, or only on their outputs), RoPE (interleaved or NEOX, partial rotary, longrope, YaRN,
//! per-frequency factors, a second rope for local layers, none on some layers), q/k norms per
//! head or over the whole projection, an attention temperature on q, grouped-query attention
//! over a KV cache that forks for free (chunks are reference-counted), optionally soft-capped and
//! windowed, SwiGLU or GeGLU MLP or a mixture of experts (`moe`, issue 45; with gpt-oss's
//! attention sinks and output bias), optional post-norms, final norm, and an LM head (optionally
//! soft-capped) applied only to the rows that are scored. Issue 43 (Gemma 4): head sizes and MLP
//! widths per layer, layers that attend with an earlier layer's keys and values (their own
//! projections q only), v normed, per-layer token embeddings gated into each layer's residual,
//! and a scalar on each layer's output.
//!
//! Architectures differ only in their `Config` and in how their files name and pack the weights
//! (see `llama`, `phi3`, `gemma2`, `gemma3`, `smollm3`, `olmo2`, `mistral3`, `gemma4`): they hand
//! this module tensors under the canonical names of [`Part`].

use std::path::Path;

use std::sync::Arc;

use crate::model::block::attention::{self, Heads, Kv};
use crate::model::block::config::{Activation, AttnTemperature, Config, Rope, RopeLayout};
use crate::model::block::delta_net::{self, LayerState};
use crate::model::block::moe::{Expert, ExpertMatrix, Experts};
use crate::model::format::gguf::BlockBytes;
use crate::model::format::quant::{dequantize, GgmlType};
use crate::model::numerics::kernels;
use crate::model::numerics::qmatmul::{self, QMatrix};
use crate::model::numerics::repack::{self, PackCache};
use crate::model::ModelError;

/// Runs of at most this many tokens (decode steps, labels) run on the pool (`on_pool`).
const SHORT_RUN: usize = 16;

/// Rows of a prefill that go through the MLP together.
const MLP_ROWS: usize = 256;

/// A tensor as read from a file: PyTorch-order shape, row-major f32 data.
pub struct RawTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// A tensor in its stored block format: PyTorch-order shape, type, bytes.
pub type Blocks = (Vec<usize>, GgmlType, BlockBytes);

/// A file (or set of shards) that holds tensors by name.
pub trait TensorFile {
    /// The file named in errors.
    fn path(&self) -> &Path;
    /// The tensor called `name`, `Ok(None)` when the file has none.
    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError>;
    /// The tensor called `name` in its stored block format (type and bytes), for files that
    /// store quantised blocks; `Ok(None)` when there are none to offer.
    fn blocks(&self, _name: &str) -> Result<Option<Blocks>, ModelError> {
        Ok(None)
    }
    /// Issue 45: `name`'s stored bytes whatever their type, with its shape and the type's name:
    /// the `U8` tensors of a safetensors MXFP4 checkpoint (`_blocks`, `_scales`), which only a
    /// family's view decodes. `Ok(None)` when the file has no such tensor or serves none.
    fn stored(&self, _name: &str) -> Result<Option<(Vec<usize>, String, BlockBytes)>, ModelError> {
        Ok(None)
    }
    /// The shape and stored type of `name` without reading its data (`Transformer::check`);
    /// `Ok(None)` when the file has no such tensor. An unsupported type is an error naming it.
    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError>;
    /// Every tensor name the file holds, for the check that none is left unread.
    fn names(&self) -> Vec<String>;
}

/// A reference serves the tensors of what it refers to, so a family's view can be the file
/// itself.
impl<T: TensorFile + ?Sized> TensorFile for &T {
    fn path(&self) -> &Path {
        (**self).path()
    }
    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        (**self).tensor(name)
    }
    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        (**self).blocks(name)
    }
    fn stored(&self, name: &str) -> Result<Option<(Vec<usize>, String, BlockBytes)>, ModelError> {
        (**self).stored(name)
    }
    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        (**self).describe(name)
    }
    fn names(&self) -> Vec<String> {
        (**self).names()
    }
}

/// A tensor's shape (PyTorch order) and its stored type's name.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDesc {
    pub shape: Vec<usize>,
    pub ty: String,
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
    /// Gemma's norms of the attention output and of the MLP output.
    PostAttnNorm(usize),
    PostMlpNorm(usize),
    Gate(usize),
    Up(usize),
    Down(usize),
    /// Issue 45: a mixture-of-experts layer's router `[experts, d]`, and expert `e`'s gate, up
    /// and down projections (`Part::ExpertGate(layer, e)`).
    Router(usize),
    ExpertGate(usize, usize),
    ExpertUp(usize, usize),
    ExpertDown(usize, usize),
    /// gpt-oss: the attention sinks `[heads]`, the output projection's bias, the router's
    /// bias and each expert's biases.
    Sinks(usize),
    OBias(usize),
    RouterBias(usize),
    ExpertGateBias(usize, usize),
    ExpertUpBias(usize, usize),
    ExpertDownBias(usize, usize),
    /// A gated delta-net layer's weights (Qwen3.5, `delta_net`).
    Ssm(usize, Ssm),
    /// Gemma 4's per-layer token embeddings (`Config::per_layer_input`, width `p`): the table
    /// `[vocab, layers · p]`, the projection of the embedded token `[layers · p, d]` and its
    /// norm `[p]`; per layer the gate `[p, d]`, the projection back `[d, p]` and its norm `[d]`.
    PerLayerEmbed,
    PerLayerModelProj,
    PerLayerProjNorm,
    PerLayerGate(usize),
    PerLayerProj(usize),
    PerLayerPostNorm(usize),
    /// Gemma 4's scalar on a layer's output, `[1]` (`Config::layer_scale`).
    LayerScale(usize),
}

/// The weights of a gated delta-net layer (`Config::delta_net`), in llama.cpp's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ssm {
    /// q, k and v before the convolution, `[conv_dim, d]`.
    Qkv,
    /// z, the output gate, `[value_dim, d]`.
    Gate,
    /// b (β before its sigmoid) and a (the decay's input), `[v_heads, d]` each.
    Beta,
    Alpha,
    /// The convolution, `[conv_dim, conv_kernel]`.
    Conv,
    /// The time-step bias and `A` (`−exp(A_log)`), `[v_heads]` each.
    Dt,
    A,
    /// The gated RMSNorm's weight, `[head_dim]`.
    Norm,
    /// The output projection, `[d, value_dim]`.
    Out,
}

/// Maps a canonical part to the name a file format uses for it.
pub type Naming = fn(Part) -> String;

/// Rows of a weight matrix: f32, or quantised GGUF blocks (`qmatmul`, in either mode).
enum Rows {
    F32(Vec<f32>),
    Quant(QMatrix),
}

/// A weight matrix `[rows, cols]`: one or more row ranges stacked (q, k and v in one matrix,
/// say), each held as its file and numerics mode allow.
struct Matrix {
    cols: usize,
    parts: Vec<Rows>,
}

impl Matrix {
    fn part_rows(&self, part: &Rows) -> usize {
        match part {
            Rows::F32(data) => data.len() / self.cols,
            Rows::Quant(q) => q.rows(),
        }
    }

    /// `x · selfᵀ` for `x: [t, cols]`: `[t, rows]`, the parts' columns side by side, each
    /// part written in place and `x` quantised once per layout.
    fn matmul(&self, x: &[f32]) -> Vec<f32> {
        if let [Rows::F32(data)] = self.parts.as_slice() {
            return kernels::matmul_t(x, data, self.cols);
        }
        let t = x.len() / self.cols;
        let n: usize = self.parts.iter().map(|p| self.part_rows(p)).sum();
        let mut out = vec![0f32; t * n];
        let mut acts = qmatmul::Activations::new(x);
        let mut first = 0;
        for part in &self.parts {
            let m = self.part_rows(part);
            match part {
                Rows::F32(data) => {
                    let p = kernels::matmul_t(x, data, self.cols);
                    kernels::put_columns(&p, m, &mut out, n, first);
                }
                Rows::Quant(q) => qmatmul::qmatmul_t_into(&mut acts, q, &mut out, n, first),
            }
            first += m;
        }
        out
    }

    /// Multiply-adds of one row through the matrix, and the bytes of its weights as held.
    fn cost(&self) -> (usize, usize) {
        self.parts
            .iter()
            .fold((0, 0), |(macs, bytes), part| match part {
                Rows::F32(data) => (macs + data.len(), bytes + 4 * data.len()),
                Rows::Quant(q) => (macs + q.rows() * self.cols, bytes + q.file_bytes()),
            })
    }

    /// Row `r` as f32 (an embedding lookup).
    fn row(&self, mut r: usize) -> Vec<f32> {
        for part in &self.parts {
            let n = self.part_rows(part);
            if r < n {
                return match part {
                    Rows::F32(data) => data[r * self.cols..][..self.cols].to_vec(),
                    Rows::Quant(q) => q.row(r),
                };
            }
            r -= n;
        }
        unreachable!("row index checked against the vocabulary")
    }
}

struct Layer {
    /// `None` without pre-norms (`Config::pre_norms`), likewise `mlp_norm`.
    attn_norm: Option<Vec<f32>>,
    /// q, k and v projections stacked into one `[(H + 2 KVH) hd, d]` matrix: one matmul.
    wqkv: Matrix,
    bqkv: Option<Vec<f32>>,
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    wo: Matrix,
    /// gpt-oss (`Config::o_bias`, `Config::attn_sinks`).
    bo: Option<Vec<f32>>,
    sinks: Option<Vec<f32>>,
    mlp_norm: Option<Vec<f32>>,
    post_attn_norm: Option<Vec<f32>>,
    post_mlp_norm: Option<Vec<f32>>,
    mlp: Mlp,
    /// A gated delta-net layer's weights; then `wqkv` and `wo` hold nothing.
    delta: Option<DeltaLayer>,
    /// Gemma 4 (`Config::per_layer_input`, `Config::layer_scale`).
    per_layer: Option<LayerInput>,
    scale: Option<f32>,
}

/// A layer's share of Gemma 4's per-layer embeddings: `x += norm(proj(gelu(gate · x) ⊙ input))`
/// after the MLP, `input` being the layer's slice of `PerLayerInputs`.
struct LayerInput {
    gate: Matrix,
    proj: Matrix,
    post_norm: Vec<f32>,
}

/// Gemma 4's per-layer inputs of a token: its row of the table times √p, plus the normed
/// projection of its (scaled) embedding times 1/√d, the sum times 1/√2, as llama.cpp's
/// `project_per_layer_inputs` and transformers' compute them.
struct PerLayerInputs {
    embed: Matrix,
    proj: Matrix,
    norm: Vec<f32>,
}

enum Mlp {
    Dense {
        /// Gate and up projections stacked into one `[2 I, d]` matrix.
        gate_up: Matrix,
        down: Matrix,
    },
    /// Issue 45 (`block::moe`).
    Experts { router: Matrix, experts: Experts },
}

/// A gated delta-net layer: its input projection (q, k, v, z, b, a stacked: one product), its
/// output projection and its small weights (`delta_net::Weights`).
struct DeltaLayer {
    proj: Matrix,
    out: Matrix,
    conv: Vec<f32>,
    dt_bias: Vec<f32>,
    a: Vec<f32>,
    norm: Vec<f32>,
}

/// Where a layer keeps what later positions need: its keys and values at this index of a
/// `KvChunk`, or its recurrent state at this index of `State::recurrent`.
#[derive(Clone, Copy)]
enum Slot {
    Kv(usize),
    Recurrent(usize),
}

/// What one block hands on for each continuation.
enum Kept {
    Kv(Vec<Kv>),
    Recurrent(Vec<LayerState>),
}

/// See `Transformer::weight_cost`.
pub struct WeightCost {
    pub macs_per_token: usize,
    pub decode_bytes: usize,
}

pub struct Transformer {
    cfg: Config,
    embed: Matrix,
    /// `None` when tied to `embed`.
    lm_head: Option<Matrix>,
    final_norm: Vec<f32>,
    layers: Vec<Layer>,
    inv_freq: Vec<f32>,
    /// Local layers' frequencies when their rope differs (`Config::rope_local`).
    inv_freq_local: Option<Vec<f32>>,
    /// Per layer, where its cache lives (a shared-KV layer's: its source's).
    slots: Vec<Slot>,
    /// Issue 45: the integer mode's repacked experts, held within a budget.
    expert_cache: Arc<PackCache>,
    per_layer: Option<PerLayerInputs>,
}

/// Keys and values of a run of consecutive positions, for every attention layer.
struct KvChunk {
    layers: Vec<Kv>,
}

/// Joins the trailing run of short chunks (decode steps, short labels) into one chunk in the
/// block layout once it holds a block's worth of positions. `attention` joins such a run at every
/// call, so without this each generated token would copy all the tokens generated before it, in
/// every layer (SmolLM2 spent 16% of a CLoMo run in that copy). Only the layout changes: the
/// joined chunk is what `attention` would have built from the run, so no result moves a bit.
fn compact(chunks: &mut Vec<Arc<KvChunk>>) {
    let short = |c: &Arc<KvChunk>| c.layers.first().is_some_and(Kv::is_short);
    let run = chunks.iter().rev().take_while(|c| short(c)).count();
    let from = chunks.len() - run;
    let positions: usize = chunks[from..].iter().map(|c| c.layers[0].positions()).sum();
    if positions < kernels::LANES {
        return;
    }
    let layers = (0..chunks[from].layers.len())
        .map(|l| {
            let spans: Vec<&Kv> = chunks[from..].iter().map(|c| &c.layers[l]).collect();
            Kv::join(&spans)
        })
        .collect();
    chunks.truncate(from);
    chunks.push(Arc::new(KvChunk { layers }));
}

/// Tokens to run after a state: one sequence's share of a run of the blocks.
struct Continuation<'a> {
    state: &'a State,
    tokens: &'a [u32],
}

/// Everything the model has seen so far. Cloning is cheap (the cache is a list of shared
/// chunks, one per prefill) and is how a prefix is reused: continue from a clone, the original
/// stays valid. How the positions are split into chunks does not change any result.
#[derive(Clone)]
pub struct State {
    chunks: Vec<Arc<KvChunk>>,
    len: usize,
    /// Final-normed hidden state of the last token, `[d]`: the LM head over it predicts the
    /// next token, so a continuation's first token is scored without rerunning the prefix.
    last: Option<Arc<[f32]>>,
    /// Each recurrent layer's state after the last position (empty before the first): a
    /// branch of the prefix tree continues from it as attention continues from the keys and
    /// values. Shared, so a clone copies only pointers.
    recurrent: Vec<Arc<LayerState>>,
}

impl State {
    /// Tokens consumed so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the recurrent layers' states (0 before the first token and without recurrent
    /// layers): what a prefix tree's branch point keeps beside the shared keys and values.
    pub fn recurrent_bytes(&self) -> usize {
        self.recurrent.iter().map(|s| s.bytes()).sum()
    }
}

impl Transformer {
    /// Builds the model from `file`, after [`Transformer::check`] (with `extra`, the tensors the
    /// family's config reader took), refusing non-finite weights.
    /// Quantised weights stay quantised (`qmatmul`): with `integer` they multiply 8-bit
    /// activations in integers, otherwise as f32, dequantised a tile at a time.
    pub fn load(
        cfg: Config,
        file: &dyn TensorFile,
        naming: Naming,
        extra: &[&str],
        integer: bool,
    ) -> Result<Transformer, ModelError> {
        Self::check(&cfg, file, naming, extra)?;
        let d = cfg.hidden;
        let loader = Loader {
            file,
            naming,
            integer,
            experts: Arc::new(PackCache::new(repack::expert_budget())),
        };
        let mut layers = Vec::with_capacity(cfg.layers);
        for l in 0..cfg.layers {
            let delta = match &cfg.delta_net {
                Some(net) if net.is_recurrent(l) => Some(loader.delta_layer(&cfg, net, l)?),
                _ => None,
            };
            let attention = delta.is_none();
            let hd = cfg.head_dim_at(l);
            let (q_rows, kv_rows) = (cfg.heads * hd, cfg.kv_heads * hd);
            // A shared-KV layer projects q only.
            let own_kv = cfg.kv_source_at(l).is_none();
            let bqkv = if cfg.qkv_bias && attention {
                let mut b = loader.data(Part::QBias(l), &[q_rows])?;
                b.extend(loader.data(Part::KBias(l), &[kv_rows])?);
                b.extend(loader.data(Part::VBias(l), &[kv_rows])?);
                Some(b)
            } else {
                None
            };
            let (q_norm, k_norm) = if cfg.qk_norm && attention {
                let (q, k) = qk_norm_sizes(&cfg, l);
                (
                    Some(loader.data(Part::QNorm(l), &[q])?),
                    match own_kv {
                        true => Some(loader.data(Part::KNorm(l), &[k])?),
                        false => None,
                    },
                )
            } else {
                (None, None)
            };
            let pre_norm = |part: Part| match cfg.pre_norms {
                true => loader.data(part, &[d]).map(Some),
                false => Ok(None),
            };
            let qkv_parts = [
                (Part::Q(l), q_proj_rows(&cfg, l)),
                (Part::K(l), kv_rows),
                (Part::V(l), kv_rows),
            ];
            let (wqkv, wo) = match attention {
                true => (
                    loader.matrix(d, &qkv_parts[..if own_kv { 3 } else { 1 }])?,
                    loader.matrix(q_rows, &[(Part::O(l), d)])?,
                ),
                false => (loader.matrix(d, &[])?, loader.matrix(q_rows, &[])?),
            };
            layers.push(Layer {
                attn_norm: pre_norm(Part::AttnNorm(l))?,
                wqkv,
                bqkv,
                q_norm,
                k_norm,
                wo,
                bo: match cfg.o_bias {
                    true => Some(loader.data(Part::OBias(l), &[d])?),
                    false => None,
                },
                sinks: match cfg.attn_sinks {
                    true => Some(loader.data(Part::Sinks(l), &[cfg.heads])?),
                    false => None,
                },
                mlp_norm: pre_norm(Part::MlpNorm(l))?,
                post_attn_norm: match cfg.post_norms {
                    true => Some(loader.data(Part::PostAttnNorm(l), &[d])?),
                    false => None,
                },
                post_mlp_norm: match cfg.post_norms {
                    true => Some(loader.data(Part::PostMlpNorm(l), &[d])?),
                    false => None,
                },
                mlp: match &cfg.moe {
                    None => {
                        let i = cfg.intermediate_at(l);
                        Mlp::Dense {
                            gate_up: loader.matrix(d, &[(Part::Gate(l), i), (Part::Up(l), i)])?,
                            down: loader.matrix(i, &[(Part::Down(l), d)])?,
                        }
                    }
                    Some(m) => {
                        let i = m.expert_intermediate;
                        let experts = (0..m.experts)
                            .map(|e| {
                                let biases = match m.biases {
                                    true => Some([
                                        loader.data(Part::ExpertGateBias(l, e), &[i])?,
                                        loader.data(Part::ExpertUpBias(l, e), &[i])?,
                                        loader.data(Part::ExpertDownBias(l, e), &[d])?,
                                    ]),
                                    false => None,
                                };
                                Ok(Expert {
                                    gate: loader.expert(Part::ExpertGate(l, e), i, d)?,
                                    up: loader.expert(Part::ExpertUp(l, e), i, d)?,
                                    down: loader.expert(Part::ExpertDown(l, e), d, i)?,
                                    biases,
                                    chosen: Default::default(),
                                })
                            })
                            .collect::<Result<_, ModelError>>()?;
                        Mlp::Experts {
                            router: loader.matrix(d, &[(Part::Router(l), m.experts)])?,
                            experts: Experts {
                                experts,
                                used: m.experts_used,
                                norm_topk: m.norm_topk,
                                gating: m.gating,
                                router_bias: match m.biases {
                                    true => Some(loader.data(Part::RouterBias(l), &[m.experts])?),
                                    false => None,
                                },
                                clamped: m.clamped,
                            },
                        }
                    }
                },
                delta,
                per_layer: match cfg.per_layer_input {
                    Some(p) => Some(LayerInput {
                        gate: loader.matrix(d, &[(Part::PerLayerGate(l), p)])?,
                        proj: loader.matrix(p, &[(Part::PerLayerProj(l), d)])?,
                        post_norm: loader.data(Part::PerLayerPostNorm(l), &[d])?,
                    }),
                    None => None,
                },
                scale: match cfg.layer_scale {
                    true => Some(loader.data(Part::LayerScale(l), &[1])?[0]),
                    false => None,
                },
            });
        }
        let per_layer = match cfg.per_layer_input {
            Some(p) => {
                let all = cfg.layers * p;
                Some(PerLayerInputs {
                    embed: loader.matrix(all, &[(Part::PerLayerEmbed, cfg.vocab_size)])?,
                    proj: loader.matrix(d, &[(Part::PerLayerModelProj, all)])?,
                    norm: loader.data(Part::PerLayerProjNorm, &[p])?,
                })
            }
            None => None,
        };
        let embed = loader.matrix(d, &[(Part::Embed, cfg.vocab_size)])?;
        let lm_head = if cfg.tied_embeddings {
            None
        } else {
            Some(loader.matrix(d, &[(Part::LmHead, cfg.vocab_size)])?)
        };
        let final_norm = loader.data(Part::FinalNorm, &[d])?;
        let inv_freq = cfg.rope.inv_freq();
        let inv_freq_local = cfg.rope_local.as_ref().map(Rope::inv_freq);
        let mut counts = (0, 0);
        let mut slots: Vec<Slot> = Vec::with_capacity(layers.len());
        for (l, layer) in layers.iter().enumerate() {
            let slot = match (&layer.delta, cfg.kv_source_at(l)) {
                (Some(_), _) => (Slot::Recurrent(counts.1), counts.1 += 1).0,
                // `Config::validate`: the source is an earlier attention layer.
                (None, Some(source)) => slots[source],
                (None, None) => (Slot::Kv(counts.0), counts.0 += 1).0,
            };
            slots.push(slot);
        }
        Ok(Transformer {
            cfg,
            embed,
            lm_head,
            final_norm,
            layers,
            inv_freq,
            inv_freq_local,
            slots,
            expert_cache: loader.experts,
            per_layer,
        })
    }

    /// Sets the byte budget of this model's repacked experts (the integer mode, issue 45; the
    /// default is `repack::expert_budget`): past it the least recently used are let go of and
    /// repacked from the file when next chosen. It changes speed and memory, never a bit.
    pub fn set_expert_budget(&self, bytes: usize) {
        self.expert_cache.set_limit(bytes);
    }

    /// The bytes of repacked experts held now and at most so far (the integer mode, issue 45).
    pub fn experts_held(&self) -> (usize, usize) {
        self.expert_cache.held()
    }

    /// Bytes of the experts tokens have chosen so far and of all experts, as the file stores
    /// them (issue 45: what memory a mixture should need).
    pub fn experts_bytes(&self) -> (usize, usize) {
        self.layers
            .iter()
            .filter_map(|l| match &l.mlp {
                Mlp::Experts { experts, .. } => Some(experts.chosen_bytes()),
                Mlp::Dense { .. } => None,
            })
            .fold((0, 0), |(c, a), (dc, da)| (c + dc, a + da))
    }

    /// Every tensor `cfg` needs with its expected shape, in `Part` names.
    pub fn parts(cfg: &Config) -> Vec<(Part, Vec<usize>)> {
        let d = cfg.hidden;
        let mut out = vec![
            (Part::Embed, vec![cfg.vocab_size, d]),
            (Part::FinalNorm, vec![d]),
        ];
        if !cfg.tied_embeddings {
            out.push((Part::LmHead, vec![cfg.vocab_size, d]));
        }
        // The order is the family files' (and their random draws'): it must not move.
        let pre_norm = |part: Part| cfg.pre_norms.then(|| (part, vec![d]));
        for l in 0..cfg.layers {
            let (hd, i) = (cfg.head_dim_at(l), cfg.intermediate_at(l));
            let (q_rows, kv_rows) = (cfg.heads * hd, cfg.kv_heads * hd);
            let own_kv = cfg.kv_source_at(l).is_none();
            out.extend(pre_norm(Part::AttnNorm(l)));
            // Issue 44: a gated delta-net layer in place of attention.
            let recurrent = cfg.delta_net.as_ref().filter(|n| n.is_recurrent(l));
            match recurrent {
                Some(net) => out.extend(delta_parts(net, d, l)),
                None => {
                    out.push((Part::Q(l), vec![q_proj_rows(cfg, l), d]));
                    if own_kv {
                        out.extend([
                            (Part::K(l), vec![kv_rows, d]),
                            (Part::V(l), vec![kv_rows, d]),
                        ]);
                    }
                    out.push((Part::O(l), vec![d, q_rows]));
                }
            }
            out.extend(pre_norm(Part::MlpNorm(l)));
            match &cfg.moe {
                None => out.extend([
                    (Part::Gate(l), vec![i, d]),
                    (Part::Up(l), vec![i, d]),
                    (Part::Down(l), vec![d, i]),
                ]),
                Some(m) => {
                    let i = m.expert_intermediate;
                    out.push((Part::Router(l), vec![m.experts, d]));
                    // Every expert's gate, then every up, then every down: the order in which
                    // GGUF stacks them into one tensor each.
                    out.extend((0..m.experts).map(|e| (Part::ExpertGate(l, e), vec![i, d])));
                    out.extend((0..m.experts).map(|e| (Part::ExpertUp(l, e), vec![i, d])));
                    out.extend((0..m.experts).map(|e| (Part::ExpertDown(l, e), vec![d, i])));
                    if m.biases {
                        out.push((Part::RouterBias(l), vec![m.experts]));
                        out.extend((0..m.experts).map(|e| (Part::ExpertGateBias(l, e), vec![i])));
                        out.extend((0..m.experts).map(|e| (Part::ExpertUpBias(l, e), vec![i])));
                        out.extend((0..m.experts).map(|e| (Part::ExpertDownBias(l, e), vec![d])));
                    }
                }
            }
            if cfg.o_bias {
                out.push((Part::OBias(l), vec![d]));
            }
            if cfg.attn_sinks {
                out.push((Part::Sinks(l), vec![cfg.heads]));
            }
            if cfg.qkv_bias && recurrent.is_none() {
                out.extend([
                    (Part::QBias(l), vec![q_rows]),
                    (Part::KBias(l), vec![kv_rows]),
                    (Part::VBias(l), vec![kv_rows]),
                ]);
            }
            if cfg.qk_norm && recurrent.is_none() {
                let (q, k) = qk_norm_sizes(cfg, l);
                out.push((Part::QNorm(l), vec![q]));
                if own_kv {
                    out.push((Part::KNorm(l), vec![k]));
                }
            }
            if cfg.post_norms {
                out.extend([
                    (Part::PostAttnNorm(l), vec![d]),
                    (Part::PostMlpNorm(l), vec![d]),
                ]);
            }
            if let Some(p) = cfg.per_layer_input {
                out.extend([
                    (Part::PerLayerGate(l), vec![p, d]),
                    (Part::PerLayerProj(l), vec![d, p]),
                    (Part::PerLayerPostNorm(l), vec![d]),
                ]);
            }
            if cfg.layer_scale {
                out.push((Part::LayerScale(l), vec![1]));
            }
        }
        if let Some(p) = cfg.per_layer_input {
            out.extend([
                (Part::PerLayerEmbed, vec![cfg.vocab_size, cfg.layers * p]),
                (Part::PerLayerModelProj, vec![cfg.layers * p, d]),
                (Part::PerLayerProjNorm, vec![p]),
            ]);
        }
        out
    }

    /// The checks of `load` that need no weight data: the config's relations, every tensor
    /// present with its shape and a supported type, and no tensor in the file left unread
    /// (besides `extra`, the ones the family's config reader took). What `model add` and
    /// `model inspect` run; `load` runs it first.
    pub fn check(
        cfg: &Config,
        file: &dyn TensorFile,
        naming: Naming,
        extra: &[&str],
    ) -> Result<(), ModelError> {
        let path = file.path().to_path_buf();
        cfg.validate(&path)?;
        let mut used: std::collections::HashSet<String> =
            extra.iter().map(|s| s.to_string()).collect();
        for (part, shape) in Self::parts(cfg) {
            let tensor = naming(part);
            let desc = file
                .describe(&tensor)?
                .ok_or_else(|| ModelError::MissingTensor {
                    path: path.clone(),
                    tensor: tensor.clone(),
                })?;
            if desc.shape != shape {
                return Err(ModelError::Shape {
                    path,
                    tensor,
                    expected: shape,
                    found: desc.shape,
                });
            }
            // A fused tensor (`name[slot]`) is read under its own name.
            let stored = tensor.split_once('[').map_or(tensor.as_str(), |(n, _)| n);
            used.insert(stored.to_string());
        }
        let mut unread: Vec<String> = file
            .names()
            .into_iter()
            .filter(|n| !used.contains(n))
            .collect();
        unread.sort();
        if let Some(first) = unread.first() {
            return Err(ModelError::Invalid {
                path,
                detail: format!(
                    "tensor {first} is not implemented for {}{}",
                    cfg.arch,
                    match unread.len() {
                        1 => String::new(),
                        n => format!(" (nor {} more: {})", n - 1, unread[1..].join(", ")),
                    }
                ),
            });
        }
        Ok(())
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The weight matrices' share of a token's work, for `deltalogic bench`: multiply-adds
    /// through the layers (a prefill token), and bytes of weights a decode step reads (the
    /// layers and the LM head, as the file stores them).
    pub fn weight_cost(&self) -> WeightCost {
        let (macs, bytes) = self
            .layers
            .iter()
            .flat_map(|l| {
                let mut costs = vec![l.wqkv.cost(), l.wo.cost()];
                match &l.mlp {
                    Mlp::Dense { gate_up, down } => costs.extend([gate_up.cost(), down.cost()]),
                    // A token reads only its chosen experts' weights.
                    Mlp::Experts { router, experts } => {
                        costs.extend([router.cost(), experts.cost()])
                    }
                }
                if let Some(d) = &l.delta {
                    costs.extend([d.proj.cost(), d.out.cost()]);
                }
                if let Some(p) = &l.per_layer {
                    costs.extend([p.gate.cost(), p.proj.cost()]);
                }
                costs
            })
            .fold((0, 0), |(m, b), (dm, db)| (m + dm, b + db));
        // Gemma 4: every token's embedding projected to its per-layer inputs.
        let (macs, bytes) = match &self.per_layer {
            Some(p) => {
                let (m, b) = p.proj.cost();
                (macs + m, bytes + b)
            }
            None => (macs, bytes),
        };
        WeightCost {
            macs_per_token: macs,
            decode_bytes: bytes + self.head().cost().1,
        }
    }

    /// The state before any token.
    pub fn empty_state(&self) -> State {
        State {
            chunks: Vec::new(),
            len: 0,
            last: None,
            recurrent: Vec::new(),
        }
    }

    /// Runs `tokens` after `state` and returns the extended state. The LM head is not applied.
    pub fn prefill(&self, state: &State, tokens: &[u32]) -> Result<State, ModelError> {
        if tokens.len() > SHORT_RUN {
            return self.prefill_here(state, tokens);
        }
        on_pool(|| self.prefill_here(state, tokens))
    }

    fn prefill_here(&self, state: &State, tokens: &[u32]) -> Result<State, ModelError> {
        if tokens.is_empty() {
            return Ok(state.clone());
        }
        let (mut chunks, mut recurrent, hidden) =
            self.run(&[Continuation { state, tokens }], &mut [])?;
        let chunk = chunks.pop().expect("one chunk per continuation");
        let recurrent = recurrent.pop().expect("one state per continuation");
        Ok(self.extended(state, chunk, recurrent, tokens.len(), &hidden))
    }

    /// Each of `states` extended by its own one of `tokens`, all in one pass: a lockstep step of
    /// several generations, which reads the weights once for all of them. Each state's bits are
    /// those of `prefill(state, &[token])`, since every kernel works row by row.
    pub fn step(&self, states: &[&State], tokens: &[u32]) -> Result<Vec<State>, ModelError> {
        assert_eq!(states.len(), tokens.len(), "one token per state");
        let runs: Vec<Continuation> = states
            .iter()
            .zip(tokens)
            .map(|(&state, token)| Continuation {
                state,
                tokens: std::slice::from_ref(token),
            })
            .collect();
        let (chunks, recurrent, hidden) = on_pool(|| self.run(&runs, &mut []))?;
        let d = self.cfg.hidden;
        Ok(states
            .iter()
            .zip(chunks)
            .zip(recurrent)
            .zip(hidden.chunks_exact(d))
            .map(|(((state, chunk), rec), row)| self.extended(state, chunk, rec, 1, row))
            .collect())
    }

    /// Each of `states` extended in one pass by its run of `runs` (speculative decoding's
    /// verification: the token chosen last, then drafted ones), the LM head applied once over
    /// every run's positions. `keep(i, logits)` gets run `i`'s logits after each of its tokens,
    /// `[len, vocab]` (an empty run: those after its state, one row), and says how many of its
    /// tokens the state returned for it holds (0 for an empty run); the keys and values of the
    /// others are dropped. Every kernel works row by row, so the logits and the states have the
    /// bits of `prefill` one token at a time then `next_logits`. A run must be shorter than a
    /// block of positions (`Kv::prefix`). Non-finite logits are left to the caller: those of a
    /// rejected draft are never used, as plain decoding never computes them.
    pub fn extend_each(
        &self,
        mut states: Vec<State>,
        runs: &[&[u32]],
        keep: &mut dyn FnMut(usize, &[f32]) -> usize,
    ) -> Result<Vec<State>, ModelError> {
        assert_eq!(states.len(), runs.len(), "one run per state");
        if let Some(long) = runs.iter().find(|r| r.len() >= kernels::LANES) {
            return Err(ModelError::Scoring(format!(
                "a run of {} tokens to verify; at most {}",
                long.len(),
                kernels::LANES - 1
            )));
        }
        // A run of one token keeps it (no draft to reject, so no rollback to its state): its
        // recurrent states are moved out and advanced in place, copied only if another state
        // still holds them (the prompt's, in the prefix tree). A longer run's are copied, since
        // its state must stay for a rejected draft's rerun.
        let mut owned: Vec<Vec<LayerState>> = states
            .iter_mut()
            .zip(runs)
            .filter(|(_, r)| !r.is_empty())
            .map(|(state, r)| match r.len() {
                1 => std::mem::take(&mut state.recurrent)
                    .into_iter()
                    .map(|s| Arc::try_unwrap(s).unwrap_or_else(|s| (*s).clone()))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let conts: Vec<Continuation> = states
            .iter()
            .zip(runs)
            .filter(|(_, r)| !r.is_empty())
            .map(|(state, &tokens)| Continuation { state, tokens })
            .collect();
        let total: usize = runs.iter().map(|r| r.len()).sum();
        let (chunks, recurrent, hidden) = match total {
            0 => (Vec::new(), Vec::new(), Vec::new()),
            t if t > SHORT_RUN => self.run(&conts, &mut owned)?,
            _ => on_pool(|| self.run(&conts, &mut owned))?,
        };
        let d = self.cfg.hidden;
        let normed = self.final_norm(&hidden);
        let mut rows = Vec::with_capacity((total + states.len()) * d);
        let mut at = 0;
        for (state, run) in states.iter().zip(runs) {
            if run.is_empty() {
                rows.extend_from_slice(Self::last(state)?);
            } else {
                rows.extend_from_slice(&normed[at * d..(at + run.len()) * d]);
                at += run.len();
            }
        }
        let logits = on_pool(|| self.logits(&rows));
        let vocab = self.cfg.vocab_size;
        let mut chunks = chunks.into_iter().zip(recurrent);
        let mut out = Vec::with_capacity(states.len());
        let (mut row, mut at) = (0, 0);
        for (i, (state, run)) in states.into_iter().zip(runs).enumerate() {
            let n_rows = run.len().max(1);
            let n = keep(i, &logits[row * vocab..(row + n_rows) * vocab]);
            row += n_rows;
            if run.is_empty() {
                assert_eq!(n, 0, "an empty run keeps no token");
                out.push(state);
                continue;
            }
            assert!(
                (1..=run.len()).contains(&n),
                "a run keeps 1 to all of its tokens"
            );
            let (chunk, recurrent) = chunks.next().expect("one chunk per non-empty run");
            if n < run.len() && !recurrent.is_empty() {
                // A recurrent layer's state holds no earlier position to cut back to: the kept
                // tokens are run again from `state`, the same bits (the state at a position is
                // the same computation however it was reached).
                out.push(self.prefill_here(&state, &run[..n])?);
                at += run.len();
                continue;
            }
            let chunk = if n == run.len() {
                chunk
            } else {
                let layers = chunk.layers.iter().map(|kv| kv.prefix(n));
                KvChunk {
                    layers: layers
                        .collect::<Option<_>>()
                        .expect("a run shorter than a block stays short"),
                }
            };
            let mut kept = state.chunks.clone();
            kept.push(Arc::new(chunk));
            compact(&mut kept);
            out.push(State {
                chunks: kept,
                len: state.len + n,
                last: Some(normed[(at + n - 1) * d..(at + n) * d].into()),
                recurrent,
            });
            at += run.len();
        }
        Ok(out)
    }

    /// `state` followed by the `n` positions of `chunk` (and `recurrent`, the recurrent layers'
    /// states after them), whose last hidden row ends `hidden`.
    fn extended(
        &self,
        state: &State,
        chunk: KvChunk,
        recurrent: Vec<Arc<LayerState>>,
        n: usize,
        hidden: &[f32],
    ) -> State {
        let d = self.cfg.hidden;
        let last = self.final_norm(&hidden[hidden.len() - d..]);
        let mut chunks = state.chunks.clone();
        chunks.push(Arc::new(chunk));
        compact(&mut chunks);
        State {
            chunks,
            len: state.len + n,
            last: Some(last.into()),
            recurrent,
        }
    }

    /// The logits of the token that would follow `state` (one decode step is `prefill` of the
    /// chosen token, then this).
    pub fn next_logits(&self, state: &State) -> Result<Vec<f32>, ModelError> {
        let mut each = self.next_logits_each(&[state])?;
        Ok(each.pop().expect("one row of logits per state"))
    }

    /// The logits after each of `states`, from one product of the LM head over all their rows
    /// (the bits of one state at a time).
    pub fn next_logits_each(&self, states: &[&State]) -> Result<Vec<Vec<f32>>, ModelError> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let mut rows = Vec::with_capacity(states.len() * self.cfg.hidden);
        for state in states {
            rows.extend_from_slice(Self::last(state)?);
        }
        let logits = on_pool(|| self.logits(&rows));
        if let Some(i) = logits.iter().position(|l| !l.is_finite()) {
            let vocab = self.cfg.vocab_size;
            return Err(non_finite(
                format!("logit of token {}", i % vocab),
                logits[i],
            ));
        }
        // Each state's row split off the end in turn, so one state (a decode alone) keeps the
        // product's buffer without a copy.
        let mut logits = logits;
        let mut each: Vec<Vec<f32>> = (1..states.len())
            .map(|_| logits.split_off(logits.len() - self.cfg.vocab_size))
            .collect();
        each.push(logits);
        each.reverse();
        Ok(each)
    }

    /// Log-probability of each of `tokens` in turn, following `state`. Runs only `tokens[..n-1]`
    /// through the blocks (the last token's own output predicts nothing we score) and applies the
    /// LM head to exactly `n` rows. A non-finite result is an error, never a score.
    pub fn score_continuation(
        &self,
        state: &State,
        tokens: &[u32],
    ) -> Result<Vec<f32>, ModelError> {
        on_pool(|| self.score_here(state, tokens))
    }

    fn score_here(&self, state: &State, tokens: &[u32]) -> Result<Vec<f32>, ModelError> {
        let last = Self::last(state)?;
        let Some((_, inner)) = tokens.split_last() else {
            return Ok(Vec::new());
        };
        self.check_ids(tokens)?;
        let mut rows = last.to_vec();
        if !inner.is_empty() {
            let (_, _, hidden) = self.run(
                &[Continuation {
                    state,
                    tokens: inner,
                }],
                &mut [],
            )?;
            rows.extend(self.final_norm(&hidden));
        }
        let vocab = self.cfg.vocab_size;
        let logits = self.logits(&rows);
        logits
            .chunks_exact(vocab)
            .zip(tokens)
            .enumerate()
            .map(|(i, (row, &token))| {
                let lp = kernels::log_softmax_at(row, token as usize) as f32;
                if lp.is_finite() {
                    Ok(lp)
                } else {
                    Err(non_finite(
                        format!("log-prob of continuation token {i}"),
                        lp,
                    ))
                }
            })
            .collect()
    }

    fn last(state: &State) -> Result<&[f32], ModelError> {
        state.last.as_deref().ok_or_else(|| {
            ModelError::Scoring(
                "cannot score from an empty state: the context must have at least one token".into(),
            )
        })
    }

    /// The LM head over final-normed rows, soft-capped when the model says so.
    fn logits(&self, rows: &[f32]) -> Vec<f32> {
        let mut logits = self.head().matmul(rows);
        if let Some(cap) = self.cfg.final_softcap {
            logits.iter_mut().for_each(|l| *l = cap * (*l / cap).tanh());
        }
        logits
    }

    fn head(&self) -> &Matrix {
        self.lm_head.as_ref().unwrap_or(&self.embed)
    }

    fn final_norm(&self, hidden: &[f32]) -> Vec<f32> {
        kernels::rms_norm(hidden, &self.final_norm, self.cfg.norm_eps)
    }

    fn check_ids(&self, tokens: &[u32]) -> Result<(), ModelError> {
        let vocab = self.cfg.vocab_size;
        match tokens.iter().find(|&&t| t as usize >= vocab) {
            Some(bad) => Err(ModelError::Scoring(format!(
                "token id {bad} is outside the model's vocabulary of {vocab}"
            ))),
            None => Ok(()),
        }
    }

    /// The blocks over each continuation's tokens at its positions `state.len..`: per
    /// continuation its keys and values and its recurrent layers' states after them, and the
    /// final hidden states of all their tokens in order, `[t, d]` (before the final norm).
    /// `owned[i]`, when there and not empty, holds continuation `i`'s recurrent states (one per
    /// recurrent layer, those of its `state`), which are advanced in place instead of copied.
    #[allow(clippy::type_complexity)]
    fn run(
        &self,
        runs: &[Continuation],
        owned: &mut [Vec<LayerState>],
    ) -> Result<(Vec<KvChunk>, Vec<Vec<Arc<LayerState>>>, Vec<f32>), ModelError> {
        let limit = self.cfg.position_limit();
        for r in runs {
            let end = r.state.len + r.tokens.len();
            if end > limit {
                return Err(ModelError::Scoring(format!(
                    "sequence of {end} tokens exceeds the model's limit of {limit} positions"
                )));
            }
            self.check_ids(r.tokens)?;
        }
        let t: usize = runs.iter().map(|r| r.tokens.len()).sum();
        let mut x = Vec::with_capacity(t * self.cfg.hidden);
        for &tok in runs.iter().flat_map(|r| r.tokens) {
            x.extend(self.embed.row(tok as usize));
        }
        if let Some(s) = self.cfg.embed_scale {
            x.iter_mut().for_each(|v| *v *= s);
        }
        let per_layer = self.per_layer_inputs(runs, &x);
        let (cos, sin) = self.rope_tables(&self.inv_freq, self.cfg.rope.scale(), runs);
        let local = self.inv_freq_local.as_ref().map(|f| {
            let scale = self.cfg.rope_local.as_ref().map_or(1.0, Rope::scale);
            self.rope_tables(f, scale, runs)
        });
        let mut chunks: Vec<KvChunk> = runs
            .iter()
            .map(|_| KvChunk {
                layers: Vec::with_capacity(self.layers.len()),
            })
            .collect();
        let mut recurrent: Vec<Vec<Arc<LayerState>>> = runs.iter().map(|_| Vec::new()).collect();
        for (l, layer) in self.layers.iter().enumerate() {
            let (cos, sin) = match (&local, self.is_local(l)) {
                (Some((c, s)), true) => (c.as_slice(), s.as_slice()),
                _ => (cos.as_slice(), sin.as_slice()),
            };
            let input = per_layer.as_ref().zip(self.cfg.per_layer_input);
            let input = input.map(|(all, p)| layer_slice(all, l, self.cfg.layers, p));
            match self.block(
                layer,
                runs,
                owned,
                l,
                &mut x,
                (cos, sin),
                &chunks,
                input.as_deref(),
            ) {
                Kept::Kv(kvs) => {
                    for (chunk, kv) in chunks.iter_mut().zip(kvs) {
                        chunk.layers.push(kv);
                    }
                }
                Kept::Recurrent(states) => {
                    for (r, s) in recurrent.iter_mut().zip(states) {
                        r.push(Arc::new(s));
                    }
                }
            }
        }
        Ok((chunks, recurrent, x))
    }

    /// Gemma 4's per-layer inputs of `runs`' tokens, `[t, layers, p]`, from their scaled
    /// embeddings `x` (`PerLayerInputs`).
    fn per_layer_inputs(&self, runs: &[Continuation], x: &[f32]) -> Option<Vec<f32>> {
        let w = self.per_layer.as_ref()?;
        let p = w.norm.len();
        let d = self.cfg.hidden;
        // llama.cpp's and transformers' constants, rounded to f32 once.
        let (row_scale, proj_scale) = ((p as f32).sqrt(), 1.0 / (d as f32).sqrt());
        let input_scale = 1.0 / 2f32.sqrt();
        let mut proj = w.proj.matmul(x);
        proj.iter_mut().for_each(|v| *v *= proj_scale);
        let mut out = kernels::rms_norm(&proj, &w.norm, self.cfg.norm_eps);
        let all = self.cfg.layers * p;
        for (row, &tok) in out
            .chunks_exact_mut(all)
            .zip(runs.iter().flat_map(|r| r.tokens))
        {
            let table = w.embed.row(tok as usize);
            for (o, e) in row.iter_mut().zip(table) {
                *o = (*o + e * row_scale) * input_scale;
            }
        }
        Some(out)
    }

    /// Whether layer `l` attends within the sliding window.
    fn is_local(&self, l: usize) -> bool {
        self.cfg.local_layers.get(l).copied().unwrap_or(false)
    }

    /// One decoder block over `x: [t, d]` (the continuations' tokens in order) in place;
    /// returns what each continuation keeps for later positions. Only attention (and a
    /// recurrent layer) looks across rows, each continuation's over its own past. `rope`: the
    /// rotation's cosines and sines at the continuations' positions.
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        w: &Layer,
        runs: &[Continuation],
        owned: &mut [Vec<LayerState>],
        layer: usize,
        x: &mut [f32],
        rope: (&[f32], &[f32]),
        this_run: &[KvChunk],
        per_layer_input: Option<&[f32]>,
    ) -> Kept {
        let c = &self.cfg;
        let (mut out, kept) = match &w.delta {
            Some(delta) => self.delta_net(w, delta, runs, owned, layer, x),
            None => self.self_attention(w, runs, layer, x, rope, this_run),
        };
        if let Some(norm) = &w.post_attn_norm {
            out = kernels::rms_norm(&out, norm, c.norm_eps);
        }
        x.iter_mut().zip(&out).for_each(|(x, o)| *x += o);

        // The MLP, whose activations are the widest, a bounded number of rows at a time: every
        // step is row by row, so the bits are those of one pass, and long prompts do not hold
        // `t × 2I` floats at once.
        let i = c.intermediate_at(layer);
        for x in x.chunks_mut(MLP_ROWS * c.hidden) {
            let normed;
            let h: &[f32] = match &w.mlp_norm {
                Some(norm) => {
                    normed = kernels::rms_norm(x, norm, c.norm_eps);
                    &normed
                }
                None => x,
            };
            let (gate_up, down) = match &w.mlp {
                Mlp::Dense { gate_up, down } => (gate_up, down),
                Mlp::Experts { router, experts } => {
                    let mut out = experts.forward(h, &router.matmul(h));
                    if let Some(norm) = &w.post_mlp_norm {
                        out = kernels::rms_norm(&out, norm, c.norm_eps);
                    }
                    x.iter_mut().zip(&out).for_each(|(x, o)| *x += o);
                    continue;
                }
            };
            let gu = gate_up.matmul(h);
            let mut act = vec![0f32; gu.len() / 2];
            for (row, out) in gu.chunks_exact(2 * i).zip(act.chunks_exact_mut(i)) {
                let (gate, up) = row.split_at(i);
                match c.activation {
                    Activation::Silu => kernels::silu_mul(gate, up, out),
                    Activation::GeluTanh => gelu_tanh_mul(gate, up, out),
                }
            }
            let mut out = down.matmul(&act);
            if let Some(norm) = &w.post_mlp_norm {
                out = kernels::rms_norm(&out, norm, c.norm_eps);
            }
            x.iter_mut().zip(&out).for_each(|(x, o)| *x += o);
        }
        if let (Some(p), Some(input)) = (&w.per_layer, per_layer_input) {
            let gate = p.gate.matmul(x);
            let mut act = vec![0f32; gate.len()];
            gelu_tanh_mul(&gate, input, &mut act);
            let out = kernels::rms_norm(&p.proj.matmul(&act), &p.post_norm, c.norm_eps);
            x.iter_mut().zip(&out).for_each(|(x, o)| *x += o);
        }
        if let Some(s) = w.scale {
            x.iter_mut().for_each(|v| *v *= s);
        }
        kept
    }

    /// A gated delta-net layer (issue 44) over `x`: its output `[t, d]` before the residual,
    /// and each continuation's state after its tokens, each continuation run token by token
    /// from its own state (`delta_net`), advanced in place if `owned` holds it (`run`).
    fn delta_net(
        &self,
        w: &Layer,
        delta: &DeltaLayer,
        runs: &[Continuation],
        owned: &mut [Vec<LayerState>],
        layer: usize,
        x: &[f32],
    ) -> (Vec<f32>, Kept) {
        let c = &self.cfg;
        let net = c
            .delta_net
            .as_ref()
            .expect("a delta-net layer has its config");
        let proj = match &w.attn_norm {
            Some(norm) => delta.proj.matmul(&kernels::rms_norm(x, norm, c.norm_eps)),
            None => delta.proj.matmul(x),
        };
        let slot = match self.slots[layer] {
            Slot::Recurrent(s) => s,
            Slot::Kv(_) => unreachable!("layer {layer} is recurrent"),
        };
        let weights = delta_net::Weights {
            conv: &delta.conv,
            dt_bias: &delta.dt_bias,
            a: &delta.a,
            norm: &delta.norm,
            eps: c.norm_eps,
        };
        let width = net.in_width();
        // Made only for a run from the empty state: a decode step would otherwise clear a whole
        // state (a megabyte a layer on Qwen3.5-0.8B) per layer and token for nothing (1% of a
        // decode's samples, `docs/models.md`, *Decode: where a token's time goes*).
        let mut zero = None;
        let mut gated = Vec::with_capacity(proj.len() / width * net.value_dim());
        let mut states = Vec::with_capacity(runs.len());
        let mut row = 0;
        for (i, r) in runs.iter().enumerate() {
            let n = r.tokens.len();
            let proj = &proj[row * width..][..n * width];
            match owned.get_mut(i).and_then(|o| o.get_mut(slot)) {
                Some(own) => {
                    let mut state = std::mem::take(own);
                    gated.extend(delta_net::advance(net, &weights, &mut state, proj));
                    states.push(state);
                }
                None => {
                    let from = match r.state.recurrent.get(slot) {
                        Some(s) => &**s,
                        None => zero.get_or_insert_with(|| LayerState::zero(net)),
                    };
                    let (out, state) = delta_net::run(net, &weights, from, proj);
                    gated.extend(out);
                    states.push(state);
                }
            }
            row += n;
        }
        (delta.out.matmul(&gated), Kept::Recurrent(states))
    }

    /// Grouped-query self-attention over `x`: its output `[t, d]` (after the output projection,
    /// before any post-norm and the residual), and each continuation's keys and values.
    /// A shared-KV layer (`Config::kv_source`) projects q only and attends with its source's
    /// keys and values: the past's, and this run's from `this_run`.
    fn self_attention(
        &self,
        w: &Layer,
        runs: &[Continuation],
        layer: usize,
        x: &[f32],
        (cos, sin): (&[f32], &[f32]),
        this_run: &[KvChunk],
    ) -> (Vec<f32>, Kept) {
        let c = &self.cfg;
        let (hd, h, kvh) = (c.head_dim_at(layer), c.heads, c.kv_heads);
        let q_cols = h * hd;
        let shared = c.kv_source_at(layer).is_some();
        let kv_cols = if shared { 0 } else { kvh * hd };
        let q_width = q_proj_rows(c, layer);

        let mut qkv = match &w.attn_norm {
            Some(norm) => w.wqkv.matmul(&kernels::rms_norm(x, norm, c.norm_eps)),
            None => w.wqkv.matmul(x),
        };
        let width = q_width + 2 * kv_cols;
        if let Some(b) = &w.bqkv {
            for row in qkv.chunks_exact_mut(width) {
                row.iter_mut().zip(b).for_each(|(v, b)| *v += b);
            }
        }
        let column = |from: usize, n: usize| -> Vec<f32> {
            let mut out = Vec::with_capacity(qkv.len() / width * n);
            for row in qkv.chunks_exact(width) {
                out.extend_from_slice(&row[from..from + n]);
            }
            out
        };
        let (mut q, mut k, v) = (
            column(0, q_width),
            column(q_width, kv_cols),
            column(q_width + kv_cols, kv_cols),
        );
        // Qwen3.5: each head's q then its output gate (`q_proj_rows`).
        let gate = c.attn_gate.then(|| {
            let (mut only_q, mut gate) = (Vec::with_capacity(q.len() / 2), Vec::new());
            gate.reserve(q.len() / 2);
            for head in q.chunks_exact(2 * hd) {
                only_q.extend_from_slice(&head[..hd]);
                gate.extend_from_slice(&head[hd..]);
            }
            q = only_q;
            gate
        });
        if let Some(qn) = &w.q_norm {
            q = kernels::rms_norm(&q, qn, c.norm_eps);
        }
        if let Some(kn) = &w.k_norm {
            k = kernels::rms_norm(&k, kn, c.norm_eps);
        }
        let v = match c.v_norm {
            true => kernels::rms_norm(&v, &vec![1.0; hd], c.norm_eps),
            false => v,
        };
        if !self.cfg.no_rope_layers.get(layer).copied().unwrap_or(false) {
            let rd = c.rope_at(layer).rotary_dim;
            self.rope(&mut q, hd, rd, cos, sin);
            self.rope(&mut k, hd, rd, cos, sin);
        }
        if let Some(t) = &c.attn_temperature {
            temperature(t, &mut q, runs);
        }

        // Each continuation's keys and values split off the end in turn, so a prefill (one
        // continuation) keeps the whole buffers without a copy; likewise its attention output.
        let (mut k, mut v) = (k, v);
        let mut kvs: Vec<Kv> = Vec::with_capacity(runs.len());
        let mut row = q.len() / q_cols;
        for r in runs.iter().rev().filter(|_| !shared) {
            row -= r.tokens.len();
            let (rk, rv) = (k.split_off(row * kv_cols), v.split_off(row * kv_cols));
            kvs.push(Kv::new(rk, rv, kvh, hd));
        }
        kvs.reverse();
        if shared {
            row = 0;
        }
        let source = match self.slots[layer] {
            Slot::Kv(s) => s,
            Slot::Recurrent(_) => unreachable!("layer {layer} attends"),
        };
        let mut attn: Vec<f32> = Vec::new();
        for (i, r) in runs.iter().enumerate() {
            let kv = match shared {
                true => &this_run[i].layers[source],
                false => &kvs[i],
            };
            let q = &q[row * q_cols..][..r.tokens.len() * q_cols];
            let out = self.attention(&r.state.chunks, w, layer, q, kv, r.state.len);
            match attn.is_empty() {
                true => attn = out,
                false => attn.extend(out),
            }
            row += r.tokens.len();
        }
        if let Some(gate) = &gate {
            delta_net::sigmoid_mul(gate, &mut attn);
        }
        let mut out = w.wo.matmul(&attn);
        if let Some(b) = &w.bo {
            for row in out.chunks_exact_mut(b.len()) {
                row.iter_mut().zip(b).for_each(|(v, b)| *v += b);
            }
        }
        (out, Kept::Kv(kvs))
    }

    /// Causal grouped-query attention of `q: [t, h, hd]` (positions `p0..`) over the past
    /// chunks' keys and values of `layer` and this run's `kv` (`attention`: the same bits
    /// however the past is chunked).
    fn attention(
        &self,
        past: &[Arc<KvChunk>],
        w: &Layer,
        layer: usize,
        q: &[f32],
        kv: &Kv,
        p0: usize,
    ) -> Vec<f32> {
        let c = &self.cfg;
        let slot = match self.slots[layer] {
            Slot::Kv(s) => s,
            Slot::Recurrent(_) => unreachable!("layer {layer} attends"),
        };
        let spans: Vec<&Kv> = past.iter().map(|ch| &ch.layers[slot]).chain([kv]).collect();
        let shape = Heads {
            heads: c.heads,
            kv_heads: c.kv_heads,
            head_dim: c.head_dim_at(layer),
            scale: c.attn_scale,
            softcap: c.attn_softcap,
            window: match self.is_local(layer) {
                true => c.sliding_window,
                false => None,
            },
        };
        attention::attention_with_sinks(&spans, q, shape, p0, w.sinks.as_deref())
    }

    /// cos and sin `[t, rotary/2]` for each continuation's positions in turn at frequencies
    /// `inv_freq`, times the longrope factor `scale`.
    fn rope_tables(
        &self,
        inv_freq: &[f32],
        scale: f32,
        runs: &[Continuation],
    ) -> (Vec<f32>, Vec<f32>) {
        let half = inv_freq.len();
        let scale = scale as f64;
        let t: usize = runs.iter().map(|r| r.tokens.len()).sum();
        let mut cos = Vec::with_capacity(t * half);
        let mut sin = Vec::with_capacity(t * half);
        let positions = runs
            .iter()
            .flat_map(|r| r.state.len..r.state.len + r.tokens.len());
        for p in positions {
            for &f in inv_freq {
                // The angle in f64: positions times frequencies lose digits in f32.
                let a = p as f64 * f as f64;
                cos.push((a.cos() * scale) as f32);
                sin.push((a.sin() * scale) as f32);
            }
        }
        (cos, sin)
    }

    /// Rotates the leading `rd` dimensions of each head of `x: [t, heads, hd]` in place.
    fn rope(&self, x: &mut [f32], hd: usize, rd: usize, cos: &[f32], sin: &[f32]) {
        let half = rd / 2;
        let t = cos.len() / half.max(1);
        // A shared-KV layer's k is empty.
        if half == 0 || t == 0 || x.is_empty() {
            return;
        }
        let per_row = x.len() / t;
        for (i, row) in x.chunks_exact_mut(per_row).enumerate() {
            let (c, s) = (&cos[i * half..][..half], &sin[i * half..][..half]);
            for head in row.chunks_exact_mut(hd) {
                for j in 0..half {
                    let (ia, ib) = match self.cfg.rope.layout {
                        RopeLayout::Neox => (j, j + half),
                        RopeLayout::Interleaved => (2 * j, 2 * j + 1),
                    };
                    let (a, b) = (head[ia], head[ib]);
                    head[ia] = a * c[j] - b * s[j];
                    head[ib] = b * c[j] + a * s[j];
                }
            }
        }
    }
}

/// The lengths of layer `l`'s q and k norms: a head's, or the whole projection's
/// (`Config::qk_norm_whole`).
fn qk_norm_sizes(cfg: &Config, l: usize) -> (usize, usize) {
    let hd = cfg.head_dim_at(l);
    match cfg.qk_norm_whole {
        true => (cfg.heads * hd, cfg.kv_heads * hd),
        false => (hd, hd),
    }
}

/// Layer `l`'s per-layer inputs `[t, p]`, cut from all layers' `[t, layers, p]`.
fn layer_slice(all: &[f32], l: usize, layers: usize, p: usize) -> Vec<f32> {
    all.chunks_exact(layers * p)
        .flat_map(|row| &row[l * p..][..p])
        .copied()
        .collect()
}

/// Rows of layer `l`'s q projection: the heads' q, and with `Config::attn_gate` each head's
/// gate after its q (`[heads, 2, head_dim]`, as llama.cpp's qwen35 views it).
fn q_proj_rows(cfg: &Config, l: usize) -> usize {
    let rows = cfg.heads * cfg.head_dim_at(l);
    match cfg.attn_gate {
        true => 2 * rows,
        false => rows,
    }
}

/// A gated delta-net layer's tensors and shapes, in the order its input projection stacks them.
fn delta_parts(net: &delta_net::DeltaNet, d: usize, l: usize) -> Vec<(Part, Vec<usize>)> {
    let p = |s: Ssm| Part::Ssm(l, s);
    vec![
        (p(Ssm::Qkv), vec![net.conv_dim(), d]),
        (p(Ssm::Gate), vec![net.value_dim(), d]),
        (p(Ssm::Beta), vec![net.v_heads, d]),
        (p(Ssm::Alpha), vec![net.v_heads, d]),
        (p(Ssm::Conv), vec![net.conv_dim(), net.conv_kernel]),
        (p(Ssm::Dt), vec![net.v_heads]),
        (p(Ssm::A), vec![net.v_heads]),
        (p(Ssm::Norm), vec![net.head_dim]),
        (p(Ssm::Out), vec![d, net.value_dim()]),
    ]
}

/// Multiplies each row of `q` by the attention temperature at its position (each
/// continuation's positions in turn); rows where it is 1 are left alone.
fn temperature(t: &AttnTemperature, q: &mut [f32], runs: &[Continuation]) {
    let positions = runs
        .iter()
        .flat_map(|r| r.state.len..r.state.len + r.tokens.len());
    let width = q.len() / runs.iter().map(|r| r.tokens.len()).sum::<usize>().max(1);
    for (row, p) in q.chunks_exact_mut(width).zip(positions) {
        let f = t.at(p);
        if f != 1.0 {
            row.iter_mut().for_each(|v| *v *= f);
        }
    }
}

/// `gelu(gate) · up` with GELU's tanh approximation, `0.5 g (1 + tanh(√(2/π) (g + 0.044715 g³)))`,
/// element by element in f32 (the same operations on every path).
fn gelu_tanh_mul(gate: &[f32], up: &[f32], out: &mut [f32]) {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        let inner = SQRT_2_OVER_PI * g * (1.0 + 0.044_715 * g * g);
        *o = 0.5 * g * (1.0 + inner.tanh()) * u;
    }
}

/// Runs `f` on a thread of the current rayon pool (inline when already on one), for short runs.
/// The kernels split every product and attention over the pool: from a thread outside it, each
/// split is handed over and waited for with a sleep and a wake-up, a few hundred per token. A
/// decode step did little else (SmolLM2 int8 decoded 125 tok/s, now about 200–250); from a pool
/// thread a split is a join the other threads steal from. Long prefills stay on the caller: their
/// splits are large, so hand-offs cost little, and run on a pool thread their buffers stayed as
/// freed memory in that thread's allocator arena (SmolLM2 int8 bench peak RSS 171 → 183–204 MiB).
fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    // `scope` runs its body on the pool, as `install` does for a pool one holds a handle to.
    rayon::scope(|_| f())
}

fn non_finite(what: String, value: f32) -> ModelError {
    ModelError::Scoring(format!(
        "{what} is {value}: the model produced a non-finite value"
    ))
}

/// Reads named tensors from a file and checks their shapes and values.
struct Loader<'a> {
    file: &'a dyn TensorFile,
    naming: Naming,
    /// Multiply quantised weights in integers (the integer numerics mode).
    integer: bool,
    /// Where the experts' repacked forms are held (issue 45).
    experts: Arc<PackCache>,
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
        // A NaN or infinity (in a float tensor, or from a block's scale once dequantised)
        // would turn every score it touches into NaN: refuse the file instead.
        if let Some(i) = raw.data.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::Invalid {
                path,
                detail: format!(
                    "tensor {tensor} holds a non-finite weight ({} at element {i})",
                    raw.data[i]
                ),
            });
        }
        Ok(raw.data)
    }

    /// The matrix of `parts` (each with its row count) stacked, `cols` wide. A part in
    /// quantised blocks stays in those blocks.
    fn matrix(&self, cols: usize, parts: &[(Part, usize)]) -> Result<Matrix, ModelError> {
        let mut out = Matrix {
            cols,
            parts: Vec::new(),
        };
        for &(part, rows) in parts {
            if let Some(q) = self.quantised(part, rows, cols)? {
                out.parts.push(Rows::Quant(q));
                continue;
            }
            let data = self.data(part, &[rows, cols])?;
            // Neighbouring f32 parts merge: one product instead of several.
            match out.parts.last_mut() {
                Some(Rows::F32(prev)) => prev.extend(data),
                _ => out.parts.push(Rows::F32(data)),
            }
        }
        Ok(out)
    }

    /// Issue 45: one expert's matrix `[rows, cols]`, left in the file's map (`block::moe`):
    /// quantised blocks as a `QMatrix`, float rows as they are stored. GGUF files and
    /// safetensors checkpoints serve every tensor as its bytes, and the families' views serve
    /// each expert as a range of them, so none is copied into memory whole.
    fn expert(&self, part: Part, rows: usize, cols: usize) -> Result<ExpertMatrix, ModelError> {
        let tensor = (self.naming)(part);
        let path = || self.file.path().to_path_buf();
        let Some((shape, ty, bytes)) = self.file.blocks(&tensor)? else {
            return Err(ModelError::MissingTensor {
                path: path(),
                tensor,
            });
        };
        if shape != [rows, cols] {
            return Err(ModelError::Shape {
                path: path(),
                tensor,
                expected: vec![rows, cols],
                found: shape,
            });
        }
        if qmatmul::keeps(ty, cols) {
            let q = QMatrix::new(ty, cols, bytes, self.integer).in_cache(&self.experts);
            if let Some((i, v)) = q.first_non_finite() {
                return Err(ModelError::Invalid {
                    path: path(),
                    detail: format!(
                        "tensor {tensor} holds a non-finite weight ({v} at element {i})"
                    ),
                });
            }
            return Ok(ExpertMatrix::Quant(q));
        }
        let Some(row_bytes) = ty.bytes_for(cols) else {
            return Err(ModelError::Invalid {
                path: path(),
                detail: format!("tensor {tensor}: rows of {cols} are not whole {ty:?} blocks"),
            });
        };
        // Every weight checked once, a chunk of rows at a time, each chunk's pages handed back
        // after: loading does not leave every expert resident.
        let mut buf = vec![0f32; 256 * cols];
        for first in (0..rows).step_by(256) {
            let n = 256.min(rows - first);
            let range = first * row_bytes..(first + n) * row_bytes;
            dequantize(ty, &bytes[range.clone()], &mut buf[..n * cols]);
            bytes.release(range);
            if let Some(j) = buf[..n * cols].iter().position(|v| !v.is_finite()) {
                return Err(ModelError::Invalid {
                    path: path(),
                    detail: format!(
                        "tensor {tensor} holds a non-finite weight ({} at element {})",
                        buf[j],
                        first * cols + j
                    ),
                });
            }
        }
        Ok(ExpertMatrix::Float {
            ty,
            rows,
            cols,
            bytes,
        })
    }

    /// A gated delta-net layer's weights (`delta_parts`).
    fn delta_layer(
        &self,
        cfg: &Config,
        net: &delta_net::DeltaNet,
        l: usize,
    ) -> Result<DeltaLayer, ModelError> {
        let p = |s: Ssm| Part::Ssm(l, s);
        let (d, vh) = (cfg.hidden, net.v_heads);
        Ok(DeltaLayer {
            proj: self.matrix(
                d,
                &[
                    (p(Ssm::Qkv), net.conv_dim()),
                    (p(Ssm::Gate), net.value_dim()),
                    (p(Ssm::Beta), vh),
                    (p(Ssm::Alpha), vh),
                ],
            )?,
            out: self.matrix(net.value_dim(), &[(p(Ssm::Out), d)])?,
            conv: self.data(p(Ssm::Conv), &[net.conv_dim(), net.conv_kernel])?,
            dt_bias: self.data(p(Ssm::Dt), &[vh])?,
            a: self.data(p(Ssm::A), &[vh])?,
            norm: self.data(p(Ssm::Norm), &[net.head_dim])?,
        })
    }

    /// `part` kept in its blocks, when the file's type is quantised.
    fn quantised(
        &self,
        part: Part,
        rows: usize,
        cols: usize,
    ) -> Result<Option<QMatrix>, ModelError> {
        let tensor = (self.naming)(part);
        let Some((shape, ty, bytes)) = self.file.blocks(&tensor)? else {
            return Ok(None);
        };
        if !qmatmul::keeps(ty, cols) || shape != [rows, cols] {
            // Float types, and wrong shapes (reported by `data`), take the f32 route.
            return Ok(None);
        }
        let q = QMatrix::new(ty, cols, bytes, self.integer);
        if let Some((i, v)) = q.first_non_finite() {
            return Err(ModelError::Invalid {
                path: self.file.path().to_path_buf(),
                detail: format!("tensor {tensor} holds a non-finite weight ({v} at element {i})"),
            });
        }
        Ok(Some(q))
    }
}
