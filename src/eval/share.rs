//! What a shared cache file holds: the results of a model on a set (every template and
//! normalisation), with everything they refer to — scores, prompts, templates, the set, its spec,
//! its members and what they come from, the models — so that it reports and audits alone.

use super::kinds::kinds;
use super::records::{GenerationRecord, ModelRecord, ScoreRecord};
use super::ServedRecord;
use crate::benchmarks::prompts::TemplateRecord;
use crate::benchmarks::Catalogue;
use crate::store::{decode, Id, Kind, Names, Record, ResultRecord, Store, StoredSet};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeSet;
use std::path::Path;

/// The records and names to export for `model` on the set named `set_name`.
pub type Closure = (BTreeSet<(Kind, Id)>, Vec<(Names, String, Id)>);

/// The results of `model` on the set named `set_name` and every record they reach: what the
/// runner's records name (a result's template and each turn's scores or generation), the set's
/// members (of its benchmark's kind), and from there what each record references as its kind
/// declares it. A record the store lacks is left out (base items are provenance a generated set
/// may lack).
pub fn closure(reg: &Store, benchmarks: Catalogue, model: Id, set_name: &str) -> Result<Closure> {
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
    let items = benchmarks.named(&set.benchmark)?.items().kind;
    let mut roots = vec![(ModelRecord::KIND, model), (StoredSet::KIND, set_id)];
    roots.extend(set.member_ids().map(|id| (items, id)));
    for (rid, r) in &results {
        roots.push((ResultRecord::KIND, *rid));
        roots.push((TemplateRecord::KIND, Id(r.template)));
        for turn in r.rows.iter().flat_map(|row| &row.turns) {
            let kind = match turn.answer.label() {
                Some(_) => ScoreRecord::KIND,
                None => GenerationRecord::KIND,
            };
            roots.extend(turn.keys.iter().map(|k| (kind, Id(*k))));
        }
    }
    let declared = kinds(benchmarks);
    let mut wanted: BTreeSet<(Kind, Id)> = BTreeSet::new();
    while let Some((kind, id)) = roots.pop() {
        if wanted.contains(&(kind, id)) {
            continue;
        }
        let Some(body) = reg.raw_get(kind, &id)? else {
            continue;
        };
        let declaration = declared
            .iter()
            .find(|d| d.kind == kind)
            .ok_or_else(|| anyhow!("no declaration of the record kind `{}`", kind.table))?;
        roots.extend(declaration.check(reg, &id, &body)?);
        wanted.insert((kind, id));
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

/// Makes the incoming records a merge adds (`records`, read from the cache file at `path`) data
/// and nothing more: a served model's URL and the name of its key's environment variable are
/// instructions to send a key somewhere, so they are emptied before the records are stored. A
/// served model merged this way is known (its identity, its scores) but cannot be asked until
/// `model add --served` registers it here, with this user's URL and key variable; ids do not
/// change (neither is part of them). The count of records emptied is returned.
pub fn strip_locations(path: &Path, records: &mut [(Kind, Id, Vec<u8>)]) -> Result<usize> {
    let mut stripped = 0;
    for (kind, id, bytes) in records.iter_mut() {
        let emptied = match *kind {
            ModelRecord::KIND => {
                let mut m: ModelRecord = decode(bytes, path, id)?;
                (super::served::is_served(&m) && !m.path.is_empty())
                    .then(|| {
                        m.path.clear();
                        encode(rkyv::to_bytes(&m), ModelRecord::KIND.noun)
                    })
                    .transpose()?
            }
            ServedRecord::KIND => {
                let mut s: ServedRecord = decode(bytes, path, id)?;
                s.api_key_env
                    .take()
                    .map(|_| encode(rkyv::to_bytes(&s), ServedRecord::KIND.noun))
                    .transpose()?
            }
            _ => None,
        };
        if let Some(body) = emptied {
            *bytes = body;
            stripped += 1;
        }
    }
    Ok(stripped)
}

/// A record's archive, as the store writes it.
fn encode(
    archived: Result<rkyv::util::AlignedVec, rkyv::rancor::Error>,
    noun: &str,
) -> Result<Vec<u8>> {
    Ok(archived
        .map_err(|e| anyhow!("cannot encode a {noun} record: {e}"))?
        .to_vec())
}
