//! gpt-oss's Hugging Face experts, as transformers 5 stores them: per layer one tensor for every
//! expert's gate and up together and one for every down, multiplied as `x · W`, so transposed
//! from GGUF's rows (`mlp.experts.gate_up_proj` `[experts, hidden, 2 × width]`, gate and up
//! **interleaved** in the last dimension, `[..., ::2]` and `[..., 1::2]`; `down_proj`
//! `[experts, width, hidden]`; the biases `gate_up_proj_bias` `[experts, 2 × width]`, likewise
//! interleaved, and `down_proj_bias` `[experts, hidden]`). Two forms, as `quantization_config`
//! says ([`form`]):
//! - **dense** (f32, f16 or bf16): each expert's matrix is gathered out of the fused tensor
//!   into memory in its stored type (strided, so it cannot be served where it lies), as other
//!   families' Hugging Face weights are read into memory;
//! - **MXFP4** (the released checkpoints; `quant_method` "mxfp4"): the matrices as
//!   `{name}_blocks` `[experts, rows, cols / 32, 16]` (two E2M1 values a byte, the earlier in
//!   the low nibble) and `{name}_scales` `[experts, rows, cols / 32]` (E8M0), rows being the
//!   output features (gate and up interleaved by row). GGUF's MXFP4 block holds the scale, then
//!   the first 16 values' nibbles low and the last 16 high, so no expert is a range of the
//!   file. Each layer's tensor is rewritten once, on its first expert's load, in GGUF's blocks
//!   (gate rows, then up rows, per expert) into an unlinked scratch file under the temporary
//!   directory and mapped: the experts are then ranges of a mapped file as a GGUF file's are,
//!   read by the same products, repacked into the same expert budget and handed back to the
//!   page cache the same way, so memory stays bounded by the experts tokens choose (the scratch
//!   file costs disk, the experts' size, while the model is open).
//!
//! [`layout`] is the inverse for `model export-hf`, which writes the dense form.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use memmap2::Mmap;

use crate::model::block::transformer::{Blocks, Part, RawTensor, TensorDesc, TensorFile};
use crate::model::family::read::HfJson;
use crate::model::family::StoredLayout;
use crate::model::format::gguf::BlockBytes;
use crate::model::format::quant::{dequantize, GgmlType};
use crate::model::{invalid, ModelError};

/// Values per MXFP4 block, and bytes of a GGUF MXFP4 block (the scale and 16 of nibbles).
const BLOCK: usize = 32;
const GGUF_BLOCK: usize = 17;
/// ggml's E8M0 byte that is not a number.
const NAN_SCALE: u8 = 0xff;

/// Checks config.json's `quantization_config`: absent (dense experts) or MXFP4; anything else
/// is refused by name. Which form the tensors are in is read from the tensors themselves.
pub fn form(json: &HfJson) -> Result<(), ModelError> {
    let Some(q) = json.get("quantization_config") else {
        return Ok(());
    };
    match q.get("quant_method").and_then(|m| m.as_str()) {
        Some("mxfp4") => Ok(()),
        _ => Err(invalid(
            &json.path,
            format!(
                "quantization_config {q}: quant_method {} is not implemented for gpt-oss (only \
                 mxfp4, the released checkpoints' experts)",
                q.get("quant_method")
                    .map_or("(none given)".into(), |m| m.to_string())
            ),
        )),
    }
}

/// A name the block reads an expert's tensor under (`gpt_oss::hf_name`): the fused tensor, the
/// expert, and for gate and up which of the two interleaved halves (0 gate, 1 up).
struct Slot<'n> {
    stored: &'n str,
    expert: usize,
    half: Option<usize>,
}

