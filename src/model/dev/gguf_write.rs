//! Writes GGUF v3 files as gguf-py lays them out (metadata in insertion order, tensor data
//! aligned to 32 bytes), and converts a Hugging Face model directory to one the way
//! convert_hf_to_gguf does for the families read here (llama's q/k rows permuted, Llama 3's
//! `rope_freqs.weight`, phi3's fused matrices and rope factor tensors, Gemma's norms plus 1).
//!
//! Used by the tests that require the same bits from both formats (`tests/suite/families.rs`) and by
//! `deltalogic dev family-files`, which writes the random-weight files that llama.cpp scores for
//! the goldens: being deterministic, the test writes the very same bytes again.

use std::path::Path;

use half::f16;

use crate::model::block::config::Config;
use crate::model::block::transformer::Transformer;
use crate::model::family::{Families, Family, FAMILIES};
use crate::model::format::gguf::{Gguf, Value};
use crate::model::format::hf;
use crate::model::scorer::hf_config;
use crate::model::ModelError;

/// A metadata value to write.
#[derive(Clone, Debug, PartialEq)]
pub enum Meta {
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    Strs(Vec<String>),
    I32s(Vec<i32>),
    F32s(Vec<f32>),
    Bools(Vec<bool>),
}

impl Meta {
    /// A reader's scalar value as the writer's (families give their metadata as read).
    fn from_value(v: Value) -> Meta {
        match v {
            Value::U32(x) => Meta::U32(x),
            Value::I32(x) => Meta::I32(x),
            Value::F32(x) => Meta::F32(x),
            Value::Bool(x) => Meta::Bool(x),
            Value::String(x) => Meta::Str(x),
            // Qwen3.5's rope sections and recurrent-layer flags (issue 44).
            Value::Array(items) if items.iter().all(|v| matches!(v, Value::I32(_))) => Meta::I32s(
                items
                    .iter()
                    .filter_map(|v| v.as_i128())
                    .map(|v| v as i32)
                    .collect(),
            ),
            Value::Array(items) if items.iter().all(|v| matches!(v, Value::Bool(_))) => {
                Meta::Bools(items.iter().map(|v| *v == Value::Bool(true)).collect())
            }
            other => unimplemented!("a family's GGUF metadata of type {}", other.type_name()),
        }
    }
}

/// Tensor storage types the writer produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    F32,
    F16,
    Q8_0,
    /// Issue 45: MXFP4 (rows of whole 32-value blocks). A family file stored so is
    /// llama-quantize's `MXFP4_MOE`: MXFP4 experts, the other matrices Q8_0
    /// (`family_files::stored_as`).
    Mxfp4,
}

impl Store {
    pub fn type_id(self) -> u32 {
        match self {
            Store::F32 => 0,
            Store::F16 => 1,
            Store::Q8_0 => 8,
            Store::Mxfp4 => 39,
        }
    }
}

/// A GGUF file being built.
#[derive(Clone, Default)]
pub struct GgufWriter {
    kv: Vec<(String, Meta)>,
    /// Name, shape in PyTorch order, type id, bytes.
    tensors: Vec<(String, Vec<usize>, u32, Vec<u8>)>,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

impl GgufWriter {
    pub fn kv(&mut self, key: impl Into<String>, v: Meta) -> &mut Self {
        let key = key.into();
        self.kv.retain(|(k, _)| *k != key);
        self.kv.push((key, v));
        self
    }

    /// Adds `data` (row-major, `shape` outermost first) stored as `store`. Q8_0 needs rows of
    /// whole 32-value blocks; vectors are always stored as f32, as llama.cpp's converter does.
    pub fn tensor(&mut self, name: impl Into<String>, shape: &[usize], data: &[f32], store: Store) {
        let store = if shape.len() < 2 { Store::F32 } else { store };
        self.tensors.push((
            name.into(),
            shape.to_vec(),
            store.type_id(),
            encode(data, store),
        ));
    }

    /// Adds a tensor of any type id from its raw bytes.
    pub fn raw_tensor(
        &mut self,
        name: impl Into<String>,
        shape: &[usize],
        type_id: u32,
        bytes: Vec<u8>,
    ) {
        self.tensors
            .push((name.into(), shape.to_vec(), type_id, bytes));
    }

