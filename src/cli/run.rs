//! `deltalogic run`, the main job: fetch the default model, build the default set from generated
//! theories, score it under every normalisation, write the full report beside the store, and end
//! with a short summary: the headline numbers under the default normalisation, the conclusions
//! that flip under the others, where the full report and figure are, and what to try next.

use super::output;
use super::score::{self, RunArgs};
use crate::benchmarks::{self, deltalogic};
use crate::eval::{models, Normalisation};
use crate::report::{self, robustness::Conclusion, Entry, Format};
use crate::store::Store;
use anyhow::{Context, Result};
use std::path::PathBuf;

/// The default model of `run`: SmolLM2-135M-Instruct (Q4_1), in the models directory (see
/// [`super::fetch::models_dir`]).
const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const DEFAULT_MODEL_NAME: &str = "smollm2-135m";
const DEFAULT_SET: &str = "default";

/// The report files `run` writes beside the store, named after it.
#[derive(serde::Serialize)]
struct Files {
    markdown: PathBuf,
    csv: PathBuf,
    json: PathBuf,
    figure: PathBuf,
    /// The explorable report: every number opens the episodes it counts.
    html: PathBuf,
}

pub fn run(reg: &Store, json: bool, a: RunArgs) -> Result<()> {
    let path = super::fetch::model(&super::fetch::models_dir()?, "smollm2", DEFAULT_MODEL_FILE)?;
    let backend = models::backend_for(&path, a.backend)?;
    let (model_id, _) = models::add(reg, &path, Some(DEFAULT_MODEL_NAME), backend)?;
    let spec = deltalogic::BuildSpec {
        seed: a.seed,
        from: deltalogic::PremiseSource::Generated,
        per_type: None,
        extended: false,
    };
    let built = deltalogic::build(reg, &spec, DEFAULT_SET)?;
    let args =
        score::Args::every_normalisation(DEFAULT_MODEL_NAME, DEFAULT_SET, a.compute, a.speculation);
    let out = score::score(reg, &args, json)?;
    let entries = report::entries(
        reg,
        benchmarks::ALL,
        &[DEFAULT_MODEL_NAME.to_string()],
        &[DEFAULT_SET.to_string()],
    )?;
    let files = write_report(reg, &entries)?;
    if json {
        let doc = serde_json::json!({
            "model": model_id, "set": built.set, "score": out, "results": entries, "files": files,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "model `{DEFAULT_MODEL_NAME}` = {} ({}); set `{DEFAULT_SET}` = {} ({} episodes, {} new)",
            model_id.short(),
            path.display(),
            built.set.short(),
            built.episodes,
            built.new_episodes
        );
        score::print(&out);
        println!();
        print!("{}", summary(&entries, &files)?);
    }
    Ok(())
}

/// The full report (every normalisation, every grouping) as Markdown, CSV and JSON, the figure,
/// and the explorable HTML file, beside the store.
fn write_report(reg: &Store, entries: &[Entry]) -> Result<Files> {
    let at = |suffix: &str| output::beside(reg, &format!("{}{suffix}", output::REPORT));
    let files = Files {
        markdown: at(".md"),
        csv: at(".csv"),
        json: at(".json"),
        figure: output::figure_beside(reg),
        html: output::html_beside(reg),
    };
    for (path, format) in [
        (&files.markdown, Format::Md),
        (&files.csv, Format::Csv),
        (&files.json, Format::Json),
    ] {
        output::write(
            reg,
            path,
            report::render(entries, format)?.as_bytes(),
            false,
        )?;
    }
    output::write(reg, &files.figure, report::svg(entries).as_bytes(), false)?;
    let page = report::html(reg, benchmarks::ALL, entries)?;
    output::write(reg, &files.html, page.as_bytes(), false)?;
    Ok(files)
}

/// The headline numbers under the default normalisation, the conclusions that flip, where the
/// rest is, and the next commands.
fn summary(entries: &[Entry], files: &Files) -> Result<String> {
    let default = Normalisation::ALL[0].as_str();
    let e = entries
        .iter()
        .find(|e| e.normalisation == default)
        .with_context(|| format!("no result under the default normalisation `{default}`"))?;
    let n = e.evaluation.n;
    let mut s = format!(
        "{} on set `{}`, model `{}`, normalisation `{default}` (the paper's per-token mean), \
         {n} items:\n",
        e.title, e.set, e.model
    );
    for (column, m) in e
        .evaluation
        .columns
        .iter()
        .zip(&e.evaluation.groups[0].metrics)
    {
        if m.is_some() {
            s += &format!("  {:<10} {}\n", column.title, report::cell(m.as_ref(), n));
        }
    }
    let note = format!(
        "Percentages with 95% bootstrap intervals; (n=k): the metric counts k of the {n} items. {}",
        e.evaluation.note
    );
    s += &wrap(&note, "  ");
    let conclusions = report::robustness::conclusions(entries);
    let flips: Vec<&Conclusion> = conclusions.iter().filter(|c| c.flips).collect();
    // The entries are the default model's on the default set: one per normalisation.
    let norms = entries.len();
    if flips.is_empty() {
        s += &format!(
            "\nEvery conclusion holds under all {norms} normalisations ({} checked).\n",
            conclusions.len()
        );
    } else {
        s += &format!(
            "\nConclusions that change with the normalisation ({} of {}):\n",
            flips.len(),
            conclusions.len()
        );
        for c in flips {
            s += &format!("  - {}\n", flip(c));
        }
    }
    s += &format!(
        "\nThe full report (all {norms} normalisations, every grouping): {}\n\
         (also {} and {}); the figure: {}\n\
         Open {} in a browser: every number opens the episodes it counts.\n",
        files.markdown.display(),
        files.csv.display(),
        files.json.display(),
        files.figure.display(),
        files.html.display()
    );
    let next = [
        (
            format!("deltalogic audit {}", &e.result_id[..12]),
            format!("every score behind the `{default}` numbers"),
        ),
        (
            "deltalogic report --norm all".to_string(),
            "the full tables, printed".to_string(),
        ),
        (
            "deltalogic model add FILE.gguf --name other".to_string(),
            "a second model, then:".to_string(),
        ),
        (
            format!("deltalogic score --model other --set {} --norm all", e.set),
            "its scores beside these".to_string(),
        ),
    ];
    let width = next.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    s += "\nNext:\n";
    for (command, what) in next {
        s += &format!("  {command:<width$}  # {what}\n");
    }
    Ok(s)
}

/// `text` in lines of at most 96 characters, each after `indent`.
fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > 96 {
            out += &format!("{indent}{line}\n");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line += word;
    }
    if !line.is_empty() {
        out += &format!("{indent}{line}\n");
    }
    out
}

/// One line: the conclusion and its verdict under each normalisation, normalisations with the
/// same verdict together: `smollm2-135m: sign of the revision gap: positive (mean, sum);
/// negative (pmi)`.
fn flip(c: &Conclusion) -> String {
    let mut verdicts: Vec<(&str, Vec<&str>)> = Vec::new();
    for v in &c.verdicts {
        let verdict = v.verdict.as_deref().unwrap_or("undefined");
        match verdicts.iter_mut().find(|(w, _)| *w == verdict) {
            Some((_, norms)) => norms.push(&v.normalisation),
            None => verdicts.push((verdict, vec![&v.normalisation])),
        }
    }
    let parts: Vec<String> = verdicts
        .iter()
        .map(|(verdict, norms)| format!("{verdict} ({})", norms.join(", ")))
        .collect();
    let about = c
        .model
        .as_deref()
        .map_or_else(String::new, |m| format!("{m}: "));
    format!("{about}{}: {}", c.conclusion, parts.join("; "))
}
