//! `deltalogic model add|list|inspect|export-hf` and the developer tools.

use super::emit;
use super::Access;
use crate::eval::{models, ModelRecord};
use crate::model::scorer::Backend;
use crate::store::{Names, Store};
use anyhow::Result;
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Register a GGUF file or Hugging Face directory (same bytes, same model). Runs the checks
    /// a load runs (architecture, every metadata key and tensor, shapes, types, tokenizer and
    /// vocabulary) without reading the weights' data: a file that cannot load is refused.
    /// With --served, register a model behind an OpenAI-compatible server instead, after a
    /// conformance probe of its echoed log-probs (see docs/served.md).
    Add {
        #[arg(required_unless_present = "served")]
        path: Option<PathBuf>,
        /// An alias [default: the file name without extension, or the served model id].
        #[arg(long)]
        name: Option<String>,
        /// Numerics [default: int8 for a GGUF file with quantised weights, flex otherwise].
        #[arg(long, value_enum, conflicts_with = "served")]
        backend: Option<Backend>,
        /// The API base of an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1): a
        /// location, not part of the model's identity.
        #[arg(
            long,
            value_name = "URL",
            conflicts_with = "path",
            requires = "model_id"
        )]
        served: Option<String>,
        /// The id the server serves the model under (`GET /v1/models`).
        #[arg(long, value_name = "ID", requires = "served")]
        model_id: Option<String>,
        /// The weights' revision: a Hugging Face commit or the model file's sha256 (part of the
        /// identity; without it, two servers of one model id are one model).
        #[arg(long, value_name = "REV", requires = "served")]
        revision: Option<String>,
        /// A directory with the model's tokenizer files (tokenizer.json, tokenizer_config.json):
        /// their hash is the tokenizer's identity, and their chat template is the one deltalogic
        /// renders for chat prompts.
        #[arg(long, value_name = "DIR", requires = "served")]
        tokenizer: Option<PathBuf>,
        /// The environment variable holding the server's API key (never stored or printed).
        #[arg(long, value_name = "VAR", requires = "served")]
        api_key_env: Option<String>,
        /// Largest |Δ log-prob| the conformance probe accepts between a token's echoed log-prob
        /// and its log-prob as a completion.
        #[arg(long, default_value_t = crate::eval::served::TOLERANCE, value_parser = super::bounds::tolerance(), requires = "served")]
        tolerance: f32,
    },
    /// Registered models and their names.
    List,
    /// Describe a GGUF file or Hugging Face directory without loading its weights: family,
    /// shapes, parameter count, storage types per tensor group, tokenizer and vocabulary, chat
    /// template, context window, the numerics a load would use and the fingerprint; or exactly
    /// what is not implemented. No store is used.
    Inspect {
        path: PathBuf,
        /// Numerics to describe [default: as `model add` chooses].
        #[arg(long, value_enum)]
        backend: Option<Backend>,
    },
    /// Write a GGUF model of any family as a Hugging Face directory: f32 model.safetensors,
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

impl Command {
    /// How the command opens the store; `None`: it reads model files alone.
    pub fn access(&self) -> Option<Access> {
        match self {
            Command::Inspect { .. } | Command::ExportHf { .. } => None,
            Command::Add { .. } => Some(Access::Create),
            // As it always has: `model list` opens for writing, so an old store is migrated and
            // a store in use says so.
            Command::List => Some(Access::Create),
        }
    }
}

/// `model inspect`, which reads model files only. The fingerprint is the id `model add` gives
/// the model, computed by registering it in a temporary store.
/// Runs the subcommands on model files alone ([`Command::access`] is `None`): no store is opened.
pub fn run_file(json: bool, c: Command) -> Result<()> {
    match c {
        Command::Inspect { path, backend } => inspect(&path, backend, json),
        Command::ExportHf { model, output } => export_hf(&model, &output, json),
        Command::Add { .. } | Command::List => unreachable!("they open the store"),
    }
}

