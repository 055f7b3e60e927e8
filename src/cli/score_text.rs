//! `deltalogic score-text` (labels after a context, straight from a model file, no cache) and
//! `deltalogic dev make-fixtures` (the tiny random-weight model fixtures).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::model::dev::fixtures;
use crate::model::scorer::{Backend, Scorer};

#[derive(Clone, Debug, clap::Args)]
pub struct ScoreTextArgs {
    /// A GGUF file or a Hugging Face model directory.
    #[arg(long)]
    pub model: PathBuf,
    /// The text the labels continue.
    #[arg(long, allow_hyphen_values = true)]
    pub context: String,
    /// Candidate continuations, each with its leading space (" True").
    #[arg(long, num_args = 1.., required = true)]
    pub labels: Vec<String>,
    #[command(flatten)]
    pub compute: super::Compute,
    /// Numerics [default: int8 for a GGUF file with quantised weights, flex otherwise].
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
}

/// Warns of labels that would be glued to the context's last word: a label is scored as the
/// text right after the context, so `True` after `Label:` is scored as `Label:True`, which no
/// prompt of ours asks (their labels carry their space, ` True`). A chat context that ends with
/// a newline, or any context ending in whitespace, takes labels without one: no warning then.
fn warn_glued(context: &str, labels: &[String]) {
    if context.ends_with(char::is_whitespace) {
        return;
    }
    let glued: Vec<String> = labels
        .iter()
        .filter(|l| !l.starts_with(char::is_whitespace))
        .map(|l| format!("{l:?}"))
        .collect();
    if !glued.is_empty() {
        eprintln!(
            "warning: label(s) {} have no leading space, so each is scored glued to the \
             context's last word; give them as the prompt would continue (\" True\")",
            glued.join(", ")
        );
    }
}

/// Prints each label's token ids, per-token log-probs, sum and mean.
pub fn score_text(args: &ScoreTextArgs, json: bool) -> anyhow::Result<()> {
    warn_glued(&args.context, &args.labels);
    let backend = crate::eval::models::backend_for(&args.model, args.backend)?;
    let scorer = Scorer::open(&args.model, backend)?;
    // The context is the user's own template: control-token text in it is read as control
    // tokens; the labels are plain text.
    let context = crate::model::tokenize::markup(&args.context);
    let scores = scorer
        .score(&context, &args.labels)
        .with_context(|| format!("scoring with {}", args.model.display()))?;
    let mut out = std::io::stdout().lock();
    if json {
        let rows: Vec<_> = scores
            .iter()
            .map(|s| {
                serde_json::json!({
                    "label": s.label, "tokens": s.tokens, "logprobs": s.logprobs,
                    "sum": s.sum(), "mean": s.mean(),
                })
            })
            .collect();
        let doc = serde_json::json!({"model": args.model, "context": args.context, "labels": rows});
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        for s in &scores {
            writeln!(out, "{:?}", s.label)?;
            writeln!(out, "  tokens:   {:?}", s.tokens)?;
            let lp: Vec<String> = s.logprobs.iter().map(|x| format!("{x:.6}")).collect();
            writeln!(out, "  logprobs: [{}]", lp.join(", "))?;
            writeln!(out, "  sum: {:.6}  mean: {:.6}", s.sum(), s.mean())?;
        }
    }
    Ok(())
}

#[derive(Clone, Debug, clap::Args)]
pub struct MakeFixturesArgs {
    /// Where the per-architecture directories go.
    #[arg(long, default_value = "fixtures/hf")]
    pub out: PathBuf,
    #[arg(long, default_value_t = fixtures::SEED, value_parser = super::bounds::seed())]
    pub seed: u64,
}

/// Writes the tiny random-weight checkpoints the exactness tests use.
pub fn make_fixtures(args: &MakeFixturesArgs) -> anyhow::Result<()> {
    fixtures::write_all(&args.out, args.seed)?;
    println!(
        "wrote {} fixtures under {}",
        fixtures::archs().len(),
        args.out.display()
    );
    Ok(())
}