    pub fn remove_kv(&mut self, key: &str) -> &mut Self {
        self.kv.retain(|(k, _)| k != key);
        self
    }

    pub fn remove_tensor(&mut self, name: &str) -> &mut Self {
        self.tensors.retain(|t| t.0 != name);
        self
    }

    /// A writer holding `src`'s metadata and tensors (float tensors as f32, others as stored).
    pub fn from_gguf(src: &Gguf) -> Result<GgufWriter, ModelError> {
        let mut w = GgufWriter::default();
        copy_metadata(&mut w, src, |_| true);
        for name in src.tensor_names() {
            let info = src.tensor_info(name).expect("listed");
            match info.type_id {
                0 | 1 => {
                    let (shape, data) = src.tensor_f32(name)?;
                    w.tensor(name, &shape, &data, Store::F32);
                }
                _ => match src.tensor_blocks(name) {
                    Some((shape, _, bytes)) => {
                        w.raw_tensor(name, &shape, info.type_id, bytes.to_vec())
                    }
                    None => {
                        return Err(ModelError::UnsupportedType {
                            path: src.path().to_path_buf(),
                            tensor: name.into(),
                            ty: crate::model::format::quant::type_name(info.type_id),
                        })
                    }
                },
            }
        }
        Ok(w)
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.tensors.iter().any(|t| t.0 == name)
    }

    /// Everything before the tensor data, padded to its 32-byte alignment.
    fn header(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((self.tensors.len() as u64).to_le_bytes());
        out.extend((self.kv.len() as u64).to_le_bytes());
        for (key, v) in &self.kv {
            put_str(&mut out, key);
            let array = |out: &mut Vec<u8>, ty: u32, n: usize| {
                out.extend(9u32.to_le_bytes());
                out.extend(ty.to_le_bytes());
                out.extend((n as u64).to_le_bytes());
            };
            match v {
                Meta::U32(x) => {
                    out.extend(4u32.to_le_bytes());
                    out.extend(x.to_le_bytes());
                }
                Meta::I32(x) => {
                    out.extend(5u32.to_le_bytes());
                    out.extend(x.to_le_bytes());
                }
                Meta::F32(x) => {
                    out.extend(6u32.to_le_bytes());
                    out.extend(x.to_le_bytes());
                }
                Meta::Bool(b) => {
                    out.extend(7u32.to_le_bytes());
                    out.push(*b as u8);
                }
                Meta::Str(s) => {
                    out.extend(8u32.to_le_bytes());
                    put_str(&mut out, s);
                }
                Meta::Strs(items) => {
                    array(&mut out, 8, items.len());
                    items.iter().for_each(|s| put_str(&mut out, s));
                }
                Meta::I32s(items) => {
                    array(&mut out, 5, items.len());
                    items.iter().for_each(|i| out.extend(i.to_le_bytes()));
                }
                Meta::F32s(items) => {
                    array(&mut out, 6, items.len());
                    items.iter().for_each(|i| out.extend(i.to_le_bytes()));
                }
                Meta::Bools(items) => {
                    array(&mut out, 7, items.len());
                    items.iter().for_each(|b| out.push(*b as u8));
                }
            }
        }
        let mut offset = 0u64;
        for (name, shape, ty, data) in &self.tensors {
            put_str(&mut out, name);
            out.extend((shape.len() as u32).to_le_bytes());
            // ggml's ne: innermost first.
            shape
                .iter()
                .rev()
                .for_each(|d| out.extend((*d as u64).to_le_bytes()));
            out.extend(ty.to_le_bytes());
            out.extend(offset.to_le_bytes());
            offset += (data.len() as u64).div_ceil(32) * 32;
        }
        out.resize(out.len().div_ceil(32) * 32, 0);
        out
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut out = self.header();
        for (_, _, _, data) in &self.tensors {
            out.extend(data);
            out.resize(out.len().div_ceil(32) * 32, 0);
        }
        out
    }

