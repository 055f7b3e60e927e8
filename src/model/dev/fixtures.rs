//! Tiny random-weight Hugging Face checkpoints, one per supported architecture, written by our
//! own code from a seed: no real checkpoint of these architectures can be downloaded here, and
//! the exactness tests need every code path (GQA, biases, q/k norm, fused phi3 matrices, partial
//! rotary with longrope, tied and untied heads, f32/f16/bf16, sharded weights) exercised against
//! the independent reference (`scripts/reference.py`).

use std::collections::BTreeMap;
use std::path::Path;

use half::{bf16, f16};
use safetensors::tensor::{Dtype, TensorView};
use serde_json::{json, Value};

use crate::model::family::FAMILIES;
use crate::model::format::hf::{pretty, write};
use crate::model::ModelError;
use crate::rng::Rng;

/// The seed the committed fixtures were made from.
pub const SEED: u64 = 20_261_121;
const MERGES: usize = 64;
const VOCAB: usize = 256 + MERGES;
const HIDDEN: usize = 64;
const INTERMEDIATE: usize = 96;
const LAYERS: usize = 2;
const HEADS: usize = 4;

/// Text the tokenizer's merges are learned from: the words the fixture prompts use.
const CORPUS: &str = "All cats are animals. Tom is a cat. Is Tom an animal? Answer: True. \
    Every bird can fly. Penguins are birds. Can penguins fly? Answer: False. \
    If it rains, the grass is wet. The answer is Uncertain. True False Uncertain \
    Bob is big. Big things are heavy. Anne is kind. Kind people are nice. The cat is nice. \
    Something is red then it is round. Erin is rough and green. Fiona likes the mouse.";

/// The committed fixtures (`deltalogic dev make-fixtures`), as directory names: each family's
/// [`Fixture`]s with `committed` set, in [`FAMILIES`] order.
pub fn archs() -> Vec<&'static str> {
    fixtures(true)
}

/// Further fixtures `write_one` writes (not committed: `tests/suite/families.rs` writes them to
/// compare their two formats).
pub fn more_archs() -> Vec<&'static str> {
    fixtures(false)
}

fn fixtures(committed: bool) -> Vec<&'static str> {
    FAMILIES
        .0
        .iter()
        .flat_map(|f| f.fixtures())
        .filter(|x| x.committed == committed)
        .map(|x| x.name)
        .collect()
}

/// Issue 45: the Qwen3-MoE fixture's experts, how many each token uses, and their width.
pub const EXPERTS: usize = 4;
pub const EXPERTS_USED: usize = 2;
pub const EXPERT_WIDTH: usize = 32;

/// Writes `dir/<arch>/{config.json, tokenizer.json, weights}` for every architecture.
pub fn write_all(dir: &Path, seed: u64) -> Result<(), ModelError> {
    for arch in archs() {
        write_one(dir, arch, seed)?;
    }
    Ok(())
}

/// Writes `dir/<arch>/` for one fixture of [`archs`] or [`more_archs`].
pub fn write_one(dir: &Path, arch: &str, seed: u64) -> Result<(), ModelError> {
    let tokenizer = tokenizer_json();
    {
        let out = dir.join(arch);
        let spec = FAMILIES
            .0
            .iter()
            .flat_map(|f| f.fixtures())
            .find(|x| x.name == arch)
            .ok_or_else(|| crate::model::invalid(dir, format!("no fixture {arch:?}")))?;
        std::fs::create_dir_all(&out).map_err(|source| ModelError::Io {
            path: out.clone(),
            source,
        })?;
        write(&out.join("config.json"), &pretty(&spec.config()))?;
        write(&out.join("tokenizer.json"), &pretty(&tokenizer))?;
        let mut rng = Rng::derive(seed, spec.name);
        let tensors = spec.tensors(&mut rng);
        match spec.shards {
            1 => write(
                &out.join("model.safetensors"),
                &serialize(&tensors, spec.dtype, &out)?,
            )?,
            _ => write_sharded(&out, &tensors, spec.dtype)?,
        }
    }
    Ok(())
}

