//! Reader for GGUF v2/v3 model files: header, metadata, tensor table and tensor data.
//!
//! The file is memory-mapped; everything is validated at `open` (string lengths, counts, tensor
//! extents against the file size) so that a truncated or corrupt file gives an error naming the
//! file and the place instead of a panic later.
//!
//! Dimension order: GGUF stores a tensor's dims as ggml's `ne`, innermost first (`ne[0]` is the
//! length of a row). Callers get shapes in PyTorch order instead, outermost first: a matrix with
//! `ne = [cols, rows]` is reported as `[rows, cols]`, and its data is row-major.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::model::format::quant::{self, GgmlType};
use crate::model::ModelError;

const MAGIC: &[u8; 4] = b"GGUF";
const DEFAULT_ALIGNMENT: u64 = 32;

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    String(String),
    Array(Vec<Value>),
}

impl Value {
    /// The GGUF name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::U8(_) => "uint8",
            Value::I8(_) => "int8",
            Value::U16(_) => "uint16",
            Value::I16(_) => "int16",
            Value::U32(_) => "uint32",
            Value::I32(_) => "int32",
            Value::U64(_) => "uint64",
            Value::I64(_) => "int64",
            Value::F32(_) => "float32",
            Value::F64(_) => "float64",
            Value::Bool(_) => "bool",
            Value::String(_) => "string",
            Value::Array(_) => "array",
        }
    }

    /// Any integer value, widened.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Value::U8(v) => v.into(),
            Value::I8(v) => v.into(),
            Value::U16(v) => v.into(),
            Value::I16(v) => v.into(),
            Value::U32(v) => v.into(),
            Value::I32(v) => v.into(),
            Value::U64(v) => v.into(),
            Value::I64(v) => v.into(),
            _ => return None,
        })
    }
}

/// One entry of the tensor table.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub name: String,
    /// ggml `ne`, innermost dimension first.
    pub ne: Vec<u64>,
    /// Raw ggml type id; see [`quant::type_name`].
    pub type_id: u32,
    /// Offset of the data from the start of the file (checked only for supported types).
    start: usize,
}

impl TensorInfo {
    /// Shape in PyTorch order (outermost first).
    pub fn shape(&self) -> Vec<usize> {
        self.ne.iter().rev().map(|&d| d as usize).collect()
    }

    /// Number of values (saturating: dims of an unsupported type are not validated).
    pub fn len(&self) -> usize {
        self.ne
            .iter()
            .fold(1usize, |acc, &d| acc.saturating_mul(d as usize))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bytes of quantised blocks: a range of a mapped model file, kept in place, or owned.
pub enum BlockBytes {
    Mapped { map: Arc<Mmap>, range: Range<usize> },
    Owned(Vec<u8>),
}

impl BlockBytes {
    /// Hands the mapped pages of `within` (a range of these bytes) back to the kernel, for
    /// bytes that will not be read again soon (a repacked copy replaces them). Reading them
    /// later faults them back in from the file.
    pub fn release(&self, within: Range<usize>) {
        if let BlockBytes::Mapped { map, range } = self {
            let range = range.start + within.start..range.start + within.end;
            // SAFETY: the map is read-only and private, so dropped pages come back unchanged
            // from the file on the next read. The advice is only a hint: ignoring an error
            // leaves the pages resident.
            let _ = unsafe {
                map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    range.start,
                    range.len(),
                )
            };
        }
    }
}

impl std::ops::Deref for BlockBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            BlockBytes::Mapped { map, range } => &map[range.clone()],
            BlockBytes::Owned(bytes) => bytes,
        }
    }
}

/// An open GGUF file.
pub struct Gguf {
    path: PathBuf,
    /// Shared with the quantised matrices that keep their blocks in place (`BlockBytes`).
    map: Arc<Mmap>,
    version: u32,
    metadata: BTreeMap<String, Value>,
    tensors: Vec<TensorInfo>,
    by_name: HashMap<String, usize>,
}

impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gguf")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("metadata_keys", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl Gguf {
    /// Opens and validates a GGUF file.
    pub fn open(path: impl AsRef<Path>) -> Result<Gguf, ModelError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| ModelError::Io {
            path: path.clone(),
            source,
        };
        let file = File::open(&path).map_err(io)?;
        // SAFETY: a read-only map of a file nobody writes while a model is in use (modifying a
        // model file under a running scorer is outside what we guard against); every read is
        // bounds-checked against the length at map time.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        let map = Arc::new(map);
        let header = parse(&map, &path)?;
        Ok(Gguf {
            path,
            map,
            version: header.version,
            metadata: header.metadata,
            tensors: header.tensors,
            by_name: header.by_name,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn metadata(&self) -> &BTreeMap<String, Value> {
        &self.metadata
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    fn require(&self, key: &str) -> Result<&Value, ModelError> {
        self.get(key).ok_or_else(|| ModelError::MissingKey {
            path: self.path.clone(),
            key: key.to_string(),
        })
    }

    fn wrong_type(&self, key: &str, expected: &'static str, found: &Value) -> ModelError {
        ModelError::KeyType {
            path: self.path.clone(),
            key: key.to_string(),
            expected,
            found: found.type_name(),
        }
    }

    pub fn get_str(&self, key: &str) -> Result<&str, ModelError> {
        match self.require(key)? {
            Value::String(s) => Ok(s),
            v => Err(self.wrong_type(key, "string", v)),
        }
    }

    /// An integer key that fits in u32, whatever integer type the writer chose.
    pub fn get_u32(&self, key: &str) -> Result<u32, ModelError> {
        let v = self.require(key)?;
        v.as_i128()
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| self.wrong_type(key, "uint32", v))
    }

    pub fn get_f32(&self, key: &str) -> Result<f32, ModelError> {
        match *self.require(key)? {
            Value::F32(f) => Ok(f),
            Value::F64(f) => Ok(f as f32),
            ref v => Err(self.wrong_type(key, "float32", v)),
        }
    }

    pub fn get_bool(&self, key: &str) -> Result<bool, ModelError> {
        match *self.require(key)? {
            Value::Bool(b) => Ok(b),
            ref v => Err(self.wrong_type(key, "bool", v)),
        }
    }

    fn get_array(&self, key: &str, expected: &'static str) -> Result<&[Value], ModelError> {
        match self.require(key)? {
            Value::Array(a) => Ok(a),
            v => Err(self.wrong_type(key, expected, v)),
        }
    }

    pub fn get_str_array(&self, key: &str) -> Result<Vec<&str>, ModelError> {
        let array = self.get_array(key, "array of string")?;
        array
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.as_str()),
                v => Err(self.wrong_type(key, "array of string", v)),
            })
            .collect()
    }

    /// An array of integers that fit in i32 (e.g. `tokenizer.ggml.token_type`).
    pub fn get_i32_array(&self, key: &str) -> Result<Vec<i32>, ModelError> {
        let array = self.get_array(key, "array of int32")?;
        array
            .iter()
            .map(|v| {
                v.as_i128()
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(|| self.wrong_type(key, "array of int32", v))
            })
            .collect()
    }

    /// An array of floats (e.g. `tokenizer.ggml.scores`).
    pub fn get_f32_array(&self, key: &str) -> Result<Vec<f32>, ModelError> {
        let array = self.get_array(key, "array of float32")?;
        array
            .iter()
            .map(|v| match *v {
                Value::F32(f) => Ok(f),
                Value::F64(f) => Ok(f as f32),
                ref v => Err(self.wrong_type(key, "array of float32", v)),
            })
            .collect()
    }

    /// `general.architecture`, e.g. "llama" or "qwen2".
    pub fn architecture(&self) -> Result<&str, ModelError> {
        self.get_str("general.architecture")
    }

    /// Tensor names in file order.
    pub fn tensor_names(&self) -> impl Iterator<Item = &str> {
        self.tensors.iter().map(|t| t.name.as_str())
    }

    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.by_name.get(name).map(|&i| &self.tensors[i])
    }

    /// A tensor of a supported type as stored: shape (PyTorch order), type and block bytes.
    /// The bytes stay in the file's map (no copy): they count once in the resident set.
    pub fn tensor_blocks(&self, name: &str) -> Option<(Vec<usize>, GgmlType, BlockBytes)> {
        let info = self.tensor_info(name)?;
        let ty = GgmlType::from_id(info.type_id)?;
        // `open` checked that the extent is a whole number of blocks inside the file.
        let bytes = ty.bytes_for(info.len())?;
        let mapped = BlockBytes::Mapped {
            map: Arc::clone(&self.map),
            range: info.start..info.start + bytes,
        };
        Some((info.shape(), ty, mapped))
    }

    /// A tensor dequantised to f32, with its shape in PyTorch order (outermost first) and its
    /// data row-major.
    pub fn tensor_f32(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>), ModelError> {
        let info = self
            .tensor_info(name)
            .ok_or_else(|| ModelError::MissingTensor {
                path: self.path.clone(),
                tensor: name.to_string(),
            })?;
        let ty = GgmlType::from_id(info.type_id).ok_or_else(|| ModelError::UnsupportedType {
            path: self.path.clone(),
            tensor: name.to_string(),
            ty: quant::type_name(info.type_id),
        })?;
        // `open` checked that the extent is a whole number of blocks inside the file.
        let n = info.len();
        let bytes = ty.bytes_for(n).unwrap_or_default();
        let mut out = vec![0.0; n];
        quant::dequantize(ty, &self.map[info.start..info.start + bytes], &mut out);
        Ok((info.shape(), out))
    }
}