    /// Writes the file a tensor at a time (no second copy of a multi-GB file in memory).
    pub fn write(&self, path: &Path) -> Result<(), ModelError> {
        let io = |source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        write_parts(
            &mut f,
            &self.header(),
            self.tensors.iter().map(|t| &t.3[..]),
        )
        .map_err(io)
    }

    /// Writes the file to `out`, letting go of each tensor's bytes once written: a file at
    /// Qwen3-30B-A3B's widths is 2.5 GB, which need not be in memory twice (held here and in
    /// `out`, when that is memory too).
    pub fn write_into(mut self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let header = self.header();
        let mut tensors = std::mem::take(&mut self.tensors);
        // Each tensor's bytes are dropped as the iterator moves past them.
        write_parts(
            out,
            &header,
            tensors.iter_mut().map(|t| std::mem::take(&mut t.3)),
        )
    }
}

/// The header, then each tensor's bytes padded to the 32-byte alignment.
fn write_parts<B: AsRef<[u8]>>(
    out: &mut impl std::io::Write,
    header: &[u8],
    tensors: impl Iterator<Item = B>,
) -> std::io::Result<()> {
    out.write_all(header)?;
    for data in tensors {
        let data = data.as_ref();
        out.write_all(data)?;
        out.write_all(&vec![0u8; data.len().next_multiple_of(32) - data.len()])?;
    }
    out.flush()
}

/// `data` as `store` stores it (Q8_0, MXFP4: rows of whole 32-value blocks).
pub fn encode(data: &[f32], store: Store) -> Vec<u8> {
    // Sized up front: the experts of a layer at Qwen3-30B-A3B's widths are 2.4 GB.
    let mut out = Vec::with_capacity(data.len() * 4);
    match store {
        Store::F32 => data
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Store::F16 => data
            .iter()
            .for_each(|&x| out.extend_from_slice(&f16::from_f32(x).to_le_bytes())),
        Store::Q8_0 => return quantize_q8_0(data),
        Store::Mxfp4 => return quantize_mxfp4(data),
    }
    out
}

/// Issue 45: ggml's reference MXFP4 quantisation (`quantize_row_mxfp4_ref`), per block of 32:
/// the scale byte `e = ⌊log2 amax⌋ − 2 + 127` (0 for a zero block), each value the nearest of
/// the doubled E2M1 values times `2^(e − 128)` (the first on a tie), low nibbles the first 16.
pub fn quantize_mxfp4(data: &[f32]) -> Vec<u8> {
    use crate::model::format::quant::{e8m0_half, MXFP4_VALUES as KVALUES};
    let mut out = Vec::with_capacity(data.len() / 32 * 17);
    for block in data.chunks(32) {
        let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let e = if amax > 0.0 {
            (amax.log2().floor() - 2.0 + 127.0) as u8
        } else {
            0
        };
        let d = e8m0_half(e);
        let best = |x: f32| {
            (1..16).fold(0usize, |b, i| {
                let err = |i: usize| (f32::from(KVALUES[i]) * d - x).abs();
                if err(i) < err(b) {
                    i
                } else {
                    b
                }
            }) as u8
        };
        out.push(e);
        out.extend((0..16).map(|j| best(block[j]) | best(block[j + 16]) << 4));
    }
    out
}

/// ggml's reference Q8_0 quantisation (`quantize_row_q8_0_ref`): per block of 32, `d = amax/127`
/// stored as f16, `q = round(x / d)` (half away from zero).
pub fn quantize_q8_0(data: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 32 * 34);
    for block in data.chunks(32) {
        let amax = block.iter().fold(0f32, |m, x| m.max(x.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend(f16::from_f32(d).to_le_bytes());
        out.extend(block.iter().map(|&x| (x * id).round() as i8 as u8));
    }
    out
}

/// The tokenizer metadata of `src` (a GGUF file), copied key by key.
pub fn copy_tokenizer(w: &mut GgufWriter, src: &Gguf) {
    copy_metadata(w, src, |k| k.starts_with("tokenizer."));
}

/// The metadata of `src` whose keys pass `keep`, copied key by key.
pub fn copy_metadata(w: &mut GgufWriter, src: &Gguf, keep: impl Fn(&str) -> bool) {
    for (k, v) in src.metadata() {
        if !keep(k) {
            continue;
        }
        use crate::model::format::gguf::Value as V;
        let meta = match v {
            V::String(s) => Meta::Str(s.clone()),
            V::I32(i) => Meta::I32(*i),
            V::Bool(b) => Meta::Bool(*b),
            V::F32(f) => Meta::F32(*f),
            V::Array(items) => match items.first() {
                Some(V::String(_)) => Meta::Strs(
                    items
                        .iter()
                        .map(|x| match x {
                            V::String(s) => s.clone(),
                            _ => String::new(),
                        })
                        .collect(),
                ),
                Some(V::Bool(_)) => {
                    Meta::Bools(items.iter().map(|x| matches!(x, V::Bool(true))).collect())
                }
                Some(V::F32(_)) => Meta::F32s(
                    items
                        .iter()
                        .map(|x| if let V::F32(f) = x { *f } else { 0.0 })
                        .collect(),
                ),
                _ => Meta::I32s(
                    items
                        .iter()
                        .map(|x| x.as_i128().unwrap_or(0) as i32)
                        .collect(),
                ),
            },
            other => match other.as_i128() {
                Some(i) => Meta::U32(i as u32),
                None => continue,
            },
        };
        w.kv(k.clone(), meta);
    }
}

/// GGUF tokenizer metadata for a byte-level BPE `tokenizer.json` (vocabulary and merges), as
/// convert_hf_to_gguf's `_set_vocab_gpt2` writes it, with the GPT-2 pre-tokenizer.
pub fn tokenizer_from_json(w: &mut GgufWriter, path: &Path) -> Result<(), ModelError> {
    let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| crate::model::invalid(path, format!("not valid JSON: {e}")))?;
    let bad = || crate::model::invalid(path, "not a byte-level BPE tokenizer.json");
    let vocab = json["model"]["vocab"].as_object().ok_or_else(bad)?;
    let mut tokens = vec![String::new(); vocab.len()];
    for (t, id) in vocab {
        let id = id.as_u64().ok_or_else(bad)? as usize;
        *tokens.get_mut(id).ok_or_else(bad)? = t.clone();
    }
    let merges: Vec<String> = json["model"]["merges"]
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|m| match m {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(p) => p
                .iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        })
        .collect();
    w.kv("tokenizer.ggml.model", Meta::Str("gpt2".into()));
    w.kv("tokenizer.ggml.pre", Meta::Str("gpt-2".into()));
    w.kv(
        "tokenizer.ggml.token_type",
        Meta::I32s(vec![1; tokens.len()]),
    );
    w.kv("tokenizer.ggml.tokens", Meta::Strs(tokens));
    w.kv("tokenizer.ggml.merges", Meta::Strs(merges));
    w.kv("tokenizer.ggml.add_bos_token", Meta::Bool(false));
    Ok(())
}

