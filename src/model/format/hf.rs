//! Hugging Face model directories: `config.json`, `tokenizer.json` and the weights in
//! `model.safetensors` or shards listed by `model.safetensors.index.json`; f32, f16 or bf16,
//! widened to f32 as each tensor is read, or (a mixture's experts) left in the mapped file.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use safetensors::tensor::{Dtype, Metadata};
use safetensors::SafeTensors;

use crate::model::block::transformer::{Blocks, RawTensor, TensorDesc, TensorFile};
use crate::model::format::gguf::BlockBytes;
use crate::model::format::quant::{dequantize, GgmlType};
use crate::model::{invalid, ModelError};

const SINGLE: &str = "model.safetensors";
const INDEX: &str = "model.safetensors.index.json";

/// One memory-mapped safetensors file with its parsed header.
struct Shard {
    path: PathBuf,
    /// Shared with the expert matrices read where they lie (`BlockBytes`, issue 45).
    map: Arc<Mmap>,
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
            map: Arc::new(map),
            header_len,
            meta,
        })
    }

    /// The stored type of `name` as the engine names it, or an error naming an unsupported one.
    fn float_type(&self, name: &str, dtype: Dtype) -> Result<GgmlType, ModelError> {
        match dtype {
            Dtype::F32 => Ok(GgmlType::F32),
            Dtype::F16 => Ok(GgmlType::F16),
            Dtype::BF16 => Ok(GgmlType::Bf16),
            other => Err(ModelError::UnsupportedType {
                path: self.path.clone(),
                tensor: name.to_string(),
                ty: format!("{other:?}"),
            }),
        }
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        let Some(info) = self.meta.info(name) else {
            return Ok(None);
        };
        self.float_type(name, info.dtype)?;
        Ok(Some(TensorDesc {
            shape: info.shape.clone(),
            ty: format!("{:?}", info.dtype),
        }))
    }

    /// `name`'s float bytes where they lie in the map.
    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        let Some(info) = self.meta.info(name) else {
            return Ok(None);
        };
        let ty = self.float_type(name, info.dtype)?;
        // `read_metadata` checked that the offsets tile the data section exactly.
        Ok(self
            .stored(name)
            .map(|(shape, _, bytes)| (shape, ty, bytes)))
    }

    /// `name`'s bytes where they lie, of any type.
    fn stored(&self, name: &str) -> Option<(Vec<usize>, String, BlockBytes)> {
        let info = self.meta.info(name)?;
        let (start, end) = info.data_offsets;
        let data = 8 + self.header_len;
        let bytes = BlockBytes::Mapped {
            map: Arc::clone(&self.map),
            range: data + start..data + end,
        };
        Some((info.shape.clone(), format!("{:?}", info.dtype), bytes))
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let Some((shape, ty, bytes)) = self.blocks(name)? else {
            return Ok(None);
        };
        let mut data = vec![0f32; shape.iter().product()];
        dequantize(ty, &bytes, &mut data);
        Ok(Some(RawTensor { shape, data }))
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

impl Weights {
    /// `get` on the shard holding `name`, `Ok(None)` when the checkpoint has no such tensor; a
    /// shard the index names for it must hold it.
    fn lookup<T>(
        &self,
        name: &str,
        get: impl Fn(&Shard) -> Result<Option<T>, ModelError>,
    ) -> Result<Option<T>, ModelError> {
        let shard = match &self.index {
            None => &self.shards[0],
            Some(index) => match index.get(name) {
                None => return Ok(None),
                Some(&i) => &self.shards[i],
            },
        };
        let found = get(shard)?;
        if found.is_none() && self.index.is_some() {
            return Err(invalid(
                &shard.path,
                format!("{INDEX} lists tensor {name} here but the file lacks it"),
            ));
        }
        Ok(found)
    }
}

impl TensorFile for Weights {
    fn path(&self) -> &Path {
        &self.path
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        self.lookup(name, |s| s.describe(name))
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
        self.lookup(name, |s| s.tensor(name))
    }

    /// Issue 45: a tensor left in the mapped file (f32, f16 or bf16 rows), so that a mixture
    /// of experts' matrices are read where they lie, as from GGUF, instead of copied.
    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        self.lookup(name, |s| s.blocks(name))
    }

    /// Issue 45: any tensor's bytes where they lie, `U8` too (MXFP4 blocks and scales).
    fn stored(&self, name: &str) -> Result<Option<(Vec<usize>, String, BlockBytes)>, ModelError> {
        self.lookup(name, |s| Ok(s.stored(name)))
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

#[cfg(test)]
mod tests {
    use safetensors::tensor::TensorView;

    use super::*;

    /// Issue 45: every float tensor is served as its stored bytes where they lie in the map
    /// (so that a mixture's experts are not copied), and read as those bytes widened to f32.
    #[test]
    fn tensors_are_served_in_place_and_widened_alike() {
        let dir = tempfile::tempdir().unwrap();
        let raw: Vec<(&str, Dtype, Vec<u8>)> = vec![
            (
                "a",
                Dtype::F32,
                [1.5f32, -2.0]
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect(),
            ),
            ("b", Dtype::F16, vec![0x00, 0x3c, 0x00, 0xc0]),
            ("c", Dtype::BF16, vec![0x80, 0x3f, 0x40, 0x40]),
        ];
        let views: Vec<(String, TensorView)> = raw
            .iter()
            .map(|(n, t, b)| (n.to_string(), TensorView::new(*t, vec![2], b).unwrap()))
            .collect();
        let bytes = safetensors::serialize(views, None).unwrap();
        write(&dir.path().join(SINGLE), &bytes).unwrap();
        let w = Weights::open(dir.path()).unwrap();
        let expected = [[1.5, -2.0], [1.0, -2.0], [1.0, 3.0]];
        for ((name, _, stored), want) in raw.iter().zip(expected) {
            let (shape, _, b) = w.blocks(name).unwrap().unwrap();
            assert_eq!(shape, [2]);
            assert!(matches!(b, BlockBytes::Mapped { .. }), "{name}");
            assert_eq!(&b[..], &stored[..], "{name}");
            assert_eq!(w.tensor(name).unwrap().unwrap().data, want, "{name}");
        }
        assert!(w.blocks("missing").unwrap().is_none());
    }
}
