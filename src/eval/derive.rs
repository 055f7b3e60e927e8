//! Results are derived, never trusted. A result says which answers a model gave; everything it
//! says follows from records it names: its benchmark's requests for its set under its template
//! (each turn's made from the answers at the earlier turns), the keys of those requests, and the
//! answer the stored scores give under its normalisation (a generated turn's is its generation).
//! [`derive`] makes that whole walk again — no model is needed, only stored records — and says
//! where a result departs from it. A merge runs it on every incoming result against the store as
//! it will be after the merge (`eval::cache::merge`), and `cache verify` on every stored result.

use super::normalise::Normalisation;
use super::pending::{turn_requests, Pending};
use super::records::{GenerationRecord, ModelRecord, ScoreRecord};
use crate::benchmarks::prompts::TemplateRecord;
use crate::benchmarks::{Answer, Catalogue, ModelInfo, Models};
use crate::store::{Id, Record, ResultRecord, Store, StoredSet};
use anyhow::{bail, Context, Result};

/// What a benchmark's prompts need of the model, as the result's template recorded it: a chat
/// template is part of the template's definition, so a result re-derives without the model's
/// file. (Whether the recorded one is right, the template's id says: see [`derive`].)
struct Recorded<'a> {
    definition: &'a str,
    model: Option<ModelRecord>,
}

impl ModelInfo for Recorded<'_> {
    fn chat_template(&self) -> Result<String> {
        if let Some(jinja) = recorded(self.definition, &["jinja", "subject_chat_template"]) {
            return Ok(jinja);
        }
        match &self.model {
            Some(m) => m.chat_template(),
            None => bail!("the template records no chat template and the model is not here"),
        }
    }
}

/// The first string under one of `keys` anywhere in a template's definition (canonical JSON).
fn recorded(definition: &str, keys: &[&str]) -> Option<String> {
    fn find(v: &serde_json::Value, keys: &[&str]) -> Option<String> {
        match v {
            serde_json::Value::Object(map) => keys
                .iter()
                .find_map(|k| map.get(*k).and_then(|s| s.as_str()).map(str::to_string))
                .or_else(|| map.values().find_map(|v| find(v, keys))),
            serde_json::Value::Array(items) => items.iter().find_map(|v| find(v, keys)),
            _ => None,
        }
    }
    find(&serde_json::from_str(definition).ok()?, keys)
}

/// The judge a template names (its definition's `judge`, a fingerprint), else the model itself.
fn judge_of(definition: &str, subject: Id) -> Id {
    recorded(definition, &["judge"])
        .and_then(|hex| {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect::<Option<_>>()?;
            Some(Id(bytes.try_into().ok()?))
        })
        .unwrap_or(subject)
}

/// Re-derives `r` from the records `reg` holds, its set's benchmark one of `benchmarks`; an error
/// says where it departs (the item and turn, and what differs) or which record it needs and the
/// store lacks. The caller names the result.
pub fn derive(reg: &Store, benchmarks: Catalogue, r: &ResultRecord) -> Result<()> {
    let set = reg
        .get::<StoredSet>(&Id(r.set))?
        .with_context(|| format!("its set {} is absent", Id(r.set).short()))?;
    let template = reg
        .get::<TemplateRecord>(&Id(r.template))?
        .with_context(|| format!("its template {} is absent", Id(r.template).short()))?;
    let norm = Normalisation::named(&r.normalisation)
        .with_context(|| format!("unknown normalisation `{}`", r.normalisation))?;
    let benchmark = benchmarks.named(&set.benchmark)?;
    let subject = Id(r.model);
    let judge = judge_of(&template.definition, subject);
    let info = Recorded {
        definition: &template.definition,
        model: reg.get::<ModelRecord>(&subject)?,
    };
    let prepared = benchmark
        .prepare(
            reg,
            &set,
            &template.name,
            &Models {
                subject: &info,
                judge,
            },
        )
        .with_context(|| format!("its {} set cannot be prepared", benchmark.title()))?;
    if prepared.template().id() != Id(r.template) {
        bail!(
            "its template {} is not what this deltalogic renders as `{}`: it cannot be re-derived",
            Id(r.template).short(),
            template.name
        );
    }
    let items = prepared.items();
    if items.len() != r.rows.len() || items.iter().zip(&r.rows).any(|(i, row)| i.0 != row.item) {
        bail!(
            "its {} rows are not the {} items of its set, in order",
            r.rows.len(),
            items.len()
        );
    }
    let turns = prepared.turns();
    if let Some(row) = r.rows.iter().find(|row| row.turns.len() != turns) {
        bail!(
            "item {} has {} turns; its benchmark asks {turns}",
            Id(row.item).short(),
            row.turns.len()
        );
    }
    let mut earlier: Vec<Vec<Answer>> = vec![Vec::new(); items.len()];
    for turn in 0..turns {
        for (i, row) in r.rows.iter().enumerate() {
            let at = || format!("item {}, turn {}", Id(row.item).short(), turn + 1);
            let (request, free) =
                turn_requests(&*prepared, (i, turn, &earlier[i]), norm, (subject, judge))
                    .with_context(at)?;
            let stored = &row.turns[turn];
            let mut keys = request.keys();
            keys.extend(free.iter().flat_map(Pending::keys));
            if keys.iter().map(|k| k.0).ne(stored.keys.iter().copied()) {
                bail!(
                    "{}: it names {} record(s) other than the {} its benchmark asks for",
                    at(),
                    stored.keys.len(),
                    keys.len()
                );
            }
            let kind = match request {
                Pending::Score { .. } => ScoreRecord::KIND,
                Pending::Generate { .. } => GenerationRecord::KIND,
            };
            if let Some(absent) = reg.missing(kind, &keys)?.first() {
                bail!(
                    "{}: it reads {} {}, which is absent: the result cannot be backed by its \
                     scores",
                    at(),
                    kind.noun,
                    absent.short()
                );
            }
            let free: Vec<&Pending> = free.iter().collect();
            let (derived, answer) = request.answer(reg, norm, &free).with_context(at)?;
            if derived.answer != stored.answer {
                bail!(
                    "{}: it says {:?} where its scores give {:?} under `{}`",
                    at(),
                    stored.answer,
                    derived.answer,
                    norm.as_str()
                );
            }
            earlier[i].push(answer);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_judge_is_read_from_the_definition() {
        let subject = Id([1; 32]);
        let judge = Id([0xab; 32]);
        let def = format!("{{\"setting\":\"zero\",\"judge\":\"{}\"}}", judge.hex());
        assert_eq!(judge_of(&def, subject), judge);
        assert_eq!(judge_of("{\"judge\":\"zz\"}", subject), subject);
        assert_eq!(judge_of("{}", subject), subject);
        assert_eq!(
            recorded("{\"form\":{\"Chat\":{\"jinja\":\"J\"}}}", &["jinja"]).as_deref(),
            Some("J")
        );
    }
}
