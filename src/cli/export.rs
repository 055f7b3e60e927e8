//! `deltalogic export items`: any benchmark's items as JSONL, one object per set member, as the
//! benchmark exports them (`Benchmark::export`). `deltalogic export samples`: a set's stored
//! results in lm-evaluation-harness's `samples_*.jsonl` / `results_*.json` shapes
//! (`report::lm_eval`).

use super::output;
use super::Access;
use crate::benchmarks::{self, Models};
use crate::eval::{ModelRecord, Normalisation};
use crate::report::{self, lm_eval};
use crate::store::{Id, Store};
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// The items of a set as JSONL.
    Items {
        /// The set's name.
        #[arg(long)]
        set: String,
        /// Output file [default: standard output].
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Overwrite an existing output file.
        #[arg(long)]
        force: bool,
    },
    /// A set's stored results as lm-evaluation-harness files: for each result,
    /// `DIR/<model>/samples_<task>.jsonl` (one line per scored turn: prompt and labels, each
    /// label's log-likelihood, target, prediction, `acc`, hashes, score keys) and
    /// `DIR/<model>/results_<task>.json` (aggregate `acc`, the benchmark's metrics, the config).
    /// Nothing is computed: scores are read from the store.
    Samples {
        /// The set's name.
        #[arg(long)]
        set: String,
        /// Only these models (names) [default: every model with a result on the set].
        #[arg(long, num_args = 1..)]
        models: Vec<String>,
        /// Only results under these normalisations (`all`, or names as `score --norm` takes
        /// them) [default: every stored one].
        #[arg(long, num_args = 1.., value_delimiter = ',')]
        norm: Vec<String>,
        /// The output directory.
        #[arg(short, long)]
        output: PathBuf,
        /// Overwrite existing files that are not this tool's own previous output.
        #[arg(long)]
        force: bool,
    },
}

impl Command {
    /// How the command opens the store: reading, or recording the files an export writes.
    pub fn access(&self) -> Access {
        match self {
            Command::Items {
                output: Some(_), ..
            }
            | Command::Samples { .. } => Access::Update,
            Command::Items { .. } => Access::Read,
        }
    }
}

pub fn run(reg: &Store, command: Command) -> Result<()> {
    match command {
        Command::Items { set, output, force } => items(reg, &set, output, force),
        Command::Samples {
            set,
            models,
            norm,
            output,
            force,
        } => samples(reg, &set, &models, &norm, &output, force),
    }
}

fn items(reg: &Store, set: &str, output: Option<PathBuf>, force: bool) -> Result<()> {
    let Some((_, stored)) = reg.set_by_name(set)? else {
        bail!("no set named `{set}` in {}", reg.path().display());
    };
    let items = benchmarks::ALL
        .named(&stored.benchmark)?
        .export(reg, &stored)?;
    let mut lines = Vec::new();
    for item in &items {
        writeln!(lines, "{}", serde_json::to_string(item)?)?;
    }
    match output {
        Some(p) => {
            output::write(reg, &p, &lines, force)?;
            eprintln!("{} items written to {}", items.len(), p.display());
        }
        None => std::io::stdout().lock().write_all(&lines)?,
    }
    Ok(())
}

fn samples(
    reg: &Store,
    set: &str,
    models: &[String],
    norm: &[String],
    dir: &std::path::Path,
    force: bool,
) -> Result<()> {
    let Some((_, stored)) = reg.set_by_name(set)? else {
        bail!("no set named `{set}` in {}", reg.path().display());
    };
    let benchmark = benchmarks::ALL.named(&stored.benchmark)?;
    let mut entries = report::entries(reg, benchmarks::ALL, models, &[set.to_string()])?;
    if !norm.is_empty() {
        let keep = Normalisation::parse_list(norm)?;
        entries.retain(|e| keep.iter().any(|n| n.as_str() == e.normalisation));
    }
    if entries.is_empty() {
        bail!("no stored results on set `{set}` to export: score it first (`deltalogic score`)");
    }
    let docs = benchmark.export(reg, &stored)?;
    let mut written = 0;
    for entry in &entries {
        let (rid, r) = lm_eval::result(reg, entry)?;
        let model_id = Id(r.model);
        let model = reg
            .get::<ModelRecord>(&model_id)?
            .with_context(|| format!("model {} is missing", model_id.short()))?;
        // The judge only names CLoMo's template, and no judged turn has a target.
        let prepared = benchmark
            .prepare(
                reg,
                &stored,
                &entry.template,
                &Models {
                    subject: &model,
                    judge: model_id,
                },
            )
            .with_context(|| format!("result {}", rid.short()))?;
        let files = lm_eval::files(reg, entry, (rid, &r), &*prepared, &docs)?;
        let folder = dir.join(lm_eval::file_safe(&entry.model));
        for (name, text) in [files.samples, files.results] {
            output::write(reg, &folder.join(name), text.as_bytes(), force)?;
            written += 1;
        }
    }
    eprintln!(
        "{written} files for {} results written under {}",
        entries.len(),
        dir.display()
    );
    Ok(())
}
