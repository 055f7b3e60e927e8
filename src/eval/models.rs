//! Models in the registry: registered by fingerprint (model files + numerics), named by alias,
//! and checked against their files before every use.

use super::engine::Engine;
use super::language_model::{Generation, Prefill, Scoring};
use super::records::ModelRecord;
use crate::model::block::transformer::State;
use crate::model::format::gguf::Gguf;
use crate::model::format::quant::GgmlType;
use crate::model::numerics::qmatmul;
use crate::model::scorer::{Backend, Scorer};
use crate::store::{Id, Names, Record, Store};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Names the numerics that produce scores; part of every fingerprint, so a change to how
/// scores are computed gives new model ids (old scores stay, attributed to the old ones).
/// Version 4: attention sums its softmax in lanes by position and every `exp` is our own
/// (`model::numerics::kernels::exp32`, the same bits whatever the libm), for every model and format (HF
/// llama, at version 3 since its q/k rows load in GGUF's order, joins the others).
/// Version 5: an attention score is one chain of fused multiply-adds in dimension order, keys as
/// vector lanes (`model::block::attention`), no longer the 16-lane dot product.
pub const SCORER_VERSION: &str = "fixed-order-f32-scorer-5";

/// The scorer version of the integer mode: version 5 as above, with weights repacked into
/// panels and an integer kernel for every quantised type (`model::numerics::qmatmul`), where an output
/// accumulates one float per block and k-quant weights multiply 8-bit activations.
const INTEGER_SCORER_VERSION: &str = "integer-scorer-5";

/// The scorer version that names a model's numerics, by mode. Rope frequency factors (Llama 3's
/// `rope_freqs.weight` or `rope_scaling`, linear scaling) were ignored before version 5 read
/// them, so a file with them was scored as if it had none; its version says that it now has
/// them, so those earlier scores keep their own fingerprint and are never read as this one's.
fn scorer_version(backend: Backend, rope_factors: bool) -> String {
    let base = match backend {
        Backend::Int8 => INTEGER_SCORER_VERSION,
        Backend::Flex => SCORER_VERSION,
    };
    if rope_factors {
        format!("{base}+rope-freq-factors")
    } else {
        base.to_string()
    }
}

/// The numerics of a model when none is asked for: `asked`, or else the integer mode for a GGUF
/// file with quantised matrices and f32 for float weights. Why the integer mode: it is what
/// llama.cpp does with the same file, as close to llama.cpp as llama.cpp's own builds are to each
/// other (`tests/suite/numerics_llamacpp.rs`), and it scores the main job 2.3x faster than f32 (85.7
/// against 194.0 s). The f32 mode stays a choice (`--backend flex`): exact against the
/// dequantised f32 reference and bit-identical to the same weights as a Hugging Face directory.
/// Float weights take f32 either way, so they are not registered twice under two names.
pub fn backend_for(path: &Path, asked: Option<Backend>) -> Result<Backend> {
    if let Some(b) = asked {
        return Ok(b);
    }
    if path.is_dir() {
        return Ok(Backend::Flex);
    }
    // Quantised as the loader keeps a matrix quantised: the integer mode changes its numerics.
    let gguf = Gguf::open(path)?;
    let quantised = gguf.tensor_names().any(|name| {
        gguf.tensor_info(name).is_some_and(|t| {
            GgmlType::from_id(t.type_id).is_some_and(|ty| {
                t.ne.first()
                    .is_some_and(|&c| qmatmul::keeps(ty, c as usize))
            })
        })
    });
    Ok(if quantised {
        Backend::Int8
    } else {
        Backend::Flex
    })
}

/// The files that make a Hugging Face model directory, in a fixed order.
fn model_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        bail!("{}: no such model file or directory", path.display());
    }
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(path).max_depth(1).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot list {}", path.display()))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.file_type().is_file()
            && (name.ends_with(".json") || name.ends_with(".safetensors"))
        {
            files.push(entry.into_path());
        }
    }
    if files.is_empty() {
        bail!("{}: no config.json or weight files", path.display());
    }
    Ok(files)
}

/// Context of the fingerprint of a model's files (v2): each file's length and bytes and, inside a
/// Hugging Face directory, its name there. The name or location of a single file is not part
/// of it: the same bytes anywhere are the same model.
const FILES_CONTEXT: &str = "deltalogic 2026-11-23 model files v2";

/// A model's files as hashed: the fingerprint, the legacy (v1) hashes asked for, the size.
pub struct FileHashes {
    pub files_blake3: String,
    /// The v1 hash (which also hashed a single file's own name) under each name asked for, in
    /// order: stores written before v2 keep v1 hashes in their model records.
    pub legacy: Vec<String>,
    pub bytes: u64,
}

