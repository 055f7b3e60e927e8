//! `deltalogic cache export|merge|verify|stats`: sharing score caches.

use super::emit;
use super::Access;
use crate::benchmarks;
use crate::eval::cache::{Computed, Recomputed};
use crate::eval::generate::SPECULATE_BY_DEFAULT;
use crate::eval::{self, cache, models, ModelRecord, PromptRecord};
use crate::store::{Id, Names, Record, Store};
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
    /// checked (checksum, archive, key hash), every result it adds is re-derived from the scores
    /// this store will hold (its answers must follow from them), and a seeded sample of the new
    /// scores of each model whose file is here, or whose server is registered here, is
    /// recomputed. A URL or key variable in the file is never used. A key that exists here with
    /// another value is a conflict: never overwritten, and the command exits with status 3.
    Merge {
        file: PathBuf,
        /// New scores recomputed per model before anything is merged.
        #[arg(long, default_value_t = 8, value_parser = super::bounds::count(0, super::bounds::MAX_SAMPLE))]
        verify_sample: usize,
        /// Merge without recomputing any score (they are recorded as unverified).
        #[arg(long, conflicts_with = "verify_sample")]
        no_verify: bool,
    },
    /// Check every record (checksum, rkyv validity, key = hash of content) of a cache file or the
    /// store, and re-derive every result from the records it names. A file is checked alone:
    /// no store is needed.
    Verify {
        file: Option<PathBuf>,
        /// Also recompute up to N unverified scores of each registered model whose files are
        /// here (a seeded sample); when all match, that model's unverified scores are marked
        /// verified. Works on the store.
        #[arg(long, value_name = "N", value_parser = super::bounds::count(1, super::bounds::MAX_SAMPLE))]
        recompute: Option<usize>,
    },
    /// Record counts of a cache file or the store, with unverified scores per model. A file is
    /// read alone: no store is needed.
    Stats { file: Option<PathBuf> },
}

impl Command {
    /// How the command opens the store; `None`: it reads a cache file alone, so a colleague's
    /// file can be checked before any store exists.
    pub fn access(&self) -> Option<Access> {
        match self {
            Command::Verify {
                file: Some(_),
                recompute: None,
            }
            | Command::Stats { file: Some(_) } => None,
            Command::Verify {
                recompute: None, ..
            }
            | Command::Stats { .. } => Some(Access::Read),
            // An export records the file it wrote; recomputing records what it verified.
            Command::Export { .. }
            | Command::Verify {
                recompute: Some(_), ..
            } => Some(Access::Update),
            // Merging into a new store is how a colleague's cache is first read in.
            Command::Merge { .. } => Some(Access::Create),
        }
    }
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
    store: &'a Store,
    incoming: &'a Store,
    loaded: BTreeMap<Id, Option<eval::Engine<models::Loaded>>>,
}

impl Recomputer<'_> {
    fn recompute(&mut self, c: &Computed) -> Result<Option<Recomputed>> {
        let model = c.model();
        if !self.loaded.contains_key(&model) {
            // Only a model registered here, whose files are where its record says, is used.
            // A record merged from another store may point at a path that exists only there:
            // such a model is not available here until `model add` records where it is. A served
            // model is asked only at the URL, with the key variable, it was registered with
            // here: a URL or a variable name in a cache file is never followed (its scores stay
            // unverified). An unreachable server leaves them unverified too.
            let found = match models::resolve(self.store, &model.hex()) {
                Ok((_, record)) if eval::served::is_served(&record) => {
                    eval::served::Served::open(self.store, &record, 1)
                        .ok()
                        .filter(|served| served.endpoint().served_models().is_ok())
                        .map(eval::Engine::Served)
                }
                Ok((_, record)) if std::path::Path::new(&record.path).exists() => {
                    Some(eval::Engine::Local(models::Loaded::open(&record)?))
                }
                _ => None,
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
            Computed::Score(s) => Recomputed::Logprobs(m.rescore(&prompt.text, &s.label)?),
            Computed::Generation(g) => Recomputed::Generation(m.regenerate(
                &prompt.text,
                &g.decoding,
                SPECULATE_BY_DEFAULT,
            )?),
        }))
    }
}

/// Runs the subcommands that read a cache file alone ([`Command::access`] is `None`): no store
/// is opened.
pub fn run_alone(json: bool, command: &Command) -> Result<()> {
    let (Command::Verify {
        file: Some(file), ..
    }
    | Command::Stats { file: Some(file) }) = command
    else {
        unreachable!("only verify and stats of a named file read it alone")
    };
    run_file(file, json, command)
}

/// Runs the subcommands that read one file, the store's or another: no store is opened.
pub fn run_file(file: &std::path::Path, json: bool, command: &Command) -> Result<()> {
    let reg = Store::open_read(file)?;
    reg.require_current()?;
    match command {
        Command::Verify { .. } => verify(&reg, json),
        Command::Stats { .. } => stats(&reg, json),
        _ => unreachable!("only verify and stats read a file alone"),
    }
}

