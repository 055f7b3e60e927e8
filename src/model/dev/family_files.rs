//! Random-weight GGUF files at the real models' shapes and metadata, depth cut to 2 layers (4 for
//! SmolLM3, whose fourth layer is the first without RoPE): what
//! llama.cpp scores for the family goldens (`scripts/llamacpp_families.py`,
//! `fixtures/golden/families-llamacpp.json`) and what `tests/suite/families_llamacpp.rs` writes again
//! to compare our engine with those goldens. Deterministic: the same bytes on every machine
//! (each golden records the sha256 of the file it was made from, and the test checks it).
//!
//! Each file has the real config's hidden size, intermediate size, heads, KV heads, head dim,
//! rope base and scaling, rotary dims, norms epsilon, context length, soft-caps and sliding
//! window; the layer count is cut to 2 and the tokenizer is the fixtures' 320-token byte-level
//! BPE (`fixtures::tokenizer_json`), since no installable package ships these models' own
//! tokenizers at a size CI can carry (the vocabulary sizes the embedding). Gemma 3's two layers
//! are one local and one global, so that both of its ropes are checked. Ministral 3 has a second
//! file with an original window of 16 positions, so that its attention temperature and YaRN ramp
//! are checked within the contexts' length. Gemma 4's files (E2B, E4B) have 4 layers (see
//! `family::gemma4`).

use std::path::{Path, PathBuf};

use crate::model::block::config::{Config, Shape};
use crate::model::block::transformer::{Part, Ssm, Transformer};
use crate::model::dev::gguf_write::{
    config_metadata, encode, rope_factor_tensors, stack, stored_name, tokenizer_from_json,
    GgufWriter, Meta, Stacked, Store,
};
use crate::model::family::FAMILIES;
use crate::model::ModelError;
use crate::rng::Rng;

/// The seed of every family file.
pub const SEED: u64 = 20_261_126;
pub const LAYERS: usize = 2;
const VOCAB: usize = 320;

/// A family file: its name, the real model whose shapes it has, and its config. Each family
/// lists its own ([`Family::family_files`](crate::model::family::Family::family_files)).
pub struct FamilyFile {
    pub name: &'static str,
    pub real: &'static str,
    pub config: fn() -> Config,
}

/// Every family's files, in [`FAMILIES`] order.
pub fn files() -> Vec<FamilyFile> {
    FAMILIES.0.iter().flat_map(|f| f.family_files()).collect()
}

/// A config of `arch` at the given widths, as every family file starts: `LAYERS` layers, the
/// 320-token vocabulary, tied embeddings.
pub fn base(
    arch: &str,
    hidden: usize,
    intermediate: usize,
    heads: usize,
    kv: usize,
    hd: usize,
) -> Config {
    let shape = Shape {
        vocab_size: VOCAB,
        hidden,
        intermediate,
        layers: LAYERS,
        heads,
        kv_heads: kv,
        head_dim: hd,
        norm_eps: 1e-6,
        rope_theta: 10_000.0,
        max_positions: 32_768,
    };
    Config {
        tied_embeddings: true,
        ..Config::plain(arch, shape)
    }
}

/// The config of the file `name` (one of [`files`]).
pub fn config(name: &str) -> Option<Config> {
    files()
        .into_iter()
        .find(|f| f.name == name)
        .map(|f| (f.config)())
}

/// How the tensor `stored`, of `rank` dimensions, is stored in a file of `store`. The
/// embedding stays f32 in the quantised files, as in the mixes llama.cpp writes for small
/// vocabularies; every matrix of the blocks is Q8_0. Biases too (gpt-oss's experts' are
/// matrices, `[experts, n]`): llama.cpp adds them as f32 only (`ggml_add_id`), as its converter
/// writes them. The convolution's 4 taps per row cannot form Q8_0 blocks; llama-quantize keeps
/// it f32. Vectors are f32, as llama.cpp's converter stores them. An MXFP4 file is
/// llama-quantize's `MXFP4_MOE` mix: the experts' matrices (3-D) MXFP4, the other matrices Q8_0.
fn stored_as(stored: &str, rank: usize, store: Store) -> Store {
    if stored == "token_embd.weight"
        || stored.ends_with(".bias")
        || stored.ends_with("ssm_conv1d.weight")
        || rank < 2
    {
        Store::F32
    } else if store == Store::Mxfp4 && rank < 3 {
        Store::Q8_0
    } else {
        store
    }
}

/// Writes `dir/<name>-<f32|q8_0|mxfp4>.gguf` and returns its path.
pub fn write(dir: &Path, name: &str, store: Store) -> Result<PathBuf, ModelError> {
    let cfg = config(name)
        .ok_or_else(|| crate::model::invalid(dir, format!("no family file {name:?}")))?;
    write_config(dir, name, &cfg, store)
}

