//! Sharing caches: a cache file is a deltalogic store holding a self-contained subset (scores
//! with the prompts, templates, items, sets and models they refer to, see [`super::share`]).
//! Merging is a union of content-addressed records: a key already present with a different score
//! is a conflict, reported and never overwritten. This lives with the runner, not the store: the
//! store copies records by kind; checking that a record hashes to its key, and recomputing a
//! score, needs every record type and the model.

use super::generate::Generated;
use super::records::same_bits;
use super::{GenerationRecord, ModelRecord, PromptRecord, ResultRecord, ScoreRecord};
use crate::benchmarks::clomo::ClomoItem;
use crate::benchmarks::deltalogic::Episode;
use crate::benchmarks::prompts::TemplateRecord;
use crate::benchmarks::question::Question;
use crate::datasets::BaseItem;
use crate::store::{
    decode, same_file, Id, Kind, Names, Record, Registry, SourceFile, StoredSet, StoredSpec, Writer,
};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Decodes (validating the archive) and checks that the key is the hash of the content.
pub fn check(kind: Kind, path: &Path, id: &Id, bytes: &[u8]) -> Result<()> {
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
        Kind::Generation => go::<GenerationRecord>(path, id, bytes).map(drop),
        Kind::Problem => go::<crate::benchmarks::deduce::Problem>(path, id, bytes).map(drop),
        Kind::ClomoItem => go::<ClomoItem>(path, id, bytes).map(drop),
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

/// Checks every record of a store: its checksum (schema 2; a schema 1 file has none), a valid
/// archive, and a key that is the hash of its content.
pub fn verify(reg: &Registry) -> Result<VerifyReport> {
    let mut report = VerifyReport {
        file: reg.path().display().to_string(),
        kinds: BTreeMap::new(),
        problems: Vec::new(),
    };
    for kind in Kind::ALL {
        let count = report.kinds.entry(kind.noun().to_string()).or_default();
        for (id, body) in reg.scan(kind)? {
            count.records += 1;
            if let Err(e) = body.and_then(|b| check(kind, reg.path(), &id, &b)) {
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
    /// Per model (short id): incoming scores recomputed and found equal.
    pub recomputed: BTreeMap<String, usize>,
    /// Per model (short id): scores added without a check (model file not available, or no
    /// sample asked for); they are marked in `unverified_scores`.
    pub unverified: BTreeMap<String, usize>,
}

/// Opens a cache file to merge into `reg`, read-only; the store itself (under any path or link)
/// is refused.
pub fn open_incoming(reg: &Registry, path: &Path) -> Result<Registry> {
    if same_file(reg.path(), path) {
        bail!(
            "{}: is the store itself ({}); nothing to merge",
            path.display(),
            reg.path().display()
        );
    }
    let other = Registry::open_read(path)?;
    other.require_current()?;
    Ok(other)
}

/// A computed record: what a model produced, which a merge can recompute.
#[derive(Clone, Debug)]
pub enum Computed {
    Score(ScoreRecord),
    Generation(GenerationRecord),
}

impl Computed {
    fn decode(kind: Kind, path: &Path, id: &Id, bytes: &[u8]) -> Result<Option<Computed>> {
        Ok(match kind {
            Kind::Score => Some(Computed::Score(decode(bytes, path, id)?)),
            Kind::Generation => Some(Computed::Generation(decode(bytes, path, id)?)),
            _ => None,
        })
    }

    pub fn model(&self) -> Id {
        match self {
            Computed::Score(s) => Id(s.model),
            Computed::Generation(g) => Id(g.model),
        }
    }

    /// What differs between our copy and theirs (timing and date may), if anything.
    fn conflict(&self, theirs: &Computed) -> Option<String> {
        match (self, theirs) {
            (Computed::Score(a), Computed::Score(b)) => (!a.same_score(b)).then(|| {
                format!(
                    "label {:?}: ours {:?} ({}), theirs {:?} ({}); kept ours",
                    a.label, a.logprobs, a.backend, b.logprobs, b.backend
                )
            }),
            (Computed::Generation(a), Computed::Generation(b)) => {
                (!a.same_generation(b)).then(|| {
                    format!(
                        "generation: ours {:?} ({} tokens, {}), theirs {:?} ({} tokens, {}); kept ours",
                        a.text,
                        a.tokens.len(),
                        a.backend,
                        b.text,
                        b.tokens.len(),
                        b.backend
                    )
                })
            }
            _ => Some("records of different kinds under one key".into()),
        }
    }
}

/// A record computed again with the real model.
pub enum Recomputed {
    Logprobs(Vec<f32>),
    Generation(Generated),
}

/// Recomputes one incoming score or generation with the real model; `None` when the model's
/// files are not available here.
pub type Recompute<'a> = dyn FnMut(&Computed) -> Result<Option<Recomputed>> + 'a;

/// How `merge` checks the incoming scores.
pub struct MergeOptions<'a> {
    /// Incoming scores recomputed per model, chosen by `seed` (0: none, every new score is
    /// added unverified).
    pub sample_per_model: usize,
    pub seed: u64,
    /// Largest accepted |difference| of one log-prob; 0 asks for the same bits.
    pub tolerance: f32,
    pub recompute: &'a mut Recompute<'a>,
}

impl<'a> MergeOptions<'a> {
    /// 8 scores per model, seed 0, bit for bit.
    pub fn new(recompute: &'a mut Recompute<'a>) -> MergeOptions<'a> {
        MergeOptions {
            sample_per_model: 8,
            seed: 0,
            tolerance: 0.0,
            recompute,
        }
    }
}

/// Adds every record of `other` that this store lacks. Nothing is written if `other` has any
/// invalid record (checksum, archive, key hash) or if a recomputed sample of its new scores
/// differs beyond the tolerance. A model's new scores are verified when its sample was
/// recomputed and matched; otherwise they are added and marked unverified.
pub fn merge(reg: &Registry, other: &Registry, mut opts: MergeOptions<'_>) -> Result<MergeReport> {
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
    // New scores and generations per model, in key order.
    let mut new_scores: BTreeMap<Id, Vec<(Id, Computed)>> = BTreeMap::new();
    for kind in Kind::ALL {
        for (id, bytes) in other.raw_all(kind)? {
            match reg.raw_get(kind, &id)? {
                None => {
                    if let Some(c) = Computed::decode(kind, other.path(), &id, &bytes)? {
                        new_scores.entry(c.model()).or_default().push((id, c));
                    }
                    incoming.push((kind, id, bytes));
                }
                Some(ours) => {
                    *report
                        .already_present
                        .entry(kind.noun().to_string())
                        .or_default() += 1;
                    if ours == bytes {
                        continue;
                    }
                    let a = Computed::decode(kind, reg.path(), &id, &ours)?;
                    let b = Computed::decode(kind, other.path(), &id, &bytes)?;
                    if let Some(detail) = a.zip(b).and_then(|(a, b)| a.conflict(&b)) {
                        report.conflicts.push(Conflict {
                            kind: kind.noun().into(),
                            key: id,
                            detail,
                        });
                    }
                }
            }
        }
    }
    let mut unverified: Vec<Id> = other.unverified_scores()?;
    for (model, scores) in &new_scores {
        let checked = check_sample(other, *model, scores, &mut opts)?;
        if checked > 0 {
            report.recomputed.insert(model.short(), checked);
        } else {
            report.unverified.insert(model.short(), scores.len());
            unverified.extend(scores.iter().map(|(k, _)| *k));
        }
    }
    // Their unverified marks travel with the scores we add, never onto scores we had.
    let added_scores: BTreeSet<Id> = new_scores.values().flatten().map(|(k, _)| *k).collect();
    unverified.retain(|k| added_scores.contains(k));
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
    report.added = reg.write(|w| {
        let added = store(w, &incoming, &names)?;
        for key in &unverified {
            w.mark_unverified(*key)?;
        }
        Ok(added)
    })?;
    Ok(report)
}

/// Recomputes a seeded sample of one model's incoming scores and generations; the number
/// checked (0 when the model is not available here or no sample is asked for). Any difference
/// is an error.
fn check_sample(
    other: &Registry,
    model: Id,
    scores: &[(Id, Computed)],
    opts: &mut MergeOptions<'_>,
) -> Result<usize> {
    // Each key's rank is a hash of the seed and the key: the sample does not depend on the
    // order records were read in, and a different seed picks differently.
    let mut ranked: Vec<([u8; 32], &(Id, Computed))> = scores
        .iter()
        .map(|s| {
            let mut h = blake3::Hasher::new();
            h.update(&opts.seed.to_le_bytes());
            h.update(&s.0 .0);
            (*h.finalize().as_bytes(), s)
        })
        .collect();
    ranked.sort_by_key(|a| a.0);
    let mut checked = 0;
    for (_, (key, record)) in ranked.into_iter().take(opts.sample_per_model) {
        let Some(ours) = (opts.recompute)(record).with_context(|| {
            format!(
                "recomputing {} {} of model {}",
                noun(record),
                key.short(),
                model.short()
            )
        })?
        else {
            return Ok(0);
        };
        let same = match (record, &ours) {
            (Computed::Score(score), Recomputed::Logprobs(ours)) => {
                if opts.tolerance == 0.0 {
                    same_bits(ours, &score.logprobs)
                } else {
                    ours.len() == score.logprobs.len()
                        && ours
                            .iter()
                            .zip(&score.logprobs)
                            .all(|(a, b)| (a - b).abs() <= opts.tolerance)
                }
            }
            // A generation is a sequence of choices: only the same bits mean the same text.
            (Computed::Generation(g), Recomputed::Generation(ours)) => {
                g.tokens == ours.tokens
                    && g.text == ours.text
                    && g.stop == ours.stop
                    && same_bits(&g.logprobs, &ours.logprobs)
            }
            _ => false,
        };
        if !same {
            let (stored, recomputed) = match (record, &ours) {
                (Computed::Score(s), Recomputed::Logprobs(o)) => (
                    format!("label {:?}: {:?}", s.label, s.logprobs),
                    format!("{o:?}"),
                ),
                (Computed::Generation(g), Recomputed::Generation(o)) => (
                    format!("{:?} {:?}", g.text, g.tokens),
                    format!("{:?} {:?}", o.text, o.tokens),
                ),
                _ => ("a record".into(), "another kind of record".into()),
            };
            bail!(
                "{}: {} {} (model {}) differs from its recomputation: stored {stored}, \
                 recomputed {recomputed} (tolerance {}); nothing merged",
                other.path().display(),
                noun(record),
                key.short(),
                model.short(),
                opts.tolerance
            );
        }
        checked += 1;
    }
    Ok(checked)
}

fn noun(c: &Computed) -> &'static str {
    match c {
        Computed::Score(_) => "score",
        Computed::Generation(_) => "generation",
    }
}

/// Writes records and names (inside the caller's transaction); counts the records added, per
/// kind.
fn store(
    w: &mut Writer<'_>,
    records: &[(Kind, Id, Vec<u8>)],
    names: &[(Names, String, Id)],
) -> Result<BTreeMap<String, usize>> {
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
}

#[derive(Debug, Serialize)]
pub struct ExportReport {
    pub file: String,
    pub records: BTreeMap<String, usize>,
}

/// Writes `records` (those the store holds; a missing one is skipped, as base items are
/// provenance a generated set may lack) and `names` to a new cache file. What a cache file must
/// hold to be self-contained is the caller's to say (`crate::eval::share`).
pub fn export(
    reg: &Registry,
    records: &BTreeSet<(Kind, Id)>,
    names: &[(Names, String, Id)],
    out: &Path,
) -> Result<ExportReport> {
    if out.exists() {
        bail!(
            "{}: already exists; cache export writes a new file",
            out.display()
        );
    }
    let mut found = Vec::new();
    for (kind, id) in records {
        if let Some(bytes) = reg.raw_get(*kind, id)? {
            found.push((*kind, *id, bytes));
        }
    }
    let target = Registry::open_write(out)?;
    Ok(ExportReport {
        file: out.display().to_string(),
        records: target.write(|w| store(w, &found, names))?,
    })
}

#[derive(Debug, Serialize)]
pub struct CacheStats {
    pub file: String,
    pub bytes: u64,
    pub records: BTreeMap<String, usize>,
    /// Scores per model fingerprint (short).
    pub scores_per_model: BTreeMap<String, usize>,
    /// Of those, merged from another store without a recomputed check.
    pub unverified_per_model: BTreeMap<String, usize>,
}

pub fn stats(reg: &Registry) -> Result<CacheStats> {
    let mut records = BTreeMap::new();
    for kind in Kind::ALL {
        records.insert(kind.noun().to_string(), reg.count(kind)? as usize);
    }
    let mut scores_per_model = BTreeMap::new();
    let mut unverified_per_model = BTreeMap::new();
    let unverified: BTreeSet<Id> = reg.unverified_scores()?.into_iter().collect();
    for (key, s) in reg.all::<ScoreRecord>()? {
        *scores_per_model.entry(Id(s.model).short()).or_insert(0) += 1;
        if unverified.contains(&key) {
            *unverified_per_model.entry(Id(s.model).short()).or_insert(0) += 1;
        }
    }
    Ok(CacheStats {
        file: reg.path().display().to_string(),
        bytes: std::fs::metadata(reg.path()).map_or(0, |m| m.len()),
        records,
        scores_per_model,
        unverified_per_model,
    })
}
