//! Models in the registry: registered by fingerprint (model files + numerics), named by alias,
//! and checked against their files before every use.

use super::{LanguageModel, ModelRecord};
use crate::model::gguf::Gguf;
use crate::model::scorer::{Backend, Scorer};
use crate::model::transformer::State;
use crate::registry::{Id, Names, Registry};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Names the numerics that produce scores; part of every fingerprint, so a change to how
/// scores are computed gives new model ids (old scores stay, attributed to the old ones).
pub const SCORER_VERSION: &str = "fixed-order-f32-scorer-2";

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

/// blake3 over every model file (name, length, bytes), and the total size.
pub fn content_hash(path: &Path) -> Result<(String, u64)> {
    let mut h = blake3::Hasher::new();
    let mut total = 0;
    for f in model_files(path)? {
        let mut file =
            std::fs::File::open(&f).with_context(|| format!("cannot read {}", f.display()))?;
        h.update(
            f.file_name()
                .map(|n| n.as_encoded_bytes())
                .unwrap_or_default(),
        );
        let len = file.metadata()?.len();
        h.update(&len.to_le_bytes());
        std::io::copy(&mut file, &mut h).with_context(|| format!("cannot read {}", f.display()))?;
        total += len;
    }
    Ok((h.finalize().to_hex().to_string(), total))
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

/// Registers a model (idempotent: the same files and numerics are the same model). Returns its
/// fingerprint and whether it was new.
pub fn add(
    reg: &Registry,
    path: &Path,
    name: Option<&str>,
    backend: Backend,
) -> Result<(Id, bool)> {
    let (format, arch) = architecture(path)?;
    let (hash, bytes) = content_hash(path)?;
    let record = ModelRecord {
        files_blake3: hash,
        backend: backend_name(backend).into(),
        // Activations: f32, or 8-bit blocks in the integer mode.
        dtype: match backend {
            Backend::Flex => "f32",
            Backend::Int8 => "q8",
        }
        .into(),
        scorer_version: SCORER_VERSION.into(),
        format,
        architecture: arch,
        path: std::fs::canonicalize(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string(),
        bytes,
    };
    let default_name = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = name.unwrap_or(&default_name);
    reg.write(|w| {
        let (id, new) = w.put(&record)?;
        w.name(Names::Models, name, id)?;
        Ok((id, new))
    })
}

/// A model by name or fingerprint prefix, after checking its files are the ones registered.
pub fn resolve(reg: &Registry, name: &str) -> Result<(Id, ModelRecord)> {
    let id = match reg.lookup(Names::Models, name)? {
        Some(id) => id,
        None => reg
            .resolve(crate::registry::Kind::Model, name)
            .with_context(|| format!("unknown model `{name}` (see `deltalogic model list`)"))?,
    };
    let record = reg
        .get::<ModelRecord>(&id)?
        .with_context(|| format!("model `{name}` has no record"))?;
    let (hash, _) = content_hash(Path::new(&record.path))
        .with_context(|| format!("model `{name}` was registered from {}", record.path))?;
    if hash != record.files_blake3 {
        bail!(
            "{}: the model files changed since they were registered as `{name}` ({}); \
             run `deltalogic model add` again to register the new files as a new model",
            record.path,
            id.short()
        );
    }
    Ok((id, record))
}

/// A loaded model with the backend it runs on.
pub struct Loaded {
    scorer: Scorer,
    backend: &'static str,
}

impl Loaded {
    pub fn open(record: &ModelRecord) -> Result<Loaded> {
        let backend = match record.backend.as_str() {
            "flex" => Backend::Flex,
            "int8" => Backend::Int8,
            other => bail!("model backend `{other}` is not built into this deltalogic"),
        };
        Ok(Loaded {
            scorer: Scorer::open(Path::new(&record.path), backend)?,
            backend: backend_name(backend),
        })
    }
}

impl LanguageModel for Loaded {
    type State = State;

    fn backend(&self) -> &str {
        self.backend
    }

    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)> {
        Ok(self.scorer.split_tokens(context, labels)?)
    }

    fn empty_state(&self) -> State {
        self.scorer.empty_state()
    }

    fn prefill(&self, state: &State, tokens: &[u32]) -> Result<State> {
        Ok(self.scorer.prefill(state, tokens)?)
    }

    fn score_continuation(&self, state: &State, tokens: &[u32]) -> Result<Vec<f32>> {
        Ok(self.scorer.score_continuation(state, tokens)?)
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