/// The rope factor tensors llama.cpp's converter writes: phi3's long and short factors, Llama 3's
/// and Gemma 4's frequency factors.
pub fn rope_factor_tensors(w: &mut GgufWriter, cfg: &Config) {
    if let Some(l) = &cfg.rope.longrope {
        let n = l.short_factor.len();
        w.tensor("rope_factors_long.weight", &[n], &l.long_factor, Store::F32);
        w.tensor(
            "rope_factors_short.weight",
            &[n],
            &l.short_factor,
            Store::F32,
        );
    }
    // Linear scaling's factors are a metadata key; any other's (Llama 3's, Gemma 4's
    // proportional rope) are this tensor.
    let linear = cfg
        .rope
        .scaling
        .as_deref()
        .is_some_and(|s| s.starts_with("linear"));
    if let (Some(f), false) = (&cfg.rope.freq_factors, linear) {
        w.tensor("rope_freqs.weight", &[f.len()], f, Store::F32);
    }
}

/// The `{arch}.` hyperparameters of `cfg` as convert_hf_to_gguf writes them.
pub fn config_metadata(w: &mut GgufWriter, cfg: &Config, family: &dyn Family) {
    let a = cfg.arch.clone();
    let k = |s: &str| format!("{a}.{s}");
    w.kv("general.architecture", Meta::Str(a.clone()));
    w.kv(k("context_length"), Meta::U32(cfg.max_positions as u32));
    w.kv(k("embedding_length"), Meta::U32(cfg.hidden as u32));
    w.kv(k("block_count"), Meta::U32(cfg.layers as u32));
    match cfg.layer_intermediate.is_empty() {
        true => w.kv(k("feed_forward_length"), Meta::U32(cfg.intermediate as u32)),
        // Issue 43: one width per layer, as convert_hf_to_gguf writes Gemma 4's.
        false => w.kv(
            k("feed_forward_length"),
            Meta::I32s(cfg.layer_intermediate.iter().map(|&i| i as i32).collect()),
        ),
    };
    w.kv(k("attention.head_count"), Meta::U32(cfg.heads as u32));
    w.kv(k("attention.head_count_kv"), Meta::U32(cfg.kv_heads as u32));
    w.kv(k("attention.key_length"), Meta::U32(cfg.head_dim as u32));
    w.kv(k("attention.value_length"), Meta::U32(cfg.head_dim as u32));
    w.kv(
        k("attention.layer_norm_rms_epsilon"),
        Meta::F32(cfg.norm_eps),
    );
    w.kv(
        k("rope.dimension_count"),
        Meta::U32(cfg.rope.rotary_dim as u32),
    );
    w.kv(k("rope.freq_base"), Meta::F32(cfg.rope.theta));
    if let Some(l) = &cfg.rope.longrope {
        w.kv(k("rope.scaling.attn_factor"), Meta::F32(l.attention_factor));
        w.kv(
            k("rope.scaling.original_context_length"),
            Meta::U32(l.original_max_positions as u32),
        );
    } else if let Some(name) = &cfg.rope.scaling {
        if let Some(f) = name.strip_prefix("linear ") {
            w.kv(k("rope.scaling.type"), Meta::Str("linear".into()));
            w.kv(
                k("rope.scaling.factor"),
                Meta::F32(f.parse().unwrap_or(1.0)),
            );
        }
    }
    if let Some(c) = cfg.attn_softcap {
        w.kv(k("attn_logit_softcapping"), Meta::F32(c));
    }
    if let Some(c) = cfg.final_softcap {
        w.kv(k("final_logit_softcapping"), Meta::F32(c));
    }
    if let Some(win) = cfg.sliding_window {
        w.kv(k("attention.sliding_window"), Meta::U32(win as u32));
        w.kv(
            k("attention.sliding_window_pattern"),
            Meta::Bools(cfg.local_layers.clone()),
        );
    }
    if let Some(r) = &cfg.rope_local {
        w.kv(k("rope.freq_base_swa"), Meta::F32(r.theta));
    }
    // Issue 43: Mistral 3's YaRN and attention temperature, as its converter writes them.
    if let Some(y) = &cfg.rope.yarn {
        w.kv(k("rope.scaling.type"), Meta::Str("yarn".into()));
        w.kv(k("rope.scaling.factor"), Meta::F32(y.factor));
        w.kv(k("rope.scaling.yarn_beta_fast"), Meta::F32(y.beta_fast));
        w.kv(k("rope.scaling.yarn_beta_slow"), Meta::F32(y.beta_slow));
        if y.mscale_all_dim != 0.0 {
            w.kv(
                k("rope.scaling.yarn_log_multiplier"),
                Meta::F32(y.mscale_all_dim),
            );
        }
    }
    let original = cfg
        .rope
        .yarn
        .as_ref()
        .map(|y| y.original_max_positions)
        .or(cfg.attn_temperature.as_ref().map(|t| t.floor));
    if let Some(o) = original {
        w.kv(
            k("rope.scaling.original_context_length"),
            Meta::U32(o as u32),
        );
    }
    if let Some(t) = &cfg.attn_temperature {
        w.kv(k("attention.temperature_scale"), Meta::F32(t.beta));
    }
    for (key, value) in family.gguf_metadata(cfg) {
        w.kv(key, Meta::from_value(value));
    }
}