struct Header {
    version: u32,
    metadata: BTreeMap<String, Value>,
    tensors: Vec<TensorInfo>,
    by_name: HashMap<String, usize>,
}

/// A bounds-checked little-endian reader over the file bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], ModelError> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(ModelError::Truncated {
                path: self.path.to_path_buf(),
                offset: self.pos as u64,
                detail: format!("{what} needs {n} bytes, {left} left"),
            });
        }
        let s = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ModelError> {
        Ok(self.take(N as u64, what)?.try_into().expect("took N bytes"))
    }

    fn u32(&mut self, what: &str) -> Result<u32, ModelError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, ModelError> {
        self.array(what).map(u64::from_le_bytes)
    }

    fn malformed(&self, at: usize, detail: String) -> ModelError {
        ModelError::Malformed {
            path: self.path.to_path_buf(),
            offset: at as u64,
            detail,
        }
    }

    fn string(&mut self, what: &str) -> Result<String, ModelError> {
        let at = self.pos;
        let len = self.u64(what)?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| self.malformed(at, format!("{what} is not valid UTF-8")))
    }

    fn value(&mut self, type_id: u32, key: &str, depth: u32) -> Result<Value, ModelError> {
        let what = || format!("value of {key}");
        Ok(match type_id {
            0 => Value::U8(self.array::<1>(&what())?[0]),
            1 => Value::I8(self.array::<1>(&what())?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.array(&what())?)),
            3 => Value::I16(i16::from_le_bytes(self.array(&what())?)),
            4 => Value::U32(u32::from_le_bytes(self.array(&what())?)),
            5 => Value::I32(i32::from_le_bytes(self.array(&what())?)),
            6 => Value::F32(f32::from_le_bytes(self.array(&what())?)),
            7 => match self.array::<1>(&what())?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(self.malformed(self.pos - 1, format!("{key}: bool byte {b}"))),
            },
            8 => Value::String(self.string(&what())?),
            9 if depth == 0 => {
                let elem = self.u32(&what())?;
                let count = self.u64(&what())?;
                // Every element takes at least one byte: a larger count is corrupt, and checking
                // it first keeps a corrupt count from reserving huge memory.
                if count > (self.bytes.len() - self.pos) as u64 {
                    return Err(self.truncated_count(key, count));
                }
                let mut items = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    items.push(self.value(elem, key, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(u64::from_le_bytes(self.array(&what())?)),
            11 => Value::I64(i64::from_le_bytes(self.array(&what())?)),
            12 => Value::F64(f64::from_le_bytes(self.array(&what())?)),
            t => {
                let at = self.pos - 4;
                let detail = if t == 9 {
                    format!("{key}: nested arrays are not supported")
                } else {
                    format!("{key}: unknown metadata value type {t}")
                };
                return Err(self.malformed(at, detail));
            }
        })
    }

    fn truncated_count(&self, what: &str, count: u64) -> ModelError {
        ModelError::Truncated {
            path: self.path.to_path_buf(),
            offset: self.pos as u64,
            detail: format!(
                "{what}: count {count} exceeds the {} bytes left",
                self.bytes.len() - self.pos
            ),
        }
    }
}