pub fn inspect(path: &Path, backend: Option<Backend>, json: bool) -> Result<()> {
    let found = crate::model::inspect::inspect(path);
    let backend = models::backend_for(path, backend).ok();
    let fingerprint = match (&found.not_implemented, backend) {
        (None, Some(b)) => {
            let dir =
                std::env::temp_dir().join(format!("deltalogic-inspect-{}", std::process::id()));
            let id = Store::open_write(&dir.join("inspect.store"))
                .and_then(|reg| models::add(&reg, path, None, b));
            let _ = std::fs::remove_dir_all(&dir);
            Some(id?.0.to_string())
        }
        _ => None,
    };
    let numerics = backend.map(models::backend_name);
    let mut out = serde_json::to_value(&found)?;
    out["numerics"] = serde_json::json!(numerics);
    out["fingerprint"] = serde_json::json!(fingerprint);
    emit(json, &out, || {
        println!("{} ({} {})", found.path, found.format, found.architecture);
        if let Some(f) = &found.family {
            println!(
                "family {}: {} layers, hidden {}, intermediate {}, heads {} / kv {} x {}, vocabulary {}",
                f.family, f.layers, f.hidden, f.intermediate, f.heads, f.kv_heads, f.head_dim, f.vocab_size
            );
            println!(
                "parameters {}; context window {} (scores up to {} positions)",
                f.parameters, f.context_window, f.position_limit
            );
            println!(
                "rope theta {} over {} dims{}{}; activation {:?}{}{}{}{}",
                f.rope_theta,
                f.rotary_dim,
                f.rope_scaling
                    .as_ref()
                    .map(|s| format!(", scaling {s}"))
                    .unwrap_or_default(),
                f.local_rope_theta
                    .map(|t| format!(", local layers theta {t}"))
                    .unwrap_or_default(),
                f.activation,
                f.sliding_window
                    .map(|w| format!("; sliding window {w} on {} layers", f.local_layers))
                    .unwrap_or_default(),
                if f.qk_norm { "; q/k norm" } else { "" },
                f.attn_softcap
                    .map(|c| format!("; attention soft-cap {c}"))
                    .unwrap_or_default(),
                f.final_softcap
                    .map(|c| format!("; logit soft-cap {c}"))
                    .unwrap_or_default(),
            );
            println!("tied embeddings: {}", f.tied_embeddings);
            // Issue 43: SmolLM3's no-rope layers, OLMo 2's norms, Mistral 3's temperature.
            let mut block = Vec::new();
            if f.no_rope_layers > 0 {
                block.push(format!("no rope on {} layers", f.no_rope_layers));
            }
            if !f.pre_norms {
                block.push("no input norms (outputs normed)".to_string());
            }
            if f.qk_norm_whole {
                block.push("q/k norm over the whole projection".to_string());
            }
            if let Some(t) = &f.attn_temperature {
                block.push(format!("attention temperature {t}"));
            }
            // Issue 45.
            if let Some(e) = &f.experts {
                block.push(format!(
                    "{} experts of width {}, {} used per token ({} active parameters), stored {:?}",
                    e.experts,
                    e.expert_intermediate,
                    e.experts_used,
                    e.active_parameters,
                    e.storage
                ));
            }
            // Gemma 4.
            if let Some(hd) = f.local_head_dim {
                block.push(format!("local layers' heads {hd} wide"));
            }
            if f.shared_kv_layers > 0 {
                block.push(format!(
                    "{} layers attend with earlier layers' keys and values",
                    f.shared_kv_layers
                ));
            }
            if let Some(i) = f.widest_intermediate {
                block.push(format!("MLP widths per layer up to {i}"));
            }
            if let Some(p) = f.per_layer_input {
                block.push(format!("per-layer token embeddings of {p} per layer"));
            }
            if !block.is_empty() {
                println!("block: {}", block.join("; "));
            }
        }
        for (group, types) in &found.tensor_types {
            let list: Vec<String> = types.iter().map(|(t, n)| format!("{t} x{n}")).collect();
            println!("  {group:<28} {}", list.join(", "));
        }
        if let Some(t) = &found.tokenizer {
            println!(
                "tokenizer {}: {} tokens, bos {:?}, eos {:?}",
                t.kind, t.vocabulary, t.bos, t.eos
            );
        }
        println!(
            "chat template: {}",
            if found.chat_template { "yes" } else { "no" }
        );
        println!("numerics: {}", numerics.unwrap_or("-"));
        match (&found.not_implemented, &fingerprint) {
            (Some(why), _) => println!("NOT LOADABLE: {why}"),
            (None, Some(id)) => println!("fingerprint: {id}"),
            (None, None) => {}
        }
    })?;
    if let Some(why) = &found.not_implemented {
        anyhow::bail!("{why}");
    }
    Ok(())
}