/// The tensor a naming's `name` is stored in, and whether `name` is one expert of it
/// (`NAME[0]`) rather than a slot of fused rows (`NAME[q]`) or the whole tensor.
pub fn stored_name(name: &str) -> (&str, bool) {
    match name.strip_suffix(']').and_then(|n| n.split_once('[')) {
        Some((n, slot)) => (n, slot.parse::<usize>().is_ok()),
        None => (name, false),
    }
}

/// Tensors as [`stack`] gathers them: stored name, shape, data.
pub type Stacked<T> = Vec<(String, Vec<usize>, Vec<T>)>;

/// Adds the data of the tensor a naming calls `name` to `stacked` (stored name, shape, data):
/// the slots of a fused matrix (`NAME[q]`, `NAME[gate]`) stack their rows, in the order they
/// come; experts (`NAME[0]`, `NAME[1]`, ...) stack as a leading dimension, llama.cpp's 3-D
/// expert tensors (issue 45).
pub fn stack<T>(stacked: &mut Stacked<T>, name: &str, shape: &[usize], data: Vec<T>) {
    let (stored, expert) = stored_name(name);
    match stacked.iter_mut().find(|s| s.0 == stored) {
        Some(s) => {
            s.1[0] += if expert { 1 } else { shape[0] };
            s.2.extend(data);
        }
        None => {
            let shape = match expert {
                true => [&[1], shape].concat(),
                false => shape.to_vec(),
            };
            stacked.push((stored.to_string(), shape, data))
        }
    }
}