fn parse(bytes: &[u8], path: &Path) -> Result<Header, ModelError> {
    let mut c = Cursor {
        bytes,
        pos: 0,
        path,
    };
    let magic = c.array::<4>("magic")?;
    if &magic != MAGIC {
        return Err(ModelError::BadMagic {
            path: path.to_path_buf(),
            found: magic,
        });
    }
    let version = c.u32("version")?;
    if !(2..=3).contains(&version) {
        return Err(ModelError::Version {
            path: path.to_path_buf(),
            version,
        });
    }
    let n_tensors = c.u64("tensor count")?;
    let n_kv = c.u64("metadata count")?;

    let mut metadata = BTreeMap::new();
    if n_kv > (bytes.len() - c.pos) as u64 {
        return Err(c.truncated_count("metadata count", n_kv));
    }
    for _ in 0..n_kv {
        let key = c.string("metadata key")?;
        let type_id = c.u32(&format!("type of {key}"))?;
        let value = c.value(type_id, &key, 0)?;
        metadata.insert(key, value);
    }

    if n_tensors > (bytes.len() - c.pos) as u64 {
        return Err(c.truncated_count("tensor count", n_tensors));
    }
    let mut infos = Vec::with_capacity(n_tensors as usize);
    for _ in 0..n_tensors {
        let at = c.pos;
        let name = c.string("tensor name")?;
        let n_dims = c.u32(&format!("dims of tensor {name}"))?;
        if n_dims > 4 {
            return Err(c.malformed(at, format!("tensor {name} has {n_dims} dims (at most 4)")));
        }
        let ne = (0..n_dims)
            .map(|_| c.u64(&format!("dims of tensor {name}")))
            .collect::<Result<Vec<_>, _>>()?;
        let type_id = c.u32(&format!("type of tensor {name}"))?;
        let offset = c.u64(&format!("offset of tensor {name}"))?;
        infos.push((at, name, ne, type_id, offset));
    }

    let alignment = match metadata.get("general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(v) => match v.as_i128() {
            Some(a) if a > 0 && (a as u64).is_power_of_two() => a as u64,
            _ => {
                return Err(c.malformed(0, format!("general.alignment {v:?} is not a power of two")))
            }
        },
    };
    let data_start = (c.pos as u64).div_ceil(alignment) * alignment;

    let mut tensors = Vec::with_capacity(infos.len());
    let mut by_name = HashMap::with_capacity(infos.len());
    for (at, name, ne, type_id, offset) in infos {
        if by_name.insert(name.clone(), tensors.len()).is_some() {
            return Err(c.malformed(at, format!("tensor {name} appears twice")));
        }
        if offset % alignment != 0 {
            return Err(c.malformed(
                at,
                format!("tensor {name}: offset {offset} not aligned to {alignment}"),
            ));
        }
        let start = data_start.checked_add(offset);
        if let Some(ty) = GgmlType::from_id(type_id) {
            // ggml quantises rows: the innermost dimension must be whole blocks.
            let row = ne.first().copied().unwrap_or(1);
            let n = ne.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
            let n = n.and_then(|n| usize::try_from(n).ok());
            let size = n
                .filter(|_| row % ty.block_len() as u64 == 0)
                .and_then(|n| ty.bytes_for(n));
            let Some(size) = size else {
                return Err(c.malformed(
                    at,
                    format!(
                        "tensor {name}: dims {ne:?} do not fit {} blocks",
                        quant::type_name(type_id)
                    ),
                ));
            };
            let end = start.and_then(|s| s.checked_add(size as u64));
            if end.is_none_or(|e| e > bytes.len() as u64) {
                return Err(ModelError::Truncated {
                    path: path.to_path_buf(),
                    offset: bytes.len() as u64,
                    detail: format!(
                        "tensor {name} needs bytes {}..{}, file has {}",
                        data_start as u128 + offset as u128,
                        data_start as u128 + offset as u128 + size as u128,
                        bytes.len()
                    ),
                });
            }
        }
        let start = start
            .and_then(|s| usize::try_from(s).ok())
            .unwrap_or(usize::MAX);
        tensors.push(TensorInfo {
            name,
            ne,
            type_id,
            start,
        });
    }
    Ok(Header {
        version,
        metadata,
        tensors,
        by_name,
    })
}