fn verify(reg: &Store, json: bool) -> Result<()> {
    let mut r = cache::verify(reg, benchmarks::ALL)?;
    r.problems
        .extend(cache::verify_results(reg, benchmarks::ALL)?);
    r.problems
        .extend(crate::eval::evaluated::verify(reg, benchmarks::ALL)?);
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

fn stats(reg: &Store, json: bool) -> Result<()> {
    let r = cache::stats(reg, benchmarks::ALL)?;
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

/// What a user can do to check scores merged unverified.
const HOW_TO_VERIFY: &str = "register the model file with `deltalogic model add FILE`, then \
     `deltalogic cache verify --recompute N` recomputes N of them and marks them verified";

/// The same for a served model merged from a file.
const HOW_TO_VERIFY_SERVED: &str = "register its server here with `deltalogic model add --served \
     URL --model-id ID` (the same identity), then `deltalogic cache verify --recompute N` asks \
     it for N of them and marks them verified";

/// What `cache merge` did, and which of the models whose scores it merged unverified are served
/// models not registered here (their file's URL is never asked).
#[derive(serde::Serialize)]
struct Merged {
    #[serde(flatten)]
    report: cache::MergeReport,
    served_not_registered: Vec<String>,
}

/// The short ids of the served models of `incoming` that this store cannot ask: not registered
/// here, or merged earlier without their URL.
fn served_not_registered(reg: &Store, incoming: &Store) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (id, record) in incoming.all::<ModelRecord>()? {
        if !eval::served::is_served(&record) {
            continue;
        }
        if eval::served::registered_url(reg, &id)?.is_none() {
            out.push(id.short());
        }
    }
    Ok(out)
}

pub fn run(reg: &Store, json: bool, command: Command) -> Result<()> {
    match command {
        Command::Export { model, set, output } => {
            crate::store::guard_output(reg, &output, false)?;
            let id = reg
                .lookup(Names::Models, &model)?
                .map_or_else(|| reg.resolve(ModelRecord::KIND, &model), Ok)
                .with_context(|| format!("unknown model `{model}`"))?;
            let (records, names) = eval::share::closure(reg, benchmarks::ALL, id, &set)?;
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
            let asked = opts.sample_per_model > 0;
            let served_elsewhere = served_not_registered(reg, &other)?;
            let r = cache::merge(reg, &other, opts)?;
            let r = Merged {
                served_not_registered: served_elsewhere
                    .into_iter()
                    .filter(|m| r.unverified.contains_key(m))
                    .collect(),
                report: r,
            };
            emit(json, &r, || {
                let (served_elsewhere, r) = (&r.served_not_registered, &r.report);
                for (k, n) in &r.added {
                    println!("added {k:<12} {n}");
                }
                println!(
                    "already present: {}",
                    r.already_present.values().sum::<usize>()
                );
                if r.results_derived > 0 {
                    println!(
                        "re-derived {} result(s) from the scores this store now holds: all follow",
                        r.results_derived
                    );
                }
                for (m, n) in &r.recomputed {
                    println!("recomputed {n} sampled scores of model {m}: all match");
                }
                for (m, n) in &r.unverified {
                    if served_elsewhere.contains(m) {
                        println!(
                            "{n} scores of served model {m} merged unverified: it is not \
                             registered here, and the URL and key variable in the file are never \
                             used; to check them, {HOW_TO_VERIFY_SERVED}"
                        );
                        continue;
                    }
                    let why = if asked {
                        "this store cannot recompute them: the model is not registered here, its \
                         file is not where its record says, or its server does not answer"
                    } else {
                        "no check was asked (--no-verify)"
                    };
                    println!(
                        "{n} scores of model {m} merged unverified ({why}); to check them, \
                         {HOW_TO_VERIFY}"
                    );
                }
                for c in &r.conflicts {
                    println!("conflict {} {}: {}", c.kind, c.key.short(), c.detail);
                }
            })?;
            if !r.report.conflicts.is_empty() {
                return Err(Conflicts(r.report.conflicts.len()).into());
            }
            Ok(())
        }
        Command::Verify { file, recompute } => {
            if let Some(f) = file
                .as_ref()
                .filter(|f| !crate::store::same_file(reg.path(), f))
            {
                if recompute.is_some() {
                    bail!(
                        "{}: --recompute checks the store's unverified scores (it marks them \
                         verified there); merge the file first, or verify it without --recompute",
                        f.display()
                    );
                }
                return run_file(
                    f,
                    json,
                    &Command::Verify {
                        file: None,
                        recompute,
                    },
                );
            }
            if let Some(n) = recompute {
                let mut recomputer = Recomputer {
                    store: reg,
                    incoming: reg,
                    loaded: BTreeMap::new(),
                };
                let mut recompute = |c: &Computed| recomputer.recompute(c);
                let r = cache::recheck_unverified(
                    reg,
                    n,
                    0,
                    cache::Tolerance::DEFAULT,
                    &mut recompute,
                )?;
                emit(json, &r, || {
                    for (m, n) in &r.recomputed {
                        println!(
                            "recomputed {n} unverified scores of model {m}: all match; {} marked \
                             verified",
                            r.verified[m]
                        );
                    }
                    for (m, n) in &r.unavailable {
                        println!(
                            "{n} unverified scores of model {m} left unverified: its file is not \
                             here ({HOW_TO_VERIFY})"
                        );
                    }
                })?;
            }
            verify(reg, json)
        }
        Command::Stats { file } => match file.filter(|f| !crate::store::same_file(reg.path(), f)) {
            Some(f) => run_file(&f, json, &Command::Stats { file: None }),
            None => stats(reg, json),
        },
    }
}
