//! Writes a GGUF model of any family as a Hugging Face directory: `model.safetensors` (f32,
//! the family's Hugging Face tensor names and layout), `config.json`, and `tokenizer.json` with
//! `tokenizer_config.json` built from the GGUF tokenizer metadata by `Tokenizer::from_gguf`.
//!
//! No real Hugging Face checkpoint can be downloaded here, so this is how the HF loader meets
//! real weights: each tensor is read as the GGUF path reads it (dequantised by
//! `Gguf::tensor_f32`, through the family's view), then stored as the family's checkpoints store
//! it (`Family::to_hf`: llama's q/k rows back in Hugging Face's order, Gemma's norms as offsets
//! from 1, phi3's fused matrices stacked), so scoring the directory gives the same bits as
//! scoring the file (`tests/suite/hf_export.rs`). A tensor or a config value a checkpoint cannot
//! hold with the same bits is refused by name. A user runs `deltalogic model export-hf` for the
//! same check.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::model::block::config::Config;
use crate::model::block::transformer::{Part, TensorFile, Transformer};
use crate::model::family::{self, Families, Family, StoredLayout, FAMILIES};
use crate::model::format::gguf::Gguf;
use crate::model::format::hf::{pretty, write};
use crate::model::tokenize::Tokenizer;
use crate::model::{invalid, ModelError};

const WEIGHTS: &str = "model.safetensors";

/// What an export wrote.
#[derive(Debug, serde::Serialize)]
pub struct Exported {
    pub dir: PathBuf,
    pub architecture: String,
    pub tensors: usize,
    /// Bytes of `model.safetensors`.
    pub weight_bytes: u64,
    pub files: Vec<String>,
}

/// Writes the Hugging Face directory `out` (created if missing, refused if not empty) from the
/// GGUF file `gguf`, a model of a built-in family.
pub fn export(gguf: &Path, out: &Path) -> Result<Exported, ModelError> {
    export_in(&FAMILIES, gguf, out)
}

/// [`export`] for a model of one of `families`. The config and tokenizer written are read back
/// with the loaders the scorer uses and must describe the same model as the file, or the export
/// fails and removes what it wrote.
pub fn export_in(families: &Families, gguf: &Path, out: &Path) -> Result<Exported, ModelError> {
    if gguf.is_dir() {
        return Err(invalid(
            gguf,
            "is a directory: export-hf reads a GGUF file (a Hugging Face directory needs no export)",
        ));
    }
    let g = Gguf::open(gguf)?;
    let fam = families.of_gguf(&g)?;
    let cfg = fam.config_from_gguf(&g)?;
    cfg.validate(gguf)?;
    if cfg.rope.rotary_dim != cfg.head_dim && fam.hf_config_lacks("partial_rotary_factor", &cfg) {
        return Err(invalid(
            gguf,
            format!(
                "RoPE rotates {} of {} dimensions per head, which a {} config.json cannot say",
                cfg.rope.rotary_dim,
                cfg.head_dim,
                fam.hf_classes()[0]
            ),
        ));
    }
    let tokenizer = Tokenizer::from_gguf(&g)?;
    let view = fam.gguf_view(&g, &cfg);
    let naming = family::gguf_naming(fam, &g);
    Transformer::check(&cfg, view.as_ref(), naming, fam.gguf_extra_tensors())?;
    empty_dir(out)?;
    let written = (|| {
        let config_path = out.join("config.json");
        write(&config_path, &pretty(&config_json(&cfg, fam, &tokenizer)))?;
        let weights = out.join(WEIGHTS);
        let tensors = write_weights(&weights, &cfg, fam, view.as_ref(), naming)?;
        let tokenizer_path = out.join("tokenizer.json");
        let text = tokenizer
            .inner()
            .to_string(true)
            .map_err(|e| invalid(&tokenizer_path, format!("serialising the tokenizer: {e}")))?;
        write(&tokenizer_path, text.as_bytes())?;
        write(
            &out.join("tokenizer_config.json"),
            &pretty(&tokenizer_config(&g, &tokenizer)?),
        )?;
        check_config(&config_path, fam, &cfg)?;
        check_tokenizer(&tokenizer_path, &tokenizer)?;
        let weight_bytes = std::fs::metadata(&weights)
            .map_err(|source| ModelError::Io {
                path: weights.clone(),
                source,
            })?
            .len();
        Ok(Exported {
            dir: out.to_path_buf(),
            architecture: fam.gguf_arch().to_string(),
            tensors,
            weight_bytes,
            files: [
                "config.json",
                WEIGHTS,
                "tokenizer.json",
                "tokenizer_config.json",
            ]
            .map(String::from)
            .to_vec(),
        })
    })();
    if written.is_err() {
        // Nothing half-written is left to be loaded as a model.
        for f in [
            "config.json",
            WEIGHTS,
            "tokenizer.json",
            "tokenizer_config.json",
        ] {
            let _ = std::fs::remove_file(out.join(f));
        }
    }
    written
}