impl Slot<'_> {
    fn parse(name: &str) -> Option<Slot<'_>> {
        let (stored, slot) = name.strip_suffix(']')?.split_once('[')?;
        let (half, e) = match slot.split_once(' ') {
            None => (None, slot),
            Some(("gate", e)) => (Some(0), e),
            Some(("up", e)) => (Some(1), e),
            Some(_) => return None,
        };
        Some(Slot {
            stored,
            expert: e.parse().ok()?,
            half,
        })
    }

    /// How many parts one expert's columns interleave.
    fn parts(&self) -> usize {
        self.half.map_or(1, |_| 2)
    }

    /// The block's shape of this expert's part of a fused tensor of `shape` (`x · W` layout:
    /// `[experts, inputs, outputs]`, or `[experts, outputs]` for a bias).
    fn shape(&self, path: &Path, shape: &[usize]) -> Result<Vec<usize>, ModelError> {
        let n = self.parts();
        match *shape {
            [experts, inputs, outputs] if self.expert < experts && outputs.is_multiple_of(n) => {
                Ok(vec![outputs / n, inputs])
            }
            [experts, outputs] if self.expert < experts && outputs.is_multiple_of(n) => {
                Ok(vec![outputs / n])
            }
            _ => Err(invalid(
                path,
                format!(
                    "expert tensor {} has shape {shape:?}: no expert {}{} in [experts, inputs, \
                     outputs] or [experts, outputs]",
                    self.stored,
                    self.expert,
                    match self.half {
                        Some(0) => "'s gate",
                        Some(_) => "'s up",
                        None => "",
                    }
                ),
            )),
        }
    }
}

/// An MXFP4 tensor as transformers stores it: its `x · W` shape (`[experts, inputs,
/// outputs]`) with the `_blocks` bytes, and the `_scales` bytes.
type Mxfp4Pair = ((Vec<usize>, BlockBytes), BlockBytes);

/// A gpt-oss checkpoint's tensors with each expert's served under its slot name (module docs).
pub struct Experts<'a> {
    inner: &'a dyn TensorFile,
    /// The MXFP4 tensors rewritten in GGUF's blocks, by stored name.
    rewritten: Mutex<HashMap<String, Arc<Mmap>>>,
}

