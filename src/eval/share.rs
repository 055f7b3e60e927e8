//! What a shared cache file holds: the results of a model on a set (every template and
//! normalisation), with everything they refer to — scores, prompts, templates, the set, its spec,
//! its members and their base items, the model record — so that it reports and audits alone.

use super::{GenerationRecord, ResultRecord, ScoreRecord};
use crate::benchmarks;
use crate::store::{Id, Kind, Names, Record, Registry};
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;

/// The records and names to export for `model` on the set named `set_name`.
pub type Closure = (BTreeSet<(Kind, Id)>, Vec<(Names, String, Id)>);

pub fn closure(reg: &Registry, model: Id, set_name: &str) -> Result<Closure> {
    let (set_id, set) = reg
        .set_by_name(set_name)?
        .with_context(|| format!("no set named `{set_name}`"))?;
    let results: Vec<(Id, ResultRecord)> = reg
        .all::<ResultRecord>()?
        .into_iter()
        .filter(|(_, r)| r.model == model.0 && r.set == set_id.0)
        .collect();
    if results.is_empty() {
        bail!(
            "no scores of model {} on set `{set_name}`: run `deltalogic score` first",
            model.short()
        );
    }
    let mut wanted: BTreeSet<(Kind, Id)> = BTreeSet::new();
    wanted.insert((Kind::Model, model));
    // A served model's identity is what its fingerprint names, as a file's bytes are a local
    // one's; a cache file carries it so that the model is described where it is merged.
    if let Some(record) = reg.get::<super::ModelRecord>(&model)? {
        if super::served::is_served(&record) {
            wanted.insert((Kind::Served, super::served::identity(reg, &record)?.id()));
        }
    }
    wanted.insert((Kind::EpisodeSet, set_id));
    wanted.insert((Kind::BuildSpec, Id(set.spec)));
    wanted.extend(benchmarks::named(&set.benchmark)?.references(reg, &set)?);
    for (rid, r) in &results {
        wanted.insert((Kind::Result, *rid));
        wanted.insert((Kind::Template, Id(r.template)));
        for key in r.keys() {
            if let Some(s) = reg.get::<ScoreRecord>(&key)? {
                wanted.insert((Kind::Score, key));
                wanted.insert((Kind::Prompt, Id(s.prompt)));
            } else if let Some(g) = reg.get::<GenerationRecord>(&key)? {
                wanted.insert((Kind::Generation, key));
                wanted.insert((Kind::Prompt, Id(g.prompt)));
            }
        }
    }
    let names = reg
        .names(Names::Models)?
        .into_iter()
        .filter(|(_, id)| *id == model)
        .map(|(n, id)| (Names::Models, n, id))
        .chain([(Names::Sets, set_name.to_string(), set_id)])
        .collect();
    Ok((wanted, names))
}
