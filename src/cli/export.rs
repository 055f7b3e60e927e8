//! `deltalogic export items`: any benchmark's items as JSONL, one object per set member, as the
//! benchmark exports them (`Benchmark::export`). `deltalogic export samples`: a set's stored
//! results as lm-evaluation-harness 0.4 files (`report::lm_eval`). `deltalogic export table`:
//! results, scores or items as a Parquet or CSV table (`report::frames`). `deltalogic export
//! dataset`: a set's items as a Hugging Face dataset folder (`report::dataset_card`).

use super::output;
use super::Access;
use crate::benchmarks::{self, Benchmark, Decoding, Models, Prepared};
use crate::eval::generate::SPECULATE_BY_DEFAULT;
use crate::eval::{self, models::Loaded, Engine, ModelRecord, Normalisation, ResultRecord};
use crate::report::table::{self, Table};
use crate::report::{self, dataset_card, frames, lm_eval, lm_eval_task, Entry};
use crate::store::{Id, Store, StoredSet};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Which stored results an export reads.
#[derive(clap::Args, Debug)]
pub struct Selection {
    /// The set's name.
    #[arg(long)]
    set: String,
    /// Only these models (names) [default: every model with a result on the set].
    #[arg(long, num_args = 1..)]
    models: Vec<String>,
    /// Only results under these normalisations (`all`, names as `score --norm` takes them, or
    /// lm-eval's `acc`, `acc_norm`, `acc_bytes`) [default: every stored one].
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    norm: Vec<String>,
}

/// What `export table` tabulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    /// One row per turn of each result: answer, gold label, correct.
    Results,
    /// One row per label of each scored turn: score key, log-likelihood, normalised value.
    Scores,
    /// One row per item of the set: the benchmark's export, its fields as columns.
    Items,
}

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
    /// A set's stored results as lm-evaluation-harness 0.4 files, in its schema and naming:
    /// per model, `DIR/<model>/samples_<task>_<datetime>.jsonl` for each result (one line per
    /// scored turn: prompt and labels, each label's log-likelihood and is-greedy flag, target,
    /// `acc`/`acc_norm`/`acc_bytes`, hashes; the result's own normalisation and ids under
    /// `deltalogic`) and one `DIR/<model>/results_<datetime>.json` (lm-eval's aggregates, configs
    /// and run fields, the benchmark's metrics under `deltalogic`). Scores are read from the
    /// store; is-greedy is computed with the model (one greedy decode per prompt).
    Samples {
        #[command(flatten)]
        select: Selection,
        /// The output directory.
        #[arg(short, long)]
        output: PathBuf,
        /// Overwrite existing files that are not this tool's own previous output.
        #[arg(long)]
        force: bool,
    },
    /// A set as an lm-evaluation-harness 0.4 task folder: `DIR/<task>.yaml`, its docs
    /// `DIR/<task>.jsonl` and `DIR/utils.py`, which `lm_eval --include_path DIR --tasks <task>`
    /// runs with any backend, asking the prompts and continuations deltalogic scores (a later
    /// turn once per earlier answer) and computing the benchmark's metrics (revision accuracy,
    /// inertia, over-flip, abstention, per edit type) in the task's aggregation.
    LmEvalTask {
        /// The set's name.
        #[arg(long)]
        set: String,
        /// The prompt template [default: the benchmark's first].
        #[arg(long)]
        template: Option<String>,
        /// The model whose chat template renders the prompts (templates written as chat turns
        /// only).
        #[arg(long)]
        model: Option<String>,
        /// The normalisation the task answers under: `sum`, `per-char` or `byte` (lm-eval's
        /// `acc`, `acc_norm`, `acc_bytes`).
        #[arg(long, default_value = "sum")]
        norm: String,
        /// The output directory.
        #[arg(short, long)]
        output: PathBuf,
        /// Overwrite existing files that are not this tool's own previous output.
        #[arg(long)]
        force: bool,
    },
    /// A set's stored results, scores or items as one table (docs/tables.md gives the columns).
    Table {
        #[command(flatten)]
        select: Selection,
        #[arg(long, value_enum)]
        what: What,
        #[arg(long, value_enum, default_value = "parquet")]
        format: table::Format,
        /// The output file.
        #[arg(short, long)]
        output: PathBuf,
        /// Overwrite an existing file that is not this tool's own previous output.
        #[arg(long)]
        force: bool,
    },
    /// A set's items as a Hugging Face dataset folder: `DIR/data/test-00000-of-00001.parquet`
    /// (the `items` table) and `DIR/README.md`, its dataset card (schema, generator, seed,
    /// version), which `datasets.load_dataset(DIR)` reads.
    Dataset {
        /// The set's name.
        #[arg(long)]
        set: String,
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
            Command::Items { output: None, .. } => Access::Read,
            _ => Access::Update,
        }
    }
}