impl<'a> Experts<'a> {
    pub fn new(inner: &'a dyn TensorFile) -> Experts<'a> {
        Experts {
            inner,
            rewritten: Mutex::new(HashMap::new()),
        }
    }

    /// The MXFP4 pair of `stored`, checked against each other; `None` when the checkpoint has
    /// no `{stored}_blocks`.
    fn mxfp4(&self, stored: &str) -> Result<Option<Mxfp4Pair>, ModelError> {
        let name = |s: &str| format!("{stored}_{s}");
        let Some((shape, ty, blocks)) = self.inner.stored(&name("blocks"))? else {
            return Ok(None);
        };
        let bad =
            |tensor: String, why: String| invalid(self.path(), format!("tensor {tensor} {why}"));
        let Some((scale_shape, scale_ty, scales)) = self.inner.stored(&name("scales"))? else {
            return Err(bad(
                name("blocks"),
                format!("has no {} beside it (MXFP4 needs both)", name("scales")),
            ));
        };
        for (tensor, t) in [(name("blocks"), &ty), (name("scales"), &scale_ty)] {
            if t != "U8" {
                return Err(bad(tensor, format!("is {t}, not U8 as MXFP4 is stored")));
            }
        }
        let [experts, rows, groups, 16] = shape[..] else {
            return Err(bad(
                name("blocks"),
                format!("has shape {shape:?}, expected [experts, rows, blocks, 16]"),
            ));
        };
        if scale_shape != [experts, rows, groups] {
            return Err(bad(
                name("scales"),
                format!(
                    "has shape {scale_shape:?}, expected [{experts}, {rows}, {groups}] beside \
                     {} {shape:?}",
                    name("blocks")
                ),
            ));
        }
        if self.inner.describe(stored)?.is_some() {
            return Err(bad(
                stored.to_string(),
                format!("is stored both dense and as {}", name("blocks")),
            ));
        }
        Ok(Some((
            (vec![experts, groups * BLOCK, rows], blocks),
            scales,
        )))
    }

    /// `stored` (an MXFP4 pair) rewritten in GGUF's MXFP4 blocks and mapped, each expert's rows
    /// in order or, `split`, its even rows (gate) before its odd ones (up).
    fn rewritten(&self, stored: &str, split: bool) -> Result<Arc<Mmap>, ModelError> {
        let mut done = self.rewritten.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = done.get(stored) {
            return Ok(Arc::clone(map));
        }
        let Some(((shape, blocks), scales)) = self.mxfp4(stored)? else {
            return Err(ModelError::MissingTensor {
                path: self.path().to_path_buf(),
                tensor: stored.to_string(),
            });
        };
        let (experts, groups, rows) = (shape[0], shape[1] / BLOCK, shape[2]);
        let dir = std::env::temp_dir();
        let io = |source| ModelError::Io {
            path: dir.clone(),
            source,
        };
        let file = scratch_file(&dir).map_err(io)?;
        let mut w = BufWriter::new(&file);
        let order: Vec<usize> = match split {
            true => (0..rows).step_by(2).chain((1..rows).step_by(2)).collect(),
            false => (0..rows).collect(),
        };
        let expert_blocks = rows * groups;
        for e in 0..experts {
            for &r in &order {
                let first = e * expert_blocks + r * groups;
                for g in first..first + groups {
                    let scale = scales[g];
                    if scale == NAN_SCALE {
                        return Err(invalid(
                            self.path(),
                            format!(
                                "tensor {stored}_scales holds a NaN scale (E8M0 255) for expert \
                                 {e}, row {r}, block {}",
                                g - first
                            ),
                        ));
                    }
                    w.write_all(&gguf_block(scale, &blocks[16 * g..16 * (g + 1)]))
                        .map_err(io)?;
                }
            }
            // Each expert's source pages are read once: let them go.
            let range = e * expert_blocks..(e + 1) * expert_blocks;
            scales.release(range.clone());
            blocks.release(16 * range.start..16 * range.end);
        }
        w.flush().map_err(io)?;
        drop(w);
        // SAFETY: the scratch file is unlinked and private to this process; nothing writes it
        // after this point.
        let map = Arc::new(unsafe { Mmap::map(&file) }.map_err(io)?);
        done.insert(stored.to_string(), Arc::clone(&map));
        Ok(map)
    }

    /// Expert `slot`'s matrix or bias, as the block reads it: `[outputs, inputs]` rows.
    fn expert(&self, slot: &Slot) -> Result<Option<Blocks>, ModelError> {
        if let Some(((shape, _), _)) = self.mxfp4(slot.stored)? {
            let want = slot.shape(self.path(), &shape)?;
            let map = self.rewritten(slot.stored, slot.half.is_some())?;
            let row = shape[1] / BLOCK * GGUF_BLOCK;
            let expert = shape[2] * row;
            let len = want[0] * row;
            let start = slot.expert * expert + slot.half.unwrap_or(0) * len;
            let bytes = BlockBytes::Mapped {
                map,
                range: start..start + len,
            };
            return Ok(Some((want, GgmlType::Mxfp4, bytes)));
        }
        let Some((shape, ty, bytes)) = self.inner.blocks(slot.stored)? else {
            return Ok(None);
        };
        let want = slot.shape(self.path(), &shape)?;
        let size = ty.block_bytes();
        let (inputs, outputs) = match shape[..] {
            [_, i, o] => (i, o),
            _ => (1, shape[1]),
        };
        let (n, h) = (slot.parts(), slot.half.unwrap_or(0));
        let base = slot.expert * inputs * outputs;
        let mut out = Vec::with_capacity(inputs * outputs / n * size);
        for j in 0..outputs / n {
            for i in 0..inputs {
                let at = (base + i * outputs + j * n + h) * size;
                out.extend_from_slice(&bytes[at..at + size]);
            }
        }
        Ok(Some((want, ty, BlockBytes::Owned(out))))
    }
}

/// An unlinked file under `dir`, gone when closed.
fn scratch_file(dir: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir)
}

/// One GGUF MXFP4 block from transformers' scale and 16 bytes: value `k` is nibble `k % 2` of
/// byte `k / 2` there; GGUF's byte `j` holds value `j` low and value `j + 16` high.
fn gguf_block(scale: u8, packed: &[u8]) -> [u8; GGUF_BLOCK] {
    let value = |k: usize| (packed[k / 2] >> (4 * (k % 2))) & 0x0f;
    let mut out = [0u8; GGUF_BLOCK];
    out[0] = scale;
    for j in 0..16 {
        out[1 + j] = value(j) | (value(j + 16) << 4);
    }
    out
}