/// Hashes a model's files in one pass: the v2 fingerprint and, for a single file, its v1 hash as
/// if the file were called each of `legacy_names` (for a directory, the v1 hash used the names
/// of the files inside, so one v1 hash is computed whatever the names).
pub fn content_hash(path: &Path, legacy_names: &[&str]) -> Result<FileHashes> {
    let files = model_files(path)?;
    let single = path.is_file();
    let mut v2 = blake3::Hasher::new_derive_key(FILES_CONTEXT);
    let mut v1: Vec<blake3::Hasher> = if single {
        legacy_names.iter().map(|_| blake3::Hasher::new()).collect()
    } else {
        vec![blake3::Hasher::new()]
    };
    let mut total = 0;
    for f in files {
        let mut file =
            std::fs::File::open(&f).with_context(|| format!("cannot read {}", f.display()))?;
        let own = f
            .file_name()
            .map(|n| n.as_encoded_bytes())
            .unwrap_or_default();
        if single {
            for (h, name) in v1.iter_mut().zip(legacy_names) {
                h.update(name.as_bytes());
            }
        } else {
            v2.update(&(own.len() as u64).to_le_bytes());
            v2.update(own);
            v1[0].update(own);
        }
        let len = file.metadata()?.len();
        for h in v1.iter_mut().chain([&mut v2]) {
            h.update(&len.to_le_bytes());
        }
        std::io::copy(
            &mut file,
            &mut Fanout(v1.iter_mut().chain([&mut v2]).collect()),
        )
        .with_context(|| format!("cannot read {}", f.display()))?;
        total += len;
    }
    Ok(FileHashes {
        files_blake3: v2.finalize().to_hex().to_string(),
        legacy: v1
            .iter()
            .map(|h| h.finalize().to_hex().to_string())
            .collect(),
        bytes: total,
    })
}

/// Feeds one read of the file to every hasher.
struct Fanout<'a>(Vec<&'a mut blake3::Hasher>);