/// Converts the Hugging Face directory `dir` to the GGUF file `out` with matrices stored as
/// `store` (norms, biases and rope factors as f32), the tokenizer metadata taken from
/// `tokenizer` (a GGUF file describing the same tokenizer) or else from `dir/tokenizer.json`.
pub fn hf_to_gguf(
    dir: &Path,
    out: &Path,
    store: Store,
    tokenizer: Option<&Gguf>,
) -> Result<Config, ModelError> {
    hf_to_gguf_in(&FAMILIES, dir, out, store, tokenizer)
}

/// [`hf_to_gguf`] with the families of `families`.
pub fn hf_to_gguf_in(
    families: &Families,
    dir: &Path,
    out: &Path,
    store: Store,
    tokenizer: Option<&Gguf>,
) -> Result<Config, ModelError> {
    let (cfg, family) = hf_config(families, dir)?;
    // llama.cpp takes YaRN's mscale as 1 (no GGUF key holds it).
    if cfg.rope.yarn.as_ref().is_some_and(|y| y.mscale != 1.0) {
        return Err(crate::model::invalid(
            dir,
            "yarn mscale other than 1 has no GGUF key: not converted",
        ));
    }
    // llama.cpp always rounds the ramp's ends (gpt-oss's released configs do not).
    if cfg.rope.yarn.as_ref().is_some_and(|y| !y.truncate) {
        return Err(crate::model::invalid(
            dir,
            "yarn truncate false has no GGUF key (llama.cpp always truncates): not converted",
        ));
    }
    let weights = hf::Weights::open(dir)?;
    let mut w = GgufWriter::default();
    config_metadata(&mut w, &cfg, family);
    match tokenizer {
        Some(g) => copy_tokenizer(&mut w, g),
        None => tokenizer_from_json(&mut w, &dir.join("tokenizer.json"))?,
    }
    let gguf_naming = family.gguf_namings()[0];
    let naming = family.hf_naming();
    let file = family.hf_view(&weights, &cfg);
    // Canonical tensors (q/k in GGUF order, Gemma norms plus 1) gathered under their GGUF
    // names; slots of a fused tensor are stacked in `parts` order (q, k, v; gate, up).
    let mut stacked: Vec<(String, Vec<usize>, Vec<f32>)> = Vec::new();
    for (part, shape) in Transformer::parts(&cfg) {
        let t = file
            .tensor(&naming(part))?
            .ok_or_else(|| ModelError::MissingTensor {
                path: dir.to_path_buf(),
                tensor: naming(part),
            })?;
        stack(&mut stacked, &gguf_naming(part), &shape, t.data);
    }
    for (name, shape, data) in &stacked {
        w.tensor(name.clone(), shape, data, store);
    }
    rope_factor_tensors(&mut w, &cfg);
    w.write(out)?;
    Ok(cfg)
}