pub fn run(reg: &Store, command: Command) -> Result<()> {
    match command {
        Command::Items { set, output, force } => items(reg, &set, output, force),
        Command::Samples {
            select,
            output,
            force,
        } => samples(reg, &select, &output, force),
        Command::Table {
            select,
            what,
            format,
            output,
            force,
        } => table(reg, &select, what, format, &output, force),
        Command::Dataset { set, output, force } => dataset(reg, &set, &output, force),
        Command::LmEvalTask {
            set,
            template,
            model,
            norm,
            output,
            force,
        } => lm_eval_task(reg, &set, template, model, &norm, &output, force),
    }
}

/// The set named `set` and its benchmark.
fn set_named(reg: &Store, set: &str) -> Result<(Id, StoredSet, &'static dyn Benchmark)> {
    let Some((id, stored)) = reg.set_by_name(set)? else {
        bail!("no set named `{set}` in {}", reg.path().display());
    };
    let benchmark = benchmarks::ALL.named(&stored.benchmark)?;
    Ok((id, stored, benchmark))
}

fn items(reg: &Store, set: &str, output: Option<PathBuf>, force: bool) -> Result<()> {
    let (_, stored, benchmark) = set_named(reg, set)?;
    let items = benchmark.export(reg, &stored)?;
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

/// A selected result with what reads it: its report entry, record and the benchmark's questions
/// under its template.
struct Selected {
    entry: Entry,
    id: Id,
    result: ResultRecord,
    prepared: Box<dyn Prepared>,
}

/// The stored results `select` names, each prepared by its benchmark; refused when none.
fn selected(reg: &Store, select: &Selection) -> Result<Vec<Selected>> {
    let (_, stored, benchmark) = set_named(reg, &select.set)?;
    let mut entries = report::entries(
        reg,
        benchmarks::ALL,
        &select.models,
        std::slice::from_ref(&select.set),
    )?;
    if !select.norm.is_empty() {
        let keep = Normalisation::parse_list(&select.norm)?;
        entries.retain(|e| keep.iter().any(|n| n.as_str() == e.normalisation));
    }
    if entries.is_empty() {
        bail!(
            "no stored results on set `{}` to export: score it first (`deltalogic score`)",
            select.set
        );
    }
    entries
        .into_iter()
        .map(|entry| {
            let (id, result) = lm_eval::result(reg, &entry)?;
            let model_id = Id(result.model);
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
                .with_context(|| format!("result {}", id.short()))?;
            Ok(Selected {
                entry,
                id,
                result,
                prepared,
            })
        })
        .collect()
}

fn samples(reg: &Store, select: &Selection, dir: &Path, force: bool) -> Result<()> {
    let chosen = selected(reg, select)?;
    let (_, stored, benchmark) = set_named(reg, &select.set)?;
    let docs = benchmark.export(reg, &stored)?;
    let mut engines: BTreeMap<Id, Engine<Loaded>> = BTreeMap::new();
    let mut decoded: BTreeMap<(Id, String, usize), Vec<u32>> = BTreeMap::new();
    let mut greedy = |model: Id, prompt: &str, max_tokens: usize| -> Result<Vec<u32>> {
        let key = (model, prompt.to_string(), max_tokens);
        if let Some(tokens) = decoded.get(&key) {
            return Ok(tokens.clone());
        }
        if let std::collections::btree_map::Entry::Vacant(slot) = engines.entry(model) {
            let record = reg
                .get::<ModelRecord>(&model)?
                .with_context(|| format!("model {} is missing", model.short()))?;
            let engine = eval::models::engine(reg, &record, 1)
                .with_context(|| format!("model {} ({})", model.short(), record.path))?;
            slot.insert(engine);
        }
        let decoding = Decoding {
            max_tokens: u32::try_from(max_tokens)?,
            stop: Vec::new(),
        };
        let tokens = engines[&model]
            .regenerate(prompt, &decoding, SPECULATE_BY_DEFAULT)?
            .tokens;
        decoded.insert(key, tokens.clone());
        Ok(tokens)
    };
    // One lm-eval run per model: its tasks' samples files and one results file.
    let mut runs: BTreeMap<String, Vec<lm_eval::Task>> = BTreeMap::new();
    for s in &chosen {
        let task = lm_eval::task(
            reg,
            &s.entry,
            (s.id, &s.result),
            &*s.prepared,
            &docs,
            &mut greedy,
        )?;
        runs.entry(s.entry.model.clone()).or_default().push(task);
    }
    let mut written = 0;
    for (model, tasks) in &runs {
        let latest = tasks.iter().map(|t| t.latest).max().unwrap_or(0);
        let date = lm_eval::date_id(&super::audit::utc(latest));
        let folder = dir.join(lm_eval::file_safe(model));
        let results = lm_eval::results(reg, model, tasks)?;
        let files = tasks
            .iter()
            .map(|t| {
                (
                    format!("samples_{}_{date}.jsonl", t.name),
                    t.samples.as_str(),
                )
            })
            .chain([(format!("results_{date}.json"), results.as_str())]);
        for (name, text) in files {
            output::write(reg, &folder.join(name), text.as_bytes(), force)?;
            written += 1;
        }
    }
    eprintln!(
        "{written} files for {} results written under {}",
        chosen.len(),
        dir.display()
    );
    Ok(())
}

/// The items of set `set` as a table.
fn items_table(reg: &Store, set: &str) -> Result<(Table, StoredSet, &'static str)> {
    let (id, stored, benchmark) = set_named(reg, set)?;
    let docs = benchmark.export(reg, &stored)?;
    Ok((frames::items(set, id, &docs)?, stored, benchmark.name()))
}

fn table(
    reg: &Store,
    select: &Selection,
    what: What,
    format: table::Format,
    path: &Path,
    force: bool,
) -> Result<()> {
    let table = match what {
        What::Items => items_table(reg, &select.set)?.0,
        What::Results | What::Scores => {
            let chosen = selected(reg, select)?;
            let sources: Vec<frames::Source> = chosen
                .iter()
                .map(|s| frames::Source {
                    entry: &s.entry,
                    id: s.id,
                    result: &s.result,
                    prepared: &*s.prepared,
                })
                .collect();
            if what == What::Results {
                frames::results(reg, &sources)?
            } else {
                frames::scores(reg, &sources)?
            }
        }
    };
    output::write(reg, path, &table.render(format)?, force)?;
    eprintln!("{} rows written to {}", table.len(), path.display());
    Ok(())
}

fn dataset(reg: &Store, set: &str, dir: &Path, force: bool) -> Result<()> {
    let (table, stored, benchmark) = items_table(reg, set)?;
    let card = dataset_card::card(reg, set, &stored, benchmark, &table)?;
    output::write(
        reg,
        &dir.join(dataset_card::DATA_FILE),
        &table.render(table::Format::Parquet)?,
        force,
    )?;
    output::write(reg, &dir.join("README.md"), card.as_bytes(), force)?;
    eprintln!(
        "{} items of `{set}` written to {} as a dataset",
        table.len(),
        dir.display()
    );
    Ok(())
}

/// Prompts written without a model: a template that needs its chat template is refused.
struct NoModel;

impl benchmarks::ModelInfo for NoModel {
    fn chat_template(&self) -> Result<String> {
        bail!("this template renders the model's chat template: name the model with --model")
    }
}

fn lm_eval_task(
    reg: &Store,
    set: &str,
    template: Option<String>,
    model: Option<String>,
    norm: &str,
    dir: &Path,
    force: bool,
) -> Result<()> {
    let (set_id, stored, benchmark) = set_named(reg, set)?;
    let template = template.unwrap_or_else(|| benchmark.templates()[0].to_string());
    let norm = Normalisation::parse_list(&[norm.to_string()])?;
    let [norm] = norm[..] else {
        bail!("--norm takes one normalisation");
    };
    let record = model.map(|m| eval::models::resolve(reg, &m)).transpose()?;
    let subject: &dyn benchmarks::ModelInfo = match &record {
        Some((_, r)) => r,
        None => &NoModel,
    };
    let judge = record.as_ref().map_or(Id([0; 32]), |(id, _)| *id);
    let prepared = benchmark.prepare(reg, &stored, &template, &Models { subject, judge })?;
    let views = benchmark.views(reg, &stored)?;
    // lm-eval reads the data file from wherever it runs: its path is absolute.
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let name_of = |name: &str| dir.join(format!("{name}.jsonl"));
    let source = lm_eval_task::Source {
        benchmark: benchmark.name(),
        set,
        set_id,
        template: &template,
        prepared: &*prepared,
        views: &views,
        norm,
    };
    let task = lm_eval_task::folder(&source, &name_of(&lm_eval_task::name(&source)))?;
    output::write(reg, &name_of(&task.name), task.data.as_bytes(), force)?;
    output::write(
        reg,
        &dir.join(format!("{}.yaml", task.name)),
        task.yaml.as_bytes(),
        force,
    )?;
    output::write(reg, &dir.join("utils.py"), task.utils.as_bytes(), force)?;
    eprintln!(
        "task `{}` ({} docs; metrics {}) written to {}",
        task.name,
        task.docs,
        task.metrics.join(", "),
        dir.display()
    );
    Ok(())
}