impl std::io::Write for Fanout<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for h in &mut self.0 {
            h.update(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The file name a record was registered under (what a v1 fingerprint of a single file hashed).
fn registered_name(record: &ModelRecord) -> String {
    Path::new(&record.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether the files hashed are the ones `record` fingerprints, under either scheme.
fn is_model(record: &ModelRecord, hashes: &FileHashes) -> bool {
    record.files_blake3 == hashes.files_blake3 || hashes.legacy.contains(&record.files_blake3)
}

fn architecture(path: &Path) -> Result<(String, String)> {
    if path.is_dir() {
        let config = path.join("config.json");
        let text = std::fs::read_to_string(&config)
            .with_context(|| format!("cannot read {}", config.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not JSON", config.display()))?;
        let arch = json["architectures"][0]
            .as_str()
            .or(json["model_type"].as_str())
            .unwrap_or("unknown");
        Ok(("hf".into(), arch.to_string()))
    } else {
        let gguf = Gguf::open(path)?;
        Ok(("gguf".into(), gguf.architecture()?.to_string()))
    }
}

pub fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Flex => "flex",
        Backend::Int8 => "int8",
    }
}

/// What `add` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Added {
    New,
    /// The same files, already registered from this location.
    Known,
    /// Files already registered (possibly under another name, in another store merged here)
    /// found at a new location: the record now points there.
    Relocated,
}

/// Registers a model: files whose bytes match a registered model (same numerics) are that
/// model, and its recorded location becomes `path`; other files are a new model. Names the
/// model `name` (default: the file stem).
pub fn add(reg: &Store, path: &Path, name: Option<&str>, backend: Backend) -> Result<(Id, Added)> {
    let (format, arch) = architecture(path)?;
    // Whether the model has rope frequency factors, from its headers. A file whose headers do
    // not load can compute no score under any version (`model add` refuses it before this).
    let rope_factors = crate::model::scorer::check(path).is_ok_and(|(config, _)| {
        std::iter::once(&config.rope)
            .chain(&config.rope_local)
            .any(|r| r.freq_factors.is_some())
    });
    let location = std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string();
    let known = reg.all::<ModelRecord>()?;
    let names: Vec<String> = known.iter().map(|(_, r)| registered_name(r)).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let hashes = content_hash(path, &names)?;
    let fresh = ModelRecord {
        files_blake3: hashes.files_blake3.clone(),
        backend: backend_name(backend).into(),
        // Activations: f32, or 8-bit blocks in the integer mode.
        dtype: match backend {
            Backend::Flex => "f32",
            Backend::Int8 => "q8",
        }
        .into(),
        scorer_version: scorer_version(backend, rope_factors),
        format,
        architecture: arch,
        path: location.clone(),
        bytes: hashes.bytes,
    };
    // A v1 record of these bytes keeps its id, so its scores stay attributed to it.
    let existing = known.into_iter().find(|(_, r)| {
        is_model(r, &hashes)
            && r.backend == fresh.backend
            && r.dtype == fresh.dtype
            && r.scorer_version == fresh.scorer_version
    });
    let default_name = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = name.unwrap_or(&default_name);
    reg.write(|w| {
        let (id, added) = match existing {
            Some((id, record)) if record.path == location => (id, Added::Known),
            Some((_, record)) => (
                w.replace(&ModelRecord {
                    path: location.clone(),
                    ..record
                })?,
                Added::Relocated,
            ),
            None => (w.put(&fresh)?.0, Added::New),
        };
        w.name(Names::Models, name, id)?;
        Ok((id, added))
    })
}

/// A model by name or fingerprint prefix. Reads the store only: commands that compute nothing
/// never need the model's files (loading checks them, see [`Loaded::open`]).
pub fn resolve(reg: &Store, name: &str) -> Result<(Id, ModelRecord)> {
    let id = match reg.lookup(Names::Models, name)? {
        Some(id) => id,
        None => reg
            .resolve(ModelRecord::KIND, name)
            .with_context(|| format!("unknown model `{name}` (see `deltalogic model list`)"))?,
    };
    let record = reg
        .get::<ModelRecord>(&id)?
        .with_context(|| format!("model `{name}` has no record"))?;
    Ok((id, record))
}

/// Checks that the files at the record's location are the ones it fingerprints.
fn check_files(record: &ModelRecord) -> Result<()> {
    let path = Path::new(&record.path);
    let hashes = content_hash(path, &[&registered_name(record)]).with_context(|| {
        format!(
            "model {} is recorded at {}; if it moved, run `deltalogic model add NEWPATH`",
            record.id().short(),
            record.path
        )
    })?;
    if !is_model(record, &hashes) {
        bail!(
            "{}: the files are not those of model {} (they changed since it was registered);              run `deltalogic model add` to register them as a new model",
            record.path,
            record.id().short()
        );
    }
    Ok(())
}

/// What tells a model's files apart on disk without reading them: for each file its device,
/// inode, size, modification time and status-change time. Any write to a file, or a change of its
/// times (`touch -d` sets the modification time back, but the status-change time moves on),
/// changes it; so does replacing the file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileIdentity(Vec<(PathBuf, [i64; 7])>);

impl FileIdentity {
    fn of(path: &Path) -> Result<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        model_files(path)?
            .into_iter()
            .map(|f| {
                let m = std::fs::metadata(&f)
                    .with_context(|| format!("cannot read {}", f.display()))?;
                let ids = [
                    m.dev() as i64,
                    m.ino() as i64,
                    m.len() as i64,
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                ];
                Ok((f, ids))
            })
            .collect::<Result<_>>()
            .map(FileIdentity)
    }

    /// The first file that differs from `self` in `now` (or that appeared or went).
    fn changed(&self, now: &FileIdentity) -> Option<PathBuf> {
        if self.0.len() != now.0.len() {
            return Some(self.0.first().map_or_else(PathBuf::new, |f| f.0.clone()));
        }
        self.0
            .iter()
            .zip(&now.0)
            .find(|(a, b)| a != b)
            .map(|(a, _)| a.0.clone())
    }
}

/// A registered model's files as they were when it was loaded.
struct Watched {
    record: ModelRecord,
    identity: FileIdentity,
}

/// What computes a registered model's records: its server (asked with `concurrency` requests in
/// flight), or its files loaded after checking them ([`Loaded::open`]).
pub fn engine(reg: &Store, record: &ModelRecord, concurrency: usize) -> Result<Engine<Loaded>> {
    Ok(if super::served::is_served(record) {
        Engine::Served(super::served::Served::open(reg, record, concurrency)?)
    } else {
        Engine::Local(Loaded::open(record)?)
    })
}

/// A loaded model with the backend it runs on.
pub struct Loaded {
    scorer: Scorer,
    backend: &'static str,
    /// The files of a registered model, checked before every commit of its scores.
    watched: Option<Watched>,
}

impl Loaded {
    /// Loads the model after checking its files are the ones the record fingerprints. Their
    /// identity on disk is noted first, so a change while they are hashed or loaded is seen.
    pub fn open(record: &ModelRecord) -> Result<Loaded> {
        let path = Path::new(&record.path);
        let identity = FileIdentity::of(path).with_context(|| {
            format!(
                "model {} is recorded at {}; if it moved, run `deltalogic model add NEWPATH`",
                record.id().short(),
                record.path
            )
        })?;
        check_files(record)?;
        let backend = match record.backend.as_str() {
            "flex" => Backend::Flex,
            "int8" => Backend::Int8,
            other => bail!("model backend `{other}` is not built into this deltalogic"),
        };
        let mut loaded = Loaded::file(path, backend)?;
        loaded.watched = Some(Watched {
            record: record.clone(),
            identity,
        });
        loaded.unchanged(false)?;
        Ok(loaded)
    }

    /// Loads a model file that no store has registered (`score-text`, `generate-text`).
    pub fn file(path: &Path, backend: Backend) -> Result<Loaded> {
        Ok(Loaded::new(Scorer::open(path, backend)?, backend))
    }

    /// A scorer opened on `backend` without a registry record (tests and tools).
    pub fn new(scorer: Scorer, backend: Backend) -> Loaded {
        Loaded {
            scorer,
            backend: backend_name(backend),
            watched: None,
        }
    }

    /// Whether a registered model's files are still the ones it was loaded from: their identity
    /// on disk (cheap: one `stat` per file) and, when `rehash`, their bytes against the model's
    /// fingerprint.
    fn unchanged(&self, rehash: bool) -> Result<()> {
        let Some(w) = &self.watched else {
            return Ok(());
        };
        let path = Path::new(&w.record.path);
        let changed = match FileIdentity::of(path) {
            Ok(now) => w.identity.changed(&now),
            Err(_) => Some(path.to_path_buf()),
        };
        if let Some(file) = changed {
            bail!(
                "{}: the file of model {} changed while it was in use (its size, times or inode \
                 differ from when it was loaded)",
                file.display(),
                w.record.id().short()
            );
        }
        if rehash {
            check_files(&w.record)?;
        }
        Ok(())
    }
}

impl Prefill for Loaded {
    type State = State;

    fn backend(&self) -> &str {
        self.backend
    }

    fn empty_state(&self) -> State {
        self.scorer.empty_state()
    }

    fn prefill(&self, state: &State, tokens: &[u32]) -> Result<State> {
        Ok(self.scorer.prefill(state, tokens)?)
    }

    fn snapshot_bytes(&self, state: &State) -> u64 {
        state.recurrent_bytes() as u64
    }

    fn check_files(&self, rehash: bool) -> Result<()> {
        self.unchanged(rehash)
    }
}

impl Scoring for Loaded {
    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)> {
        Ok(self.scorer.split_tokens(context, labels)?)
    }

    fn score_continuation(&self, state: &State, tokens: &[u32]) -> Result<Vec<f32>> {
        Ok(self.scorer.score_continuation(state, tokens)?)
    }
}

impl Generation for Loaded {
    fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.scorer.tokenize(text)?)
    }

    fn next_logits(&self, state: &State) -> Result<Vec<f32>> {
        Ok(self.scorer.next_logits(state)?)
    }

    fn extend_each(
        &self,
        states: Vec<State>,
        runs: &[&[u32]],
        keep: &mut dyn FnMut(usize, &[f32]) -> usize,
    ) -> Result<Vec<State>> {
        Ok(self.scorer.extend_each(states, runs, keep)?)
    }

    fn decode(&self, tokens: &[u32]) -> Result<String> {
        Ok(self.scorer.decode(tokens)?)
    }

    fn end_of_generation(&self) -> Vec<u32> {
        self.scorer.end_of_generation()
    }
}

/// The model's own chat template: GGUF `tokenizer.chat_template`, or HF
/// `tokenizer_config.json`'s `chat_template`.
pub fn chat_template(record: &ModelRecord) -> Result<String> {
    let path = Path::new(&record.path);
    if path.is_dir() {
        let config = path.join("tokenizer_config.json");
        let text = std::fs::read_to_string(&config)
            .with_context(|| format!("cannot read {}", config.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not JSON", config.display()))?;
        json["chat_template"]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("{}: no chat_template", config.display()))
    } else {
        Ok(Gguf::open(path)?
            .get_str("tokenizer.chat_template")?
            .to_string())
    }
}

impl crate::benchmarks::ModelInfo for ModelRecord {
    fn chat_template(&self) -> Result<String> {
        chat_template(self)
    }
}