/// `model export-hf`, which reads and writes model files only.
pub fn export_hf(model: &Path, output: &Path, json: bool) -> Result<()> {
    let out = crate::model::format::hf_export::export(model, output)?;
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
    /// Write the random-weight GGUF files at the real models' shapes (2 layers, SmolLM3 4)
    /// that llama.cpp scores for the family goldens (scripts/llamacpp_families.py), in f32 and
    /// Q8_0.
    FamilyFiles {
        #[arg(long)]
        out: PathBuf,
        /// Only this file (a name of `model::dev::family_files::files`).
        #[arg(long)]
        only: Option<String>,
        /// Only these storage types (default f32 and q8_0; mxfp4: llama-quantize's MXFP4_MOE
        /// mix). Not `--store`: that is the global option naming the registry.
        #[arg(long)]
        storage: Vec<String>,
    },
}

pub fn dev(c: &DevCommand) -> Result<()> {
    match c {
        DevCommand::MakeFixtures(a) => super::score_text::make_fixtures(a),
        DevCommand::FamilyFiles { out, only, storage } => {
            use crate::model::dev::{family_files, gguf_write::Store};
            let stores = match storage.is_empty() {
                true => vec![Store::F32, Store::Q8_0],
                false => storage
                    .iter()
                    .map(|s| match s.as_str() {
                        "f32" => Ok(Store::F32),
                        "q8_0" => Ok(Store::Q8_0),
                        "mxfp4" => Ok(Store::Mxfp4),
                        other => Err(anyhow::anyhow!(
                            "--storage {other:?}: the storage types are f32, q8_0 and mxfp4"
                        )),
                    })
                    .collect::<Result<Vec<_>>>()?,
            };
            std::fs::create_dir_all(out)?;
            for file in family_files::files() {
                if only.as_deref().is_some_and(|o| o != file.name) {
                    continue;
                }
                let layers = (file.config)().layers;
                for &store in &stores {
                    let path = family_files::write(out, file.name, store)?;
                    println!("{} ({} shapes, {layers} layers)", path.display(), file.real);
                }
            }
            Ok(())
        }
    }
}

pub fn run(reg: &Store, json: bool, c: Command) -> Result<()> {
    match c {
        Command::Add {
            served: Some(url),
            model_id,
            revision,
            tokenizer,
            api_key_env,
            tolerance,
            name,
            ..
        } => {
            let model_id = model_id.expect("clap requires --model-id with --served");
            let r = crate::eval::served::add(
                reg,
                &crate::eval::served::Registration {
                    url: &url,
                    model_id: &model_id,
                    revision: revision.as_deref(),
                    tokenizer: tokenizer.as_deref(),
                    api_key_env: api_key_env.as_deref(),
                    name: name.as_deref(),
                    tolerance,
                },
            )?;
            emit(json, &r, || {
                println!("registered served model {} as `{}`", r.model, r.name);
                println!("  probe: {}", r.probe);
                println!("  tokenizer: {}", r.tokenizer);
                if revision.is_none() {
                    println!(
                        "  no --revision: the identity is the server's model id alone, so two \
                         servers of different weights under one id are one model"
                    );
                }
            })
        }
        Command::Add {
            path,
            name,
            backend,
            ..
        } => {
            let path = path.expect("clap requires a path without --served");
            // The checks of a load, without reading the weights: never register what cannot load.
            crate::model::scorer::check(&path)?;
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
        Command::ExportHf { .. } | Command::Inspect { .. } => run_file(json, c),
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
                    let served = crate::eval::served::is_served(&m);
                    // A served model's `path` is where it was registered (provenance, perhaps
                    // another store's); `url` is where this store asks it, null if nowhere.
                    let url = if served {
                        crate::eval::served::registered_url(reg, &id)?
                    } else {
                        None
                    };
                    Ok(serde_json::json!({"fingerprint": id, "names": aliases, "architecture": m.architecture,
                        "format": m.format, "backend": m.backend, "path": m.path, "bytes": m.bytes,
                        "served": served, "url": url}))
                })
                .collect::<Result<_>>()?;
            emit(json, &list, || {
                for m in &list {
                    println!(
                        "{}  {:<24} {} {} {}",
                        &m["fingerprint"].as_str().unwrap_or_default()[..12],
                        m["names"].to_string(),
                        m["architecture"].as_str().unwrap_or_default(),
                        m["backend"].as_str().unwrap_or_default(),
                        match (m["served"].as_bool(), m["url"].as_str()) {
                            (Some(true), Some(url)) => url,
                            (Some(true), None) => "(not registered here: model add --served)",
                            _ => m["path"].as_str().unwrap_or_default(),
                        }
                    );
                }
            })
        }
    }
}
