//! Sharing caches: a cache file is a deltalogic store holding a self-contained subset (scores
//! with the prompts, templates, episodes, items, sets and models they refer to). Merging is a
//! union of content-addressed records: a key already present with a different score is a
//! conflict, reported and never overwritten.

use crate::benchmarks::deltalogic::Episode;
use crate::benchmarks::prompts::TemplateRecord;
use crate::benchmarks::question::Question;
use crate::datasets::BaseItem;
use crate::eval::{ModelRecord, PromptRecord, ResultRecord, ScoreRecord};
use crate::store::{decode, Id, Kind, Names, Record, Registry, SourceFile, StoredSet, StoredSpec};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Decodes (validating the archive) and checks that the key is the hash of the content.
fn check(kind: Kind, path: &Path, id: &Id, bytes: &[u8]) -> Result<()> {
    fn go<R: Record>(path: &Path, id: &Id, bytes: &[u8]) -> Result<R>
    where
        R::Archived: for<'a> rkyv::bytecheck::CheckBytes<
                rkyv::api::high::HighValidator<'a, rkyv::rancor::Error>,
            > + rkyv::Deserialize<R, rkyv::rancor::Strategy<rkyv::de::Pool, rkyv::rancor::Error>>,
    {
        let r: R = decode(bytes, path, id)?;
        if r.id() != *id {
            bail!(
                "{}: {} {} does not hash to its key",
                path.display(),
                R::KIND.noun(),
                id.short()
            );
        }
        Ok(r)
    }
    match kind {
        Kind::SourceFile => go::<SourceFile>(path, id, bytes).map(drop),
        Kind::BaseItem => go::<BaseItem>(path, id, bytes).map(drop),
        Kind::Episode => go::<Episode>(path, id, bytes).map(drop),
        Kind::EpisodeSet => go::<StoredSet>(path, id, bytes).map(drop),
        Kind::BuildSpec => go::<StoredSpec>(path, id, bytes).map(drop),
        Kind::Model => go::<ModelRecord>(path, id, bytes).map(drop),
        Kind::Template => go::<TemplateRecord>(path, id, bytes).map(drop),
        Kind::Prompt => go::<PromptRecord>(path, id, bytes).map(drop),
        Kind::Score => go::<ScoreRecord>(path, id, bytes).map(drop),
        Kind::Result => go::<ResultRecord>(path, id, bytes).map(drop),
        Kind::Question => go::<Question>(path, id, bytes).map(drop),
    }
}

#[derive(Debug, Default, Serialize)]
pub struct KindCount {
    pub records: usize,
    pub bad: usize,
}

#[derive(Debug, Serialize)]
pub struct VerifyReport {
    pub file: String,
    pub kinds: BTreeMap<String, KindCount>,
    pub problems: Vec<String>,
}

/// Checks every record of a store: a valid archive whose key is the hash of its content.
pub fn verify(reg: &Registry) -> Result<VerifyReport> {
    let mut report = VerifyReport {
        file: reg.path().display().to_string(),
        kinds: BTreeMap::new(),
        problems: Vec::new(),
    };
    for kind in Kind::ALL {
        let count = report.kinds.entry(kind.noun().to_string()).or_default();
        for (id, bytes) in reg.raw_all(kind)? {
            count.records += 1;
            if let Err(e) = check(kind, reg.path(), &id, &bytes) {
                count.bad += 1;
                report.problems.push(format!("{e:#}"));
            }
        }
    }
    for names in Names::ALL {
        for (name, id) in reg.names(names)? {
            let kind = match names {
                Names::Sets => Kind::EpisodeSet,
                Names::Models => Kind::Model,
            };
            if reg.raw_get(kind, &id)?.is_none() {
                report.problems.push(format!(
                    "name `{name}` points to a missing {} {}",
                    kind.noun(),
                    id.short()
                ));
            }
        }
    }
    Ok(report)
}

#[derive(Debug, Serialize)]
pub struct Conflict {
    pub kind: String,
    pub key: Id,
    pub detail: String,
}

#[derive(Debug, Default, Serialize)]
pub struct MergeReport {
    pub added: BTreeMap<String, usize>,
    pub already_present: BTreeMap<String, usize>,
    pub conflicts: Vec<Conflict>,
}