impl TensorFile for Experts<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        let Some(slot) = Slot::parse(name) else {
            return self.inner.tensor(name);
        };
        let Some((shape, ty, bytes)) = self.expert(&slot)? else {
            return Ok(None);
        };
        let mut data = vec![0f32; shape.iter().product()];
        dequantize(ty, &bytes, &mut data);
        Ok(Some(RawTensor { shape, data }))
    }

    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        match Slot::parse(name) {
            Some(slot) => self.expert(&slot),
            None => self.inner.blocks(name),
        }
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        let Some(slot) = Slot::parse(name) else {
            return self.inner.describe(name);
        };
        if let Some(((shape, _), _)) = self.mxfp4(slot.stored)? {
            return Ok(Some(TensorDesc {
                shape: slot.shape(self.path(), &shape)?,
                ty: "MXFP4".into(),
            }));
        }
        let Some(d) = self.inner.describe(slot.stored)? else {
            return Ok(None);
        };
        Ok(Some(TensorDesc {
            shape: slot.shape(self.path(), &d.shape)?,
            ty: d.ty,
        }))
    }

    /// The checkpoint's names, an MXFP4 pair under the name of the tensor it stores.
    fn names(&self) -> Vec<String> {
        let names = self.inner.names();
        let paired = |n: &str| {
            n.strip_suffix("_scales")
                .is_some_and(|s| names.iter().any(|b| *b == format!("{s}_blocks")))
        };
        names
            .iter()
            .filter(|n| !paired(n))
            .map(|n| n.strip_suffix("_blocks").unwrap_or(n).to_string())
            .collect()
    }
}

/// The dense layout of the fused expert tensors holding `parts`, for `model export-hf`: every
/// expert's gate and up interleaved and transposed into `[experts, inputs, 2 × outputs]`, its
/// down transposed, the biases interleaved likewise; `None` for any other tensor.
pub fn layout(parts: &[(Part, Vec<usize>)]) -> Option<StoredLayout> {
    let (first, shape) = parts.first()?;
    let n = match first {
        Part::ExpertGate(..) | Part::ExpertGateBias(..) => 2,
        Part::ExpertDown(..) | Part::ExpertDownBias(..) => 1,
        _ => return None,
    };
    let experts = parts.len() / n;
    let groups = (0..experts)
        .map(|e| (0..n).map(|h| parts[h * experts + e].0).collect())
        .collect();
    let shape = match shape[..] {
        [outputs, inputs] => vec![experts, inputs, n * outputs],
        _ => vec![experts, n * shape[0]],
    };
    Some(StoredLayout {
        shape,
        groups,
        arrange: interleave_transposed,
    })
}

/// `[outputs, inputs]` matrices (or `[outputs]` vectors) as one `[inputs, n × outputs]` with
/// column `j · n + h` output `j` of part `h`: what [`Experts`] reads back.
fn interleave_transposed(parts: &[RawTensor]) -> Vec<f32> {
    let n = parts.len();
    let outputs = parts[0].shape[0];
    let inputs = parts[0].shape.get(1).copied().unwrap_or(1);
    let mut out = vec![0f32; n * outputs * inputs];
    for (h, t) in parts.iter().enumerate() {
        for j in 0..outputs {
            for i in 0..inputs {
                out[i * n * outputs + j * n + h] = t.data[j * inputs + i];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// transformers' nibble order (value `2b` low in byte `b`) becomes GGUF's (value `j` low,
    /// `j + 16` high, in byte `j`), the scale first.
    #[test]
    fn a_transformers_mxfp4_block_becomes_ggufs() {
        let values: Vec<u8> = (0..32).map(|k| (k * 7 % 16) as u8).collect();
        let packed: Vec<u8> = (0..16)
            .map(|b| values[2 * b] | (values[2 * b + 1] << 4))
            .collect();
        let block = gguf_block(130, &packed);
        assert_eq!(block[0], 130);
        for j in 0..16 {
            assert_eq!(block[1 + j] & 0x0f, values[j], "value {j}");
            assert_eq!(block[1 + j] >> 4, values[j + 16], "value {}", j + 16);
        }
    }
}