/// Writes `dir/<name>-<f32|q8_0>.gguf` for `cfg` (any config of a built-in family, e.g. a
/// tiny one a test needs), with the weights drawn as for the family files, and returns its path.
pub fn write_config(
    dir: &Path,
    name: &str,
    cfg: &Config,
    store: Store,
) -> Result<PathBuf, ModelError> {
    let path = dir.join(file_name(name, store));
    for w in writers(dir, name, cfg, &[store])? {
        w.write(&path)?;
    }
    Ok(path)
}

/// The name `write` gives the file `name` stored as `store`.
pub fn file_name(name: &str, store: Store) -> String {
    let suffix = match store {
        Store::F32 => "f32",
        Store::F16 => "f16",
        Store::Q8_0 => "q8_0",
        Store::Mxfp4 => "mxfp4",
    };
    format!("{name}-{suffix}.gguf")
}

/// The files of `write_config`, one per store, built but not written (`GgufWriter::write_into`
/// streams one, e.g. into memory), the weights drawn once for all of them; `dir` holds a
/// temporary tokenizer file while they are built.
pub fn writers(
    dir: &Path,
    name: &str,
    cfg: &Config,
    stores: &[Store],
) -> Result<Vec<GgufWriter>, ModelError> {
    let cfg = cfg.clone();
    let family = FAMILIES
        .by_arch(&cfg.arch)
        .ok_or_else(|| crate::model::invalid(dir, format!("no family {:?}", cfg.arch)))?;
    let mut w = GgufWriter::default();
    config_metadata(&mut w, &cfg, family);
    // Not the file name: llama.cpp changes token attributes for a general.name containing
    // "phi3", which needs that family's own special tokens.
    let files = files();
    let real = files
        .iter()
        .find(|f| f.name == name)
        .map_or(name, |f| f.real);
    w.kv(
        "general.name",
        Meta::Str(format!("{real} shapes, random weights")),
    );
    let tok = dir.join(format!("{name}-tokenizer.json"));
    crate::model::format::hf::write(
        &tok,
        &crate::model::format::hf::pretty(&crate::model::dev::fixtures::tokenizer_json()),
    )?;
    tokenizer_from_json(&mut w, &tok)?;
    let _ = std::fs::remove_file(&tok);
    let naming = family.gguf_namings()[0];
    let mut rng = Rng::derive(SEED, name);
    let clamped = cfg.moe.as_ref().is_some_and(|m| m.clamped.is_some());
    // Per store, each stored tensor's bytes: a part is encoded as soon as it is drawn, so
    // that no f32 copy of a multi-GB file is held.
    let mut stacked: Vec<Stacked<u8>> = vec![Vec::new(); stores.len()];
    for (part, shape) in Transformer::parts(&cfg) {
        let n: usize = shape.iter().product();
        let fan_in = *shape.last().unwrap_or(&1);
        let scale = (3.0 / fan_in as f64).sqrt();
        let vector = shape.len() == 1;
        let gemma_norm = cfg.post_norms
            && vector
            && !matches!(part, Part::QBias(_) | Part::KBias(_) | Part::VBias(_));
        let data: Vec<f32> = (0..n)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                (match part {
                    Part::Embed | Part::LmHead => 0.3 * u,
                    // gpt-oss: gate and up five times as wide, so that a share of them passes
                    // the clamp at 7 on both sides.
                    Part::ExpertGate(..) | Part::ExpertUp(..) if clamped => 5.0 * u * scale,
                    // A decay below 1 (`A = −exp(A_log)` is negative), and small time-step
                    // biases, as the released weights have. `A` is −exp of an f32 `A_log` (as
                    // a checkpoint's is), so that `model export-hf` can store it.
                    Part::Ssm(_, Ssm::A) => -(((0.6 * u) as f32) as f64).exp(),
                    Part::Ssm(_, Ssm::Dt) => 0.5 * u,
                    _ if gemma_norm => 1.0 + 0.2 * u,
                    _ if vector => 1.0 + 0.2 * u,
                    _ => u * scale,
                }) as f32
            })
            .collect();
        let name = naming(part);
        let (stored, expert) = stored_name(&name);
        for (&store, stacked) in stores.iter().zip(&mut stacked) {
            let s = stored_as(stored, shape.len() + usize::from(expert), store);
            stack(stacked, &name, &shape, encode(&data, s));
        }
    }
    let mut out = Vec::with_capacity(stores.len());
    for (&store, stacked) in stores.iter().zip(stacked) {
        let mut w = w.clone();
        for (name, shape, bytes) in stacked {
            let id = stored_as(&name, shape.len(), store).type_id();
            w.raw_tensor(name, &shape, id, bytes);
        }
        rope_factor_tensors(&mut w, &cfg);
        out.push(w);
    }
    Ok(out)
}
