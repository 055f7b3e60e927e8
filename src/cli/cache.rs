//! `deltalogic cache export|merge|verify|stats`: sharing score caches.

use super::emit;
use crate::eval::cache::{Computed, Recomputed};
use crate::eval::{self, cache, models, PromptRecord};
use crate::store::{Id, Kind, Names, Registry};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Write a self-contained cache file: the scores of a model on a set, with the prompts,
    /// templates, items, set and model record they refer to.
    Export {
        #[arg(long)]
        model: String,
        #[arg(long)]
        set: String,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Add a colleague's cache file: a union of content-addressed records after every record is
    /// checked (checksum, archive, key hash) and a seeded sample of the new scores of each model
    /// whose file is here is recomputed. A key that exists here with another value is a conflict:
    /// never overwritten, and the command exits with status 3.
    Merge {
        file: PathBuf,
        /// New scores recomputed per model before anything is merged.
        #[arg(long, default_value_t = 8)]
        verify_sample: usize,
        /// Merge without recomputing any score (they are recorded as unverified).
        #[arg(long, conflicts_with = "verify_sample")]
        no_verify: bool,
    },
    /// Check every record (checksum, rkyv validity, key = hash of content) of a cache file or the
    /// store.
    Verify { file: Option<PathBuf> },
    /// Record counts of a cache file or the store, with unverified scores per model.
    Stats { file: Option<PathBuf> },
}

/// The exit status of a merge that reported conflicts (documented in the README).
pub const CONFLICT_STATUS: u8 = 3;

/// A merge that kept our records over conflicting ones: reported, then exit status 3.
#[derive(Debug)]
pub struct Conflicts(pub usize);

impl std::fmt::Display for Conflicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} conflict(s): the original records were kept", self.0)
    }
}

impl std::error::Error for Conflicts {}

/// Recomputes incoming scores with the models whose files are registered here, loading each
/// once; `None` for a model this store cannot load.
struct Recomputer<'a> {
    store: &'a Registry,
    incoming: &'a Registry,
    loaded: BTreeMap<Id, Option<models::Loaded>>,
}

impl Recomputer<'_> {
    fn recompute(&mut self, c: &Computed) -> Result<Option<Recomputed>> {
        let model = c.model();
        if !self.loaded.contains_key(&model) {
            // Only a model registered here, whose files are where its record says, is used.
            let found = match models::resolve(self.store, &model.hex()) {
                Ok((_, record)) => Some(models::Loaded::open(&record)?),
                Err(_) => None,
            };
            self.loaded.insert(model, found);
        }
        let Some(m) = &self.loaded[&model] else {
            return Ok(None);
        };
        let prompt_id = match c {
            Computed::Score(s) => Id(s.prompt),
            Computed::Generation(g) => Id(g.prompt),
        };
        let prompt = self
            .incoming
            .get::<PromptRecord>(&prompt_id)?
            .with_context(|| format!("the cache file lacks prompt {}", prompt_id.short()))?;
        Ok(Some(match c {
            Computed::Score(s) => Recomputed::Logprobs(eval::rescore(m, &prompt.text, &s.label)?),
            Computed::Generation(g) => {
                Recomputed::Generation(eval::regenerate(m, &prompt.text, &g.decoding)?)
            }
        }))
    }
}

pub fn run(reg: &Registry, json: bool, command: Command) -> Result<()> {
    let open_other = |file: &Option<PathBuf>| -> Result<Option<Registry>> {
        file.as_ref()
            .filter(|f| !crate::store::same_file(reg.path(), f))
            .map(|f| {
                let other = Registry::open_read(f)?;
                other.require_current()?;
                Ok(other)
            })
            .transpose()
    };
    match command {
        Command::Export { model, set, output } => {
            crate::store::guard_output(reg, &output, false)?;
            let id = reg
                .lookup(Names::Models, &model)?
                .map_or_else(|| reg.resolve(Kind::Model, &model), Ok)
                .with_context(|| format!("unknown model `{model}`"))?;
            let (records, names) = eval::share::closure(reg, id, &set)?;
            let r = cache::export(reg, &records, &names, &output)?;
            emit(json, &r, || {
                let total: usize = r.records.values().sum();
                println!("{total} records written to {}", r.file);
                for (k, n) in &r.records {
                    println!("  {k:<12} {n}");
                }
            })
        }
        Command::Merge {
            file,
            verify_sample,
            no_verify,
        } => {
            let other = cache::open_incoming(reg, &file)?;
            let mut recomputer = Recomputer {
                store: reg,
                incoming: &other,
                loaded: BTreeMap::new(),
            };
            let mut recompute = |c: &Computed| recomputer.recompute(c);
            let mut opts = cache::MergeOptions::new(&mut recompute);
            opts.sample_per_model = if no_verify { 0 } else { verify_sample };
            opts.tolerance = eval::SCORE_TOLERANCE;
            let r = cache::merge(reg, &other, opts)?;
            emit(json, &r, || {
                for (k, n) in &r.added {
                    println!("added {k:<12} {n}");
                }
                println!(
                    "already present: {}",
                    r.already_present.values().sum::<usize>()
                );
                for (m, n) in &r.recomputed {
                    println!("recomputed {n} sampled scores of model {m}: all match");
                }
                for (m, n) in &r.unverified {
                    println!("{n} scores of model {m} merged unverified (no check was possible or asked)");
                }
                for c in &r.conflicts {
                    println!("conflict {} {}: {}", c.kind, c.key.short(), c.detail);
                }
            })?;
            if !r.conflicts.is_empty() {
                return Err(Conflicts(r.conflicts.len()).into());
            }
            Ok(())
        }
        Command::Verify { file } => {
            let other = open_other(&file)?;
            let r = cache::verify(other.as_ref().unwrap_or(reg))?;
            emit(json, &r, || {
                for (k, c) in &r.kinds {
                    println!("{k:<12} {} records, {} bad", c.records, c.bad);
                }
                for p in &r.problems {
                    println!("problem: {p}");
                }
            })?;
            if !r.problems.is_empty() {
                bail!("{}: {} problem(s)", r.file, r.problems.len());
            }
            Ok(())
        }
        Command::Stats { file } => {
            let other = open_other(&file)?;
            let r = cache::stats(other.as_ref().unwrap_or(reg))?;
            emit(json, &r, || {
                println!("{}: {} bytes", r.file, r.bytes);
                for (k, n) in &r.records {
                    println!("  {k:<12} {n}");
                }
                for (m, n) in &r.scores_per_model {
                    println!("  scores of model {m}: {n}");
                }
                for (m, n) in &r.unverified_per_model {
                    println!("  unverified scores of model {m}: {n}");
                }
            })
        }
    }
}