trait Lacks {
    fn hf_config_lacks(&self, key: &str, cfg: &Config) -> bool;
}

impl Lacks for &'static dyn Family {
    /// Whether the family's config.json has no `key` for `cfg`.
    fn hf_config_lacks(&self, key: &str, cfg: &Config) -> bool {
        let mut m = Map::new();
        self.hf_config(cfg, &mut m);
        !m.contains_key(key)
    }
}

/// The tensors a Hugging Face checkpoint of the family holds, in the block's order: each
/// stored name with its shape and the groups of parts written one after the other (one part
/// each, the slots of a fused matrix stacked), with how a group's data is arranged.
fn stored_tensors(cfg: &Config, fam: &dyn Family) -> Vec<(String, StoredLayout)> {
    let naming = fam.hf_naming();
    // Each stored name with the parts it holds and their shapes.
    type Held = Vec<(Part, Vec<usize>)>;
    let mut parts: Vec<(String, Held)> = Vec::new();
    for (part, shape) in Transformer::parts(cfg) {
        let name = naming(part);
        let stored = name.split_once('[').map_or(name.as_str(), |(n, _)| n);
        match parts.iter_mut().find(|t| t.0 == stored) {
            Some(t) => t.1.push((part, shape)),
            None => parts.push((stored.to_string(), vec![(part, shape)])),
        }
    }
    let stacked = |held: &[(Part, Vec<usize>)]| {
        let mut shape = fam.hf_shape(held[0].0, held[0].1.clone());
        shape[0] += held[1..].iter().map(|(_, s)| s[0]).sum::<usize>();
        StoredLayout {
            shape,
            groups: held.iter().map(|(p, _)| vec![*p]).collect(),
            arrange: |t| t[0].data.clone(),
        }
    };
    parts
        .into_iter()
        .map(|(name, held)| {
            let layout = fam.hf_layout(&held).unwrap_or_else(|| stacked(&held));
            (name, layout)
        })
        .collect()
}

/// Writes `model.safetensors` one tensor at a time (a whole model never sits in memory as f32):
/// each part read through the GGUF view, stored as the family stores it. Returns the count.
fn write_weights(
    path: &Path,
    cfg: &Config,
    fam: &dyn Family,
    view: &dyn TensorFile,
    naming: crate::model::block::transformer::Naming,
) -> Result<usize, ModelError> {
    let tensors = stored_tensors(cfg, fam);
    let mut header = Map::new();
    let mut offset = 0usize;
    for (name, layout) in &tensors {
        let bytes = 4 * layout.shape.iter().product::<usize>();
        header.insert(
            name.clone(),
            json!({"dtype": "F32", "shape": layout.shape, "data_offsets": [offset, offset + bytes]}),
        );
        offset += bytes;
    }
    let mut head = serde_json::to_vec(&Value::Object(header)).expect("JSON values serialise");
    // The data starts on an 8-byte boundary, as safetensors writes it.
    head.resize(head.len().next_multiple_of(8), b' ');
    let io = |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut w = BufWriter::new(File::create(path).map_err(io)?);
    w.write_all(&(head.len() as u64).to_le_bytes())
        .map_err(io)?;
    w.write_all(&head).map_err(io)?;
    for (name, layout) in &tensors {
        for group in &layout.groups {
            let mut held = Vec::with_capacity(group.len());
            for &part in group {
                let gguf_name = naming(part);
                let t = view
                    .tensor(&gguf_name)?
                    .ok_or_else(|| ModelError::MissingTensor {
                        path: view.path().to_path_buf(),
                        tensor: gguf_name.clone(),
                    })?;
                held.push(fam.to_hf(part, cfg, t).map_err(|why| {
                    invalid(
                        view.path(),
                        format!("tensor {gguf_name} cannot be written as {name}: {why}"),
                    )
                })?);
            }
            let data = (layout.arrange)(&held);
            let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
            w.write_all(&bytes).map_err(io)?;
        }
    }
    w.flush().map_err(io)?;
    Ok(tensors.len())
}

