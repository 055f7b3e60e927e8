//! `deltalogic generate-text`: greedy generation after a prompt, straight from a model file (no
//! cache): the decoding the runner caches, printed token by token.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::benchmarks::Decoding;
use crate::eval::{self, models::Loaded};
use crate::model::scorer::Backend;

#[derive(Clone, Debug, clap::Args)]
pub struct GenerateTextArgs {
    /// A GGUF file or a Hugging Face model directory.
    #[arg(long)]
    pub model: PathBuf,
    /// The text to continue.
    #[arg(long, allow_hyphen_values = true)]
    pub prompt: String,
    /// At most this many tokens.
    #[arg(long, default_value_t = 64, value_parser = super::bounds::count32(1, super::bounds::MAX_TOKENS))]
    pub max_tokens: u32,
    /// Stop when the text holds this string (cut just before it); may be given several times.
    #[arg(long, allow_hyphen_values = true)]
    pub stop: Vec<String>,
    #[command(flatten)]
    pub compute: super::Compute,
    #[command(flatten)]
    pub speculation: super::Speculation,
    /// Numerics [default: int8 for a GGUF file with quantised weights, flex otherwise].
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
}

/// Prints each generated token's id, text and log-prob, then the text and why it stopped.
pub fn generate_text(args: &GenerateTextArgs, json: bool) -> anyhow::Result<()> {
    let backend = eval::models::backend_for(&args.model, args.backend)?;
    let model = Loaded::file(&args.model, backend)?;
    let decoding = Decoding {
        max_tokens: args.max_tokens,
        stop: args.stop.clone(),
    };
    let started = std::time::Instant::now();
    // The prompt is the user's own template: control-token text in it is read as control tokens.
    let prompt = crate::model::tokenize::markup(&args.prompt);
    let g = eval::regenerate(&model, &prompt, &decoding, args.speculation.on())
        .with_context(|| format!("generating with {}", args.model.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let pieces = g
        .tokens
        .iter()
        .map(|&t| eval::Generation::decode(&model, &[t]))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut out = std::io::stdout().lock();
    if json {
        let doc = serde_json::json!({
            "model": args.model, "prompt": args.prompt, "decoding": decoding,
            "tokens": g.tokens, "pieces": pieces, "logprobs": g.logprobs, "text": g.text,
            "stop": g.stop, "seconds": seconds,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        for ((t, piece), lp) in g.tokens.iter().zip(&pieces).zip(&g.logprobs) {
            writeln!(out, "{t:>7} {lp:>10.6} {piece:?}")?;
        }
        writeln!(out, "text: {:?}", g.text)?;
        writeln!(
            out,
            "{} tokens, stopped by {}, {:.2} s ({:.1} tokens/s with the prompt's prefill)",
            g.tokens.len(),
            g.stop.as_str(),
            seconds,
            g.tokens.len() as f64 / seconds.max(1e-9)
        )?;
    }
    Ok(())
}
