//! `deltalogic audit RESULT`: every score and generation behind a result, optionally recomputing
//! a sample.

use super::emit;
use crate::eval::{audit, models, ModelRecord};
use crate::store::{Id, Registry};
use anyhow::{Context, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A result id (or a unique prefix of one), as `report --format json` shows.
    result: String,
    /// Recompute this many sampled scores with the model and report any difference.
    #[arg(long, value_parser = super::bounds::count(1, super::bounds::MAX_SAMPLE))]
    verify: Option<usize>,
    /// Include each score's prompt text (JSON output).
    #[arg(long)]
    prompts: bool,
}

pub fn run(reg: &Registry, json: bool, a: Args) -> Result<()> {
    let mut audit = audit::audit(reg, &a.result)?;
    if a.prompts {
        audit::attach_prompts(reg, &mut audit)?;
    }
    let checked = match a.verify {
        Some(k) => Some(audit::verify(
            reg,
            &audit,
            |model: Id| {
                let record = reg
                    .get::<ModelRecord>(&model)?
                    .with_context(|| format!("model {} has no record", model.short()))?;
                let (_, record) = models::resolve(reg, &model.hex())
                    .with_context(|| format!("model {} ({})", model.short(), record.path))?;
                models::Loaded::open(&record)
            },
            k,
        )?),
        None => None,
    };
    let doc = serde_json::json!({"audit": audit, "verify": checked});
    emit(json, &doc, || {
        println!(
            "result {} on set {} ({} items), template {}, normalisation {}: {} scores, {} generations",
            audit.result.short(),
            audit.set.short(),
            audit.set_size,
            audit.template.short(),
            audit.normalisation,
            audit.scores.len(),
            audit.generations.len()
        );
        for l in &audit.scores {
            let lp: Vec<String> = l.logprobs.iter().map(|x| format!("{x:.4}")).collect();
            println!(
                "{}  item {} turn {} {:<11} model {} [{}] at {}",
                l.key.short(),
                l.item.short(),
                l.turn,
                format!("{:?}", l.label),
                l.model.short(),
                lp.join(", "),
                l.computed_at
            );
        }
        for g in &audit.generations {
            println!(
                "{}  item {} turn {} generation of {} tokens ({}) model {}: {:?}",
                g.key.short(),
                g.item.short(),
                g.turn,
                g.tokens.len(),
                g.stop.as_str(),
                g.model.short(),
                g.text
            );
        }
        if let Some(v) = &checked {
            println!(
                "verified {} sampled scores: {} identical, {} differ (max abs difference {:.2e})",
                v.checked,
                v.identical,
                v.differences.len(),
                v.max_abs_diff
            );
            for d in &v.differences {
                println!(
                    "  {} stored {:?} recomputed {:?}",
                    d.key.short(),
                    d.stored,
                    d.recomputed
                );
            }
        }
    })
}
