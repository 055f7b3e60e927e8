//! Hugging Face model directories: `config.json`, `tokenizer.json` and the weights in
//! `model.safetensors` or shards listed by `model.safetensors.index.json`; f32, f16 or bf16,
//! widened to f32 as each tensor is read.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use half::{bf16, f16};
use memmap2::Mmap;
use safetensors::tensor::{Dtype, Metadata};
use safetensors::SafeTensors;

use crate::model::block::transformer::{RawTensor, TensorDesc, TensorFile};
use crate::model::{invalid, ModelError};

const SINGLE: &str = "model.safetensors";
const INDEX: &str = "model.safetensors.index.json";

/// One memory-mapped safetensors file with its parsed header.
struct Shard {
    path: PathBuf,
    map: Mmap,
    header_len: usize,
    meta: Metadata,
}

impl Shard {
    fn open(path: PathBuf) -> Result<Shard, ModelError> {
        let file = File::open(&path).map_err(|source| ModelError::Io {
            path: path.clone(),
            source,
        })?;
        // SAFETY: the map is read-only and private to this process; a file changed underneath us
        // gives wrong numbers, not unsoundness in safe code that only reads bytes.
        let map = unsafe { Mmap::map(&file) }.map_err(|source| ModelError::Io {
            path: path.clone(),
            source,
        })?;
        let (header_len, meta) = SafeTensors::read_metadata(&map)
            .map_err(|e| invalid(&path, format!("not a valid safetensors file: {e}")))?;
        Ok(Shard {
            path,
            map,
            header_len,
            meta,
        })
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        let Some(info) = self.meta.info(name) else {
            return Ok(None);
        };
        if !matches!(info.dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16) {
            return Err(ModelError::UnsupportedType {
                path: self.path.clone(),
                tensor: name.to_string(),
                ty: format!("{:?}", info.dtype),
            });
        }
        Ok(Some(TensorDesc {
            shape: info.shape.clone(),
            ty: format!("{:?}", info.dtype),
        }))
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let Some(info) = self.meta.info(name) else {
            return Ok(None);
        };
        let (start, end) = info.data_offsets;
        // `read_metadata` checked that the offsets tile the data section exactly.
        let bytes = &self.map[8 + self.header_len + start..8 + self.header_len + end];
        let data: Vec<f32> = match info.dtype {
            Dtype::F32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => bytes
                .chunks_exact(2)
                .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::BF16 => bytes
                .chunks_exact(2)
                .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                return Err(ModelError::UnsupportedType {
                    path: self.path.clone(),
                    tensor: name.to_string(),
                    ty: format!("{other:?}"),
                })
            }
        };
        Ok(Some(RawTensor {
            shape: info.shape.clone(),
            data,
        }))
    }
}

/// The weights of a model directory, single-file or sharded.
pub struct Weights {
    /// What errors name: the single file or the index.
    path: PathBuf,
    shards: Vec<Shard>,
    /// Tensor name to shard, for sharded checkpoints.
    index: Option<BTreeMap<String, usize>>,
}

impl Weights {
    pub fn open(dir: &Path) -> Result<Weights, ModelError> {
        let single = dir.join(SINGLE);
        let index_path = dir.join(INDEX);
        if single.exists() {
            return Ok(Weights {
                shards: vec![Shard::open(single.clone())?],
                path: single,
                index: None,
            });
        }
        if !index_path.exists() {
            return Err(invalid(
                dir,
                format!("neither {SINGLE} nor {INDEX} is present"),
            ));
        }
        let text = std::fs::read_to_string(&index_path).map_err(|source| ModelError::Io {
            path: index_path.clone(),
            source,
        })?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| invalid(&index_path, format!("not valid JSON: {e}")))?;
        let map = json
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| invalid(&index_path, "no \"weight_map\" object"))?;
        let mut files: Vec<String> = Vec::new();
        let mut index = BTreeMap::new();
        for (name, file) in map {
            let file = file
                .as_str()
                .filter(|f| !f.contains('/') && !f.contains('\\') && !f.starts_with('.'))
                .ok_or_else(|| {
                    invalid(
                        &index_path,
                        format!("bad shard file name for {name}: {file}"),
                    )
                })?;
            let i = match files.iter().position(|f| f == file) {
                Some(i) => i,
                None => {
                    files.push(file.to_string());
                    files.len() - 1
                }
            };
            index.insert(name.clone(), i);
        }
        let shards = files
            .iter()
            .map(|f| Shard::open(dir.join(f)))
            .collect::<Result<_, _>>()?;
        Ok(Weights {
            path: index_path,
            shards,
            index: Some(index),
        })
    }
}

impl TensorFile for Weights {
    fn path(&self) -> &Path {
        &self.path
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        match &self.index {
            None => self.shards[0].describe(name),
            Some(index) => match index.get(name) {
                None => Ok(None),
                Some(&i) => {
                    let shard = &self.shards[i];
                    let d = shard.describe(name)?;
                    if d.is_none() {
                        return Err(invalid(
                            &shard.path,
                            format!("{INDEX} lists tensor {name} here but the file lacks it"),
                        ));
                    }
                    Ok(d)
                }
            },
        }
    }

    /// Every tensor, less the rotary buffers (`rotary_emb.inv_freq`) older checkpoints saved,
    /// which hold nothing the config does not say.
    fn names(&self) -> Vec<String> {
        let all: Vec<String> = match &self.index {
            Some(index) => index.keys().cloned().collect(),
            None => self.shards[0].meta.tensors().into_keys().collect(),
        };
        all.into_iter()
            .filter(|n| !n.ends_with("rotary_emb.inv_freq"))
            .collect()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        match &self.index {
            None => self.shards[0].tensor(name),
            Some(index) => match index.get(name) {
                None => Ok(None),
                Some(&i) => {
                    let shard = &self.shards[i];
                    let t = shard.tensor(name)?;
                    if t.is_none() {
                        return Err(invalid(
                            &shard.path,
                            format!("{INDEX} lists tensor {name} here but the file lacks it"),
                        ));
                    }
                    Ok(t)
                }
            },
        }
    }
}

/// Writes a file of a model directory (the fixtures, `hf_export`).
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), ModelError> {
    std::fs::write(path, bytes).map_err(|source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A JSON file's bytes as Hugging Face writes them: indented, one final newline.
pub(crate) fn pretty(v: &serde_json::Value) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(v).expect("JSON values serialise");
    s.push('\n');
    s.into_bytes()
}
