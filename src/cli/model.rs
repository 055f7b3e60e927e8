//! `deltalogic model add|list|export-hf` and the developer tools.

use super::emit;
use crate::eval::{models, ModelRecord};
use crate::model::scorer::Backend;
use crate::store::{Names, Registry};
use anyhow::Result;
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Register a GGUF file or Hugging Face directory (same bytes, same model).
    Add {
        path: PathBuf,
        /// An alias [default: the file name without extension].
        #[arg(long)]
        name: Option<String>,
        /// Numerics [default: int8 for a GGUF file with quantised weights, flex otherwise].
        #[arg(long, value_enum)]
        backend: Option<Backend>,
    },
    /// Registered models and their names.
    List,
    /// Write a GGUF model (llama, qwen2) as a Hugging Face directory: f32 model.safetensors,
    /// config.json, tokenizer.json built from the GGUF metadata. Scoring the directory gives the
    /// same bits as scoring the file; no store is used.
    ExportHf {
        /// The GGUF file.
        #[arg(long)]
        model: PathBuf,
        /// The directory to write (created; must be empty if it exists).
        #[arg(short, long)]
        output: PathBuf,
    },
}

/// `model export-hf`, which reads and writes model files only.
pub fn export_hf(model: &Path, output: &Path, json: bool) -> Result<()> {
    let out = crate::model::hf_export::export(model, output)?;
    emit(json, &out, || {
        println!(
            "wrote {} ({} {} tensors, {} bytes of weights): {}",
            out.dir.display(),
            out.architecture,
            out.tensors,
            out.weight_bytes,
            out.files.join(", ")
        )
    })
}

#[derive(clap::Subcommand, Debug)]
pub enum DevCommand {
    /// Write the tiny random-weight model fixtures of every architecture.
    MakeFixtures(super::score_text::MakeFixturesArgs),
}

pub fn dev(c: &DevCommand) -> Result<()> {
    let DevCommand::MakeFixtures(a) = c;
    super::score_text::make_fixtures(a)
}

pub fn run(reg: &Registry, json: bool, c: Command) -> Result<()> {
    match c {
        Command::Add {
            path,
            name,
            backend,
        } => {
            let backend = models::backend_for(&path, backend)?;
            let (id, added) = models::add(reg, &path, name.as_deref(), backend)?;
            let out = serde_json::json!({"fingerprint": id, "added": added});
            emit(json, &out, || {
                println!(
                    "{} model {id}",
                    match added {
                        models::Added::New => "registered",
                        models::Added::Known => "already registered:",
                        models::Added::Relocated => "new location recorded for",
                    }
                )
            })
        }
        Command::ExportHf { .. } => unreachable!("handled before the store opens"),
        Command::List => {
            let names = reg.names(Names::Models)?;
            let list: Vec<_> = reg
                .all::<ModelRecord>()?
                .into_iter()
                .map(|(id, m)| {
                    let aliases: Vec<&str> = names
                        .iter()
                        .filter(|(_, i)| *i == id)
                        .map(|(n, _)| n.as_str())
                        .collect();
                    serde_json::json!({"fingerprint": id, "names": aliases, "architecture": m.architecture,
                        "format": m.format, "backend": m.backend, "path": m.path, "bytes": m.bytes})
                })
                .collect();
            emit(json, &list, || {
                for m in &list {
                    println!(
                        "{}  {:<24} {} {} {}",
                        &m["fingerprint"].as_str().unwrap_or_default()[..12],
                        m["names"].to_string(),
                        m["architecture"].as_str().unwrap_or_default(),
                        m["backend"].as_str().unwrap_or_default(),
                        m["path"].as_str().unwrap_or_default()
                    );
                }
            })
        }
    }
}