/// Adds every record of `other` that this store lacks, after validating it. Nothing is written
/// if `other` has any invalid record.
pub fn merge(reg: &Registry, other: &Registry) -> Result<MergeReport> {
    let problems = verify(other)?.problems;
    if !problems.is_empty() {
        bail!(
            "{}: {} invalid record(s); nothing merged:\n  {}",
            other.path().display(),
            problems.len(),
            problems
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    let mut report = MergeReport::default();
    let mut incoming = Vec::new();
    for kind in Kind::ALL {
        for (id, bytes) in other.raw_all(kind)? {
            match reg.raw_get(kind, &id)? {
                None => incoming.push((kind, id, bytes)),
                Some(ours) => {
                    *report
                        .already_present
                        .entry(kind.noun().to_string())
                        .or_default() += 1;
                    if ours != bytes && kind == Kind::Score {
                        let a: ScoreRecord = decode(&ours, reg.path(), &id)?;
                        let b: ScoreRecord = decode(&bytes, other.path(), &id)?;
                        if !a.same_score(&b) {
                            report.conflicts.push(Conflict {
                                kind: kind.noun().into(),
                                key: id,
                                detail: format!(
                                    "label {:?}: ours {:?} ({}), theirs {:?} ({}); kept ours",
                                    a.label, a.logprobs, a.backend, b.logprobs, b.backend
                                ),
                            });
                        }
                    }
                }
            }
        }
    }
    let mut names = Vec::new();
    for table in Names::ALL {
        for (name, id) in other.names(table)? {
            match reg.lookup(table, &name)? {
                None => names.push((table, name, id)),
                Some(ours) if ours != id => report.conflicts.push(Conflict {
                    kind: "name".into(),
                    key: id,
                    detail: format!(
                        "`{name}` names {} here and {} there; kept ours",
                        ours.short(),
                        id.short()
                    ),
                }),
                Some(_) => {}
            }
        }
    }
    report.added = store(reg, &incoming, &names)?;
    Ok(report)
}

/// Writes records and names in one transaction; counts the records added, per kind.
fn store(
    reg: &Registry,
    records: &[(Kind, Id, Vec<u8>)],
    names: &[(Names, String, Id)],
) -> Result<BTreeMap<String, usize>> {
    reg.write(|w| {
        let mut added = BTreeMap::new();
        for (kind, id, bytes) in records {
            if w.put_raw(*kind, *id, bytes)? {
                *added.entry(kind.noun().to_string()).or_default() += 1;
            }
        }
        for (table, name, id) in names {
            w.name(*table, name, *id)?;
        }
        Ok(added)
    })
}

#[derive(Debug, Serialize)]
pub struct ExportReport {
    pub file: String,
    pub records: BTreeMap<String, usize>,
}

/// Writes the results of `model` on `set` (every template and normalisation) to a new cache
/// file, with everything they refer to.
pub fn export(reg: &Registry, model: Id, set_name: &str, out: &Path) -> Result<ExportReport> {
    if out.exists() {
        bail!(
            "{}: already exists; cache export writes a new file",
            out.display()
        );
    }
    let (set_id, set) = reg
        .set_by_name(set_name)?
        .with_context(|| format!("no episode set named `{set_name}`"))?;
    // (id, template, score keys) of every result of the model on the set.
    let results: Vec<(Id, [u8; 32], Vec<Id>)> = reg
        .all::<ResultRecord>()?
        .into_iter()
        .filter(|(_, r)| r.model == model.0 && r.set == set_id.0)
        .map(|(rid, r)| (rid, r.template, r.keys().collect()))
        .collect();
    if results.is_empty() {
        bail!(
            "no scores of model {} on set `{set_name}`: run `deltalogic score` first",
            model.short()
        );
    }
    let mut wanted: BTreeSet<(Kind, Id)> = BTreeSet::new();
    wanted.insert((Kind::Model, model));
    wanted.insert((Kind::EpisodeSet, set_id));
    wanted.insert((Kind::BuildSpec, Id(set.spec)));
    let episodes = set.benchmark == crate::benchmarks::deltalogic::BENCHMARK;
    for member in set.member_ids() {
        let (kind, base) = if episodes {
            (Kind::Episode, reg.get::<Episode>(&member)?.map(|e| e.base_item()))
        } else {
            (Kind::Question, reg.get::<Question>(&member)?.map(|q| q.base_item()))
        };
        wanted.insert((kind, member));
        wanted.extend(base.map(|b| (Kind::BaseItem, b)));
    }
    for (rid, template, keys) in &results {
        wanted.insert((Kind::Result, *rid));
        wanted.insert((Kind::Template, Id(*template)));
        for key in keys {
            wanted.insert((Kind::Score, *key));
            if let Some(s) = reg.get::<ScoreRecord>(key)? {
                wanted.insert((Kind::Prompt, Id(s.prompt)));
            }
        }
    }
    let target = Registry::open(out)?;
    let mut report = ExportReport {
        file: out.display().to_string(),
        records: BTreeMap::new(),
    };
    let names: Vec<(Names, String, Id)> = reg
        .names(Names::Models)?
        .into_iter()
        .filter(|(_, id)| *id == model)
        .map(|(n, id)| (Names::Models, n, id))
        .chain([(Names::Sets, set_name.to_string(), set_id)])
        .collect();
    // Base items are provenance: an episode set from generated theories may lack them.
    let mut records = Vec::new();
    for (kind, id) in &wanted {
        if let Some(bytes) = reg.raw_get(*kind, id)? {
            records.push((*kind, *id, bytes));
        }
    }
    report.records = store(&target, &records, &names)?;
    Ok(report)
}

#[derive(Debug, Serialize)]
pub struct CacheStats {
    pub file: String,
    pub bytes: u64,
    pub records: BTreeMap<String, usize>,
    /// Scores per model fingerprint (short).
    pub scores_per_model: BTreeMap<String, usize>,
}

pub fn stats(reg: &Registry) -> Result<CacheStats> {
    let mut records = BTreeMap::new();
    for kind in Kind::ALL {
        records.insert(kind.noun().to_string(), reg.count(kind)? as usize);
    }
    let mut scores_per_model = BTreeMap::new();
    for (_, s) in reg.all::<ScoreRecord>()? {
        *scores_per_model.entry(Id(s.model).short()).or_insert(0) += 1;
    }
    Ok(CacheStats {
        file: reg.path().display().to_string(),
        bytes: std::fs::metadata(reg.path()).map_or(0, |m| m.len()),
        records,
        scores_per_model,
    })
}