/// A tiny checkpoint: what varies between the fixtures. Each family lists its own
/// ([`Family::fixtures`](crate::model::family::Family::fixtures)), built on [`Fixture::base`].
pub struct Fixture {
    /// The directory, config.json's `model_type` unless `config` says otherwise, and the key the
    /// weights' random stream is derived from.
    pub name: &'static str,
    pub class: &'static str,
    /// Written by `deltalogic dev make-fixtures` and committed ([`archs`]).
    pub committed: bool,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub qkv_bias: bool,
    pub qk_norm: bool,
    pub tied: bool,
    pub fused: bool,
    pub dtype: Dtype,
    pub shards: usize,
    pub theta: f64,
    pub gemma: bool,
    // Issue 43.
    pub layers: usize,
    /// OLMo 2's norms: none on the block's input, q/k norms over the whole projection, a norm
    /// after the MLP.
    pub olmo: bool,
    /// Issue 45: a mixture of `EXPERTS` experts in place of each MLP.
    pub moe: bool,
    /// The family's own config.json keys, written over the common ones.
    pub config: fn(&Fixture, &mut Value),
}

impl Fixture {
    /// The common fixture under `name` and config.json class `class`: 2 layers of 4 heads over
    /// 2 KV heads, f32, tied.
    pub fn base(name: &'static str, class: &'static str) -> Fixture {
        Fixture {
            name,
            class,
            committed: false,
            kv_heads: 2,
            head_dim: HIDDEN / HEADS,
            qkv_bias: false,
            qk_norm: false,
            tied: true,
            fused: false,
            dtype: Dtype::F32,
            shards: 1,
            theta: 10_000.0,
            gemma: false,
            layers: LAYERS,
            olmo: false,
            moe: false,
            config: |_, _| {},
        }
    }

    fn config(&self) -> Value {
        let mut c = json!({
            "architectures": [self.class],
            "model_type": self.name,
            "vocab_size": VOCAB,
            "hidden_size": HIDDEN,
            "intermediate_size": INTERMEDIATE,
            "num_hidden_layers": self.layers,
            "num_attention_heads": HEADS,
            "num_key_value_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "rms_norm_eps": 1e-5,
            "rope_theta": self.theta,
            "max_position_embeddings": 512,
            "tie_word_embeddings": self.tied,
            "torch_dtype": format!("{:?}", self.dtype).to_lowercase(),
        });
        (self.config)(self, &mut c);
        c
    }