/// config.json: the fields every family's reader shares (`HfJson::base_config`), then the
/// family's own (`Family::hf_config`). Floats are written as the f64 of their f32 so they read
/// back to the same bits.
fn config_json(cfg: &Config, fam: &dyn Family, tokenizer: &Tokenizer) -> Value {
    let mut c = json!({
        "architectures": [fam.hf_classes()[0]],
        "model_type": fam.hf_model_types()[0],
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden,
        "intermediate_size": cfg.intermediate,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "num_key_value_heads": cfg.kv_heads,
        "head_dim": cfg.head_dim,
        "rms_norm_eps": f64::from(cfg.norm_eps),
        "rope_theta": f64::from(cfg.rope.theta),
        "rope_scaling": null,
        "max_position_embeddings": cfg.max_positions,
        "attention_bias": cfg.qkv_bias,
        "tie_word_embeddings": cfg.tied_embeddings,
        "bos_token_id": tokenizer.bos_id(),
        "eos_token_id": tokenizer.eos_id(),
        "torch_dtype": "float32",
    });
    if let Value::Object(m) = &mut c {
        fam.hf_config(cfg, m);
    }
    c
}

/// tokenizer_config.json: the special tokens `Tokenizer::from_hf_file` reads and the chat
/// template the runner renders prompts with.
fn tokenizer_config(g: &Gguf, tokenizer: &Tokenizer) -> Result<Value, ModelError> {
    let text = |id: Option<u32>| id.and_then(|i| tokenizer.id_to_token(i));
    let mut c = json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": text(tokenizer.bos_id()),
        "eos_token": text(tokenizer.eos_id()),
    });
    if g.get("tokenizer.chat_template").is_some() {
        c["chat_template"] = json!(g.get_str("tokenizer.chat_template")?);
    }
    Ok(c)
}

/// config.json must read back as the model the GGUF file describes (the names of its rope
/// scalings aside, which say where factors came from, not what they are).
fn check_config(path: &Path, fam: &dyn Family, cfg: &Config) -> Result<(), ModelError> {
    let json = crate::model::family::read::HfJson::read(path)?;
    let back = fam.config_from_hf(&json)?;
    let unnamed = |c: &Config| {
        let mut c = c.clone();
        c.rope.scaling = None;
        if let Some(r) = &mut c.rope_local {
            r.scaling = None;
        }
        c
    };
    let (back, want) = (unnamed(&back), unnamed(cfg));
    if back != want {
        // What differs, field by field, in Debug's one-field-a-line layout.
        let (b, w) = (format!("{back:#?}"), format!("{want:#?}"));
        let differs: Vec<String> = b
            .lines()
            .zip(w.lines())
            .filter(|(x, y)| x != y)
            .take(3)
            .map(|(x, y)| format!("{} where the GGUF file has {}", x.trim(), y.trim()))
            .collect();
        return Err(invalid(
            path,
            format!(
                "a {} config.json cannot say this model: it reads back with {}",
                fam.hf_classes()[0],
                differs.join("; ")
            ),
        ));
    }
    Ok(())
}

/// tokenizer.json must hold every id: a token string that repeats in the GGUF vocabulary has
/// one entry in a JSON vocabulary, so the ids it shadows would be lost.
fn check_tokenizer(path: &Path, gguf: &Tokenizer) -> Result<(), ModelError> {
    let back = Tokenizer::from_hf_file(path)?;
    if (back.vocab_size(), back.bos_id(), back.eos_id())
        != (gguf.vocab_size(), gguf.bos_id(), gguf.eos_id())
    {
        return Err(ModelError::Tokenizer {
            path: path.to_path_buf(),
            detail: format!(
                "reads back with {} tokens, BOS {:?}, EOS {:?}; the GGUF file has {}, {:?}, {:?}",
                back.vocab_size(),
                back.bos_id(),
                back.eos_id(),
                gguf.vocab_size(),
                gguf.bos_id(),
                gguf.eos_id()
            ),
        });
    }
    Ok(())
}

fn empty_dir(dir: &Path) -> Result<(), ModelError> {
    let io = |source| ModelError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    if std::fs::read_dir(dir).map_err(io)?.next().is_some() {
        return Err(invalid(
            dir,
            "is not empty: export-hf writes into a new or empty directory",
        ));
    }
    Ok(())
}
