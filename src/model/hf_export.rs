//! Writes a GGUF model as a Hugging Face directory: `model.safetensors` (f32, Hugging Face
//! tensor names and row order), `config.json`, and `tokenizer.json` with `tokenizer_config.json`
//! built from the GGUF tokenizer metadata by `Tokenizer::from_gguf`.
//!
//! No real Hugging Face checkpoint can be downloaded here, so this is how the HF loader meets
//! real weights: each tensor is dequantised exactly as the GGUF path dequantises it
//! (`Gguf::tensor_f32`), so scoring the directory gives the same bits as scoring the file
//! (`tests/suite/hf_export.rs`). A user runs `deltalogic model export-hf` for the same check.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, View};
use serde_json::{json, Value};

use super::config::{invalid, Config, HfJson};
use super::gguf::Gguf;
use super::hf::{pretty, write};
use super::llama::{self, RowOrder};
use super::tokenizer::Tokenizer;
use super::transformer::{Part, RawTensor};
use super::{qwen2, ModelError};

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
/// GGUF file `gguf`. The config and tokenizer written are read back with the loaders the
/// scorer uses and must describe the same model as the file, or the export fails.
pub fn export(gguf: &Path, out: &Path) -> Result<Exported, ModelError> {
    let g = Gguf::open(gguf)?;
    let arch = g.architecture()?.to_string();
    let (cfg, class) = match arch.as_str() {
        "llama" => (llama::config_from_gguf(&g)?, "LlamaForCausalLM"),
        "qwen2" => (qwen2::config_from_gguf(&g)?, "Qwen2ForCausalLM"),
        _ => {
            return Err(ModelError::UnknownArchitecture {
                path: gguf.to_path_buf(),
                arch,
                supported: "llama, qwen2 (for export-hf)",
            })
        }
    };
    cfg.validate(gguf)?;
    if cfg.rope.rotary_dim != cfg.head_dim {
        return Err(invalid(
            gguf,
            format!(
                "RoPE rotates {} of {} dimensions per head, which a {class} config.json cannot say",
                cfg.rope.rotary_dim, cfg.head_dim
            ),
        ));
    }
    let tokenizer = Tokenizer::from_gguf(&g)?;
    let tensors = tensors(&g, &cfg)?;
    empty_dir(out)?;

    let config_path = out.join("config.json");
    write(&config_path, &pretty(&config_json(&cfg, class, &tokenizer)))?;
    let weights = out.join(WEIGHTS);
    let count = tensors.len();
    safetensors::serialize_to_file(tensors, None, &weights)
        .map_err(|e| invalid(&weights, format!("writing safetensors: {e}")))?;
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

    check_config(&config_path, &arch, &cfg)?;
    check_tokenizer(&tokenizer_path, &tokenizer)?;
    let weight_bytes = std::fs::metadata(&weights)
        .map_err(|source| ModelError::Io {
            path: weights.clone(),
            source,
        })?
        .len();
    Ok(Exported {
        dir: out.to_path_buf(),
        architecture: arch,
        tensors: count,
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
}

/// The weights the transformer reads for `cfg`, in the order it reads them.
fn parts(cfg: &Config) -> Vec<Part> {
    let mut parts = vec![Part::Embed];
    for l in 0..cfg.layers {
        parts.extend([Part::AttnNorm(l), Part::Q(l), Part::K(l), Part::V(l)]);
        if cfg.qkv_bias {
            parts.extend([Part::QBias(l), Part::KBias(l), Part::VBias(l)]);
        }
        parts.extend([
            Part::O(l),
            Part::MlpNorm(l),
            Part::Gate(l),
            Part::Up(l),
            Part::Down(l),
        ]);
    }
    parts.push(Part::FinalNorm);
    if !cfg.tied_embeddings {
        parts.push(Part::LmHead);
    }
    parts
}

/// One GGUF tensor, dequantised only when the writer asks for its bytes, so a whole model
/// never sits in memory as f32.
struct Dequantised<'a> {
    gguf: &'a Gguf,
    name: String,
    shape: Vec<usize>,
    /// Heads of a llama q/k projection whose rows go back to Hugging Face's order.
    reorder: Option<usize>,
}

impl View for Dequantised<'_> {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        // `tensors` checked that the tensor exists in a supported type (all `tensor_f32`
        // needs) and that a reordered one splits into heads of even size.
        let (shape, data) = self
            .gguf
            .tensor_f32(&self.name)
            .expect("tensor checked by `tensors`");
        let data = match self.reorder {
            None => data,
            Some(heads) => llama::permute_heads(&RawTensor { shape, data }, heads, RowOrder::ToHf)
                .expect("head split checked by `tensors`"),
        };
        Cow::Owned(data.iter().flat_map(|x| x.to_le_bytes()).collect())
    }

    fn data_len(&self) -> usize {
        self.shape.iter().product::<usize>() * 4
    }
}

/// Every tensor to write under its Hugging Face name, checked so that writing cannot fail on
/// the file's content.
fn tensors<'a>(g: &'a Gguf, cfg: &Config) -> Result<Vec<(String, Dequantised<'a>)>, ModelError> {
    let llama = cfg.arch == "llama";
    parts(cfg)
        .into_iter()
        .map(|part| {
            let name = llama::gguf_name(part);
            let Some((shape, _, _)) = g.tensor_blocks(&name) else {
                return Err(match g.tensor_info(&name) {
                    None => ModelError::MissingTensor {
                        path: g.path().to_path_buf(),
                        tensor: name,
                    },
                    Some(info) => ModelError::UnsupportedType {
                        path: g.path().to_path_buf(),
                        tensor: name,
                        ty: super::quant::type_name(info.type_id),
                    },
                });
            };
            let heads = match part {
                Part::Q(_) | Part::QBias(_) if llama => Some(cfg.heads),
                Part::K(_) | Part::KBias(_) if llama => Some(cfg.kv_heads),
                _ => None,
            };
            if let Some(h) = heads {
                // `validate` made head_dim even (it equals the even rotary dim).
                let rows = h * cfg.head_dim;
                if shape.first() != Some(&rows) {
                    return Err(ModelError::Shape {
                        path: g.path().to_path_buf(),
                        tensor: name,
                        expected: [rows]
                            .into_iter()
                            .chain(shape.iter().skip(1).copied())
                            .collect(),
                        found: shape,
                    });
                }
            }
            let view = Dequantised {
                gguf: g,
                name,
                shape,
                reorder: heads,
            };
            Ok((llama::hf_name(part), view))
        })
        .collect()
}

/// config.json in the fields the Hugging Face loaders (`HfJson::base_config` and the
/// architecture files) read. Floats are written as the f64 of their f32 so they read back to
/// the same bits.
fn config_json(cfg: &Config, class: &str, tokenizer: &Tokenizer) -> Value {
    json!({
        "architectures": [class],
        "model_type": cfg.arch,
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
    })
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

/// config.json must read back as the model the GGUF file describes.
fn check_config(path: &Path, arch: &str, cfg: &Config) -> Result<(), ModelError> {
    let json = HfJson::read(path)?;
    let back = match arch {
        "llama" => llama::config_from_hf(&json)?,
        _ => qwen2::config_from_hf(&json)?,
    };
    if &back != cfg {
        return Err(invalid(
            path,
            format!("reads back as {back:?}, but the GGUF file describes {cfg:?}"),
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