    /// Named tensors in the file's naming, in a fixed order.
    fn tensors(&self, rng: &mut Rng) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        let (q, kv) = (HEADS * self.head_dim, self.kv_heads * self.head_dim);
        let mut out = Vec::new();
        let mut add = |name: String, shape: Vec<usize>, kind: Init| {
            let n = shape.iter().product();
            let data = (0..n)
                .map(|_| kind.draw(rng, shape.last().copied().unwrap_or(1)))
                .collect();
            out.push((name, shape, data));
        };
        add(
            "model.embed_tokens.weight".into(),
            vec![VOCAB, HIDDEN],
            Init::Embed,
        );
        for l in 0..self.layers {
            let p = |s: &str| format!("model.layers.{l}.{s}");
            // Gemma stores its norms as offsets from 1.
            let norm = if self.gemma { Init::Bias } else { Init::Norm };
            if !self.olmo {
                add(p("input_layernorm.weight"), vec![HIDDEN], norm);
            }
            if self.fused {
                add(
                    p("self_attn.qkv_proj.weight"),
                    vec![q + 2 * kv, HIDDEN],
                    Init::Matrix,
                );
            } else {
                for (s, rows) in [("q", q), ("k", kv), ("v", kv)] {
                    add(
                        p(&format!("self_attn.{s}_proj.weight")),
                        vec![rows, HIDDEN],
                        Init::Matrix,
                    );
                    if self.qkv_bias {
                        add(
                            p(&format!("self_attn.{s}_proj.bias")),
                            vec![rows],
                            Init::Bias,
                        );
                    }
                }
            }
            if self.qk_norm {
                let (qn, kn) = match self.olmo {
                    true => (q, kv),
                    false => (self.head_dim, self.head_dim),
                };
                add(p("self_attn.q_norm.weight"), vec![qn], norm);
                add(p("self_attn.k_norm.weight"), vec![kn], norm);
            }
            add(p("self_attn.o_proj.weight"), vec![HIDDEN, q], Init::Matrix);
            add(p("post_attention_layernorm.weight"), vec![HIDDEN], norm);
            if self.gemma {
                add(p("pre_feedforward_layernorm.weight"), vec![HIDDEN], norm);
                add(p("post_feedforward_layernorm.weight"), vec![HIDDEN], norm);
            }
            if self.olmo {
                add(p("post_feedforward_layernorm.weight"), vec![HIDDEN], norm);
            }
            if self.moe {
                add(p("mlp.gate.weight"), vec![EXPERTS, HIDDEN], Init::Matrix);
                for e in 0..EXPERTS {
                    let x = |s: &str| p(&format!("mlp.experts.{e}.{s}_proj.weight"));
                    add(x("gate"), vec![EXPERT_WIDTH, HIDDEN], Init::Matrix);
                    add(x("up"), vec![EXPERT_WIDTH, HIDDEN], Init::Matrix);
                    add(x("down"), vec![HIDDEN, EXPERT_WIDTH], Init::Matrix);
                }
            } else if self.fused {
                add(
                    p("mlp.gate_up_proj.weight"),
                    vec![2 * INTERMEDIATE, HIDDEN],
                    Init::Matrix,
                );
            } else {
                add(
                    p("mlp.gate_proj.weight"),
                    vec![INTERMEDIATE, HIDDEN],
                    Init::Matrix,
                );
                add(
                    p("mlp.up_proj.weight"),
                    vec![INTERMEDIATE, HIDDEN],
                    Init::Matrix,
                );
            }
            if !self.moe {
                add(
                    p("mlp.down_proj.weight"),
                    vec![HIDDEN, INTERMEDIATE],
                    Init::Matrix,
                );
            }
        }
        let norm = if self.gemma { Init::Bias } else { Init::Norm };
        add("model.norm.weight".into(), vec![HIDDEN], norm);
        if !self.tied {
            add("lm_head.weight".into(), vec![VOCAB, HIDDEN], Init::Embed);
        }
        out
    }
}

#[derive(Clone, Copy)]
enum Init {
    Embed,
    Matrix,
    Norm,
    Bias,
}

impl Init {
    /// Scales that keep activations near unit size, so log-probs are spread out rather than
    /// uniform and a wrong computation shows.
    fn draw(self, rng: &mut Rng, fan_in: usize) -> f32 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        (match self {
            Init::Embed => 0.3 * u,
            Init::Matrix => u * (3.0 / fan_in as f64).sqrt(),
            Init::Norm => 1.0 + 0.2 * u,
            Init::Bias => 0.2 * u,
        }) as f32
    }
}

