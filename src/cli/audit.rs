//! `deltalogic audit RESULT`: every score and generation behind a result, optionally recomputing
//! a sample.

use super::emit;
use crate::eval::{audit, models, ModelRecord};
use crate::store::{Id, Store};
use anyhow::{Context, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A result id (or a unique prefix of one), as `report --format json` shows.
    result: String,
    /// Recompute this many sampled scores with the model and report any difference; exit status
    /// 4 when any differs beyond the tolerance (the JSON's `verify.differing` names them).
    #[arg(long, value_parser = super::bounds::count(1, super::bounds::MAX_SAMPLE))]
    verify: Option<usize>,
    /// Largest |Δ log-prob| accepted when a served model is asked again (served engines are not
    /// bit-reproducible; a local model's scores must be bit for bit the same).
    #[arg(long, default_value_t = crate::eval::served::TOLERANCE, value_parser = super::bounds::tolerance())]
    tolerance: f32,
    /// Include each score's prompt text (JSON output).
    #[arg(long)]
    prompts: bool,
}

pub fn run(reg: &Store, json: bool, a: Args) -> Result<()> {
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
                models::engine(reg, &record, crate::eval::served::CONCURRENCY)
            },
            k,
            a.tolerance,
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
                "{}  item {} turn {} {:<11} model {}{} [{}] at {}",
                l.key.short(),
                l.item.short(),
                l.turn,
                format!("{:?}", l.label),
                l.model.short(),
                served(&l.backend),
                lp.join(", "),
                utc(l.computed_at)
            );
        }
        for g in &audit.generations {
            println!(
                "{}  item {} turn {} generation of {} tokens ({}) model {}{}: {:?}",
                g.key.short(),
                g.item.short(),
                g.turn,
                g.logprobs.len(),
                g.stop.as_str(),
                g.model.short(),
                served(&g.backend),
                g.text
            );
        }
        if let Some(v) = &checked {
            println!(
                "verified {} sampled records: {} identical, {} within tolerance, {} differ (max \
                 abs difference {:.2e}; tolerance of served models {:.0e}, of local ones none)",
                v.checked,
                v.identical,
                v.agreeing - v.identical,
                v.checked - v.agreeing,
                v.max_abs_diff,
                v.served_tolerance
            );
            for c in &v.checks {
                println!(
                    "  {} model {} |Δ| {:.2e}{}",
                    c.key.short(),
                    c.model.short(),
                    c.max_abs_diff,
                    if c.agrees {
                        String::new()
                    } else {
                        format!(": stored {:?} recomputed {:?}", c.stored, c.recomputed)
                    }
                );
            }
        }
    })?;
    match checked {
        Some(v) if !v.differing.is_empty() => Err(Differences {
            differing: v.differing.len(),
            checked: v.checked,
        }
        .into()),
        _ => Ok(()),
    }
}

/// The exit status of an audit whose `--verify` found a difference beyond the tolerance
/// (documented in the README).
pub const DIFFERENCES_STATUS: u8 = 4;

/// Recomputed records that differ from the stored ones: reported (the JSON's `verify.differing`
/// names them), then exit status 4.
#[derive(Debug)]
pub struct Differences {
    pub differing: usize,
    pub checked: usize,
}

impl std::fmt::Display for Differences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} checked records differ from their recomputation beyond the tolerance",
            self.differing, self.checked
        )
    }
}

impl std::error::Error for Differences {}

/// The mark of a record a served model answered.
fn served(backend: &str) -> &'static str {
    if backend == crate::eval::served::BACKEND {
        " (served)"
    } else {
        ""
    }
}

/// Seconds since the Unix epoch as ISO 8601 UTC, `2026-11-26T05:06:17Z` (days to a civil date by
/// Howard Hinnant's algorithm, proleptic Gregorian).
pub(crate) fn utc(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_iso_8601_utc() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1795661121 +%FT%TZ`; a leap day; the last second of a year.
        assert_eq!(super::utc(1_795_661_121), "2026-11-26T02:45:21Z");
        assert_eq!(super::utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::utc(1_767_225_599), "2025-12-31T23:59:59Z");
    }
}