fn encode(data: &[f32], dtype: Dtype) -> Vec<u8> {
    match dtype {
        Dtype::F16 => data
            .iter()
            .flat_map(|&x| f16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::BF16 => data
            .iter()
            .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
            .collect(),
        _ => data.iter().flat_map(|&x| x.to_le_bytes()).collect(),
    }
}

fn serialize(
    tensors: &[(String, Vec<usize>, Vec<f32>)],
    dtype: Dtype,
    dir: &Path,
) -> Result<Vec<u8>, ModelError> {
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(n, s, d)| (n.clone(), s.clone(), encode(d, dtype)))
        .collect();
    let views = bytes
        .iter()
        .map(|(n, s, b)| TensorView::new(dtype, s.clone(), b).map(|v| (n.clone(), v)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| crate::model::invalid(dir, format!("building safetensors: {e}")))?;
    safetensors::serialize(views, None)
        .map_err(|e| crate::model::invalid(dir, format!("writing safetensors: {e}")))
}

/// Layer 0 and the embedding in one shard, the rest in another, plus the index.
fn write_sharded(
    dir: &Path,
    tensors: &[(String, Vec<usize>, Vec<f32>)],
    dtype: Dtype,
) -> Result<(), ModelError> {
    let names = [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ];
    let (first, second): (Vec<_>, Vec<_>) = tensors.iter().cloned().partition(|(n, _, _)| {
        n.starts_with("model.embed_tokens") || n.starts_with("model.layers.0.")
    });
    let mut weight_map = BTreeMap::new();
    for (file, part) in names.iter().zip([first, second]) {
        write(&dir.join(file), &serialize(&part, dtype, dir)?)?;
        for (n, _, _) in &part {
            weight_map.insert(n.clone(), json!(file));
        }
    }
    let index = json!({"metadata": {}, "weight_map": weight_map});
    write(&dir.join("model.safetensors.index.json"), &pretty(&index))
}

/// GPT-2's reversible byte-to-character map used by byte-level BPE.
fn byte_chars() -> Vec<char> {
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut extra = 0;
    (0..256u32)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).expect("latin-1 is valid")
            } else {
                extra += 1;
                char::from_u32(255 + extra).expect("small code points are valid")
            }
        })
        .collect()
}

/// A byte-level BPE tokenizer.json: 256 byte tokens plus `MERGES` merges learned greedily
/// (most frequent pair, ties to the smallest) from `CORPUS`, split into words the way GPT-2's
/// pre-tokenizer does for plain text (a leading space joins the word).
pub fn tokenizer_json() -> Value {
    let chars = byte_chars();
    let mut words: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    let mut current = String::new();
    let class = |c: char| {
        if c.is_alphabetic() {
            0
        } else if c.is_numeric() {
            1
        } else if c == ' ' {
            2
        } else {
            3
        }
    };
    let mut flush = |w: &mut String| {
        if !w.is_empty() {
            let sym = w.bytes().map(|b| chars[b as usize].to_string()).collect();
            *words.entry(sym).or_default() += 1;
            w.clear();
        }
    };
    for c in CORPUS.chars() {
        let joins = current.chars().last().is_some_and(|p| {
            class(p) == class(c) && class(c) != 2
                || (p == ' ' && current.len() == 1 && class(c) != 2)
        });
        if !joins {
            flush(&mut current);
        }
        current.push(c);
    }
    flush(&mut current);

    let mut vocab: Vec<String> = chars.iter().map(|c| c.to_string()).collect();
    let mut merges = Vec::new();
    for _ in 0..MERGES {
        let mut pairs: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (w, n) in &words {
            for p in w.windows(2) {
                *pairs.entry((p[0].clone(), p[1].clone())).or_default() += n;
            }
        }
        // A pair whose join already exists (a+bc vs ab+c) would duplicate a vocabulary entry.
        let fresh = pairs
            .into_iter()
            .filter(|((a, b), _)| !vocab.contains(&format!("{a}{b}")));
        let Some(((a, b), _)) = fresh.max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0))) else {
            break;
        };
        let joined = format!("{a}{b}");
        words = words
            .into_iter()
            .map(|(w, n)| {
                let mut out: Vec<String> = Vec::with_capacity(w.len());
                for s in w {
                    if out.last() == Some(&a) && s == b {
                        out.pop();
                        out.push(joined.clone());
                    } else {
                        out.push(s);
                    }
                }
                (out, n)
            })
            .fold(BTreeMap::new(), |mut m, (w, n)| {
                *m.entry(w).or_default() += n;
                m
            });
        merges.push(format!("{a} {b}"));
        vocab.push(joined);
    }
    let vocab: serde_json::Map<String, Value> = vocab
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, json!(i)))
        .collect();
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": byte_level,
        "post_processor": null,
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": null,
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": false,
            "byte_fallback": false,
            "ignore_merges": false,
            "vocab": vocab,
            "merges": merges,
        }
    })
}
