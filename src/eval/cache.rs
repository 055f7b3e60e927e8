//! Sharing caches: a cache file is a deltalogic store holding a self-contained subset (scores
//! with the prompts, templates, items, sets and models they refer to, see [`super::share`]).
//! Merging is a union of content-addressed records: a key already present with a different score
//! is a conflict, reported and never overwritten. This lives with the runner, not the store: the
//! store copies records by kind; the kinds to walk are the store's, the runner's and the
//! benchmarks' declarations ([`kinds`]), and recomputing a score needs the model.

use super::evaluated::EvaluationRecord;
use super::generate::Generated;
use super::kinds::kinds;
use super::records::{same_bits, GenerationRecord, ModelRecord, ScoreRecord};
use super::{derive, engine};
use crate::benchmarks::Catalogue;
use crate::store::{
    decode, same_file, Declared, Id, Kind, Names, Record, ResultRecord, Store, StoredSet, Writer,
};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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

/// Checks every record of a store holding sets of `benchmarks`: its checksum (schema 2; a schema
/// 1 file has none), a valid archive, and a key that is the hash of its content (each kind as
/// declared: [`Declared::check`]).
pub fn verify(reg: &Store, benchmarks: Catalogue) -> Result<VerifyReport> {
    let mut report = VerifyReport {
        file: reg.path().display().to_string(),
        kinds: BTreeMap::new(),
        problems: Vec::new(),
    };
    for declared in kinds(benchmarks) {
        let count = report
            .kinds
            .entry(declared.kind.noun.to_string())
            .or_default();
        for (id, body) in reg.scan(declared.kind)? {
            count.records += 1;
            if let Err(e) = body.and_then(|b| declared.check(reg, &id, &b)) {
                count.bad += 1;
                report.problems.push(format!("{e:#}"));
            }
        }
    }
    for names in Names::ALL {
        for (name, id) in reg.names(names)? {
            let kind = named_kind(names);
            if reg.raw_get(kind, &id)?.is_none() {
                report.problems.push(format!(
                    "name `{name}` points to a missing {} {}",
                    kind.noun,
                    id.short()
                ));
            }
        }
    }
    Ok(report)
}

/// The kind of record a table of names points at.
fn named_kind(names: Names) -> Kind {
    match names {
        Names::Sets => StoredSet::KIND,
        Names::Models => ModelRecord::KIND,
    }
}

/// Re-derives every result of a store from the records it holds ([`derive::derive`]): the
/// problems, one per result that does not follow, naming it. Results whose records do not
/// verify are left to [`verify`].
pub fn verify_results(reg: &Store, benchmarks: Catalogue) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for (id, body) in reg.scan(ResultRecord::KIND)? {
        let Ok(r) = body.and_then(|b| decode::<ResultRecord>(&b, reg.path(), &id)) else {
            continue;
        };
        if let Err(e) = derive::derive(reg, benchmarks, &r) {
            problems.push(format!(
                "{}: result {} does not follow from the records it names: {e:#}",
                reg.path().display(),
                id.short()
            ));
        }
    }
    Ok(problems)
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
    /// Incoming results re-derived from the records the store holds after the merge.
    pub results_derived: usize,
}

/// Opens a cache file to merge into `reg`, read-only; the store itself (under any path or link)
/// is refused.
pub fn open_incoming(reg: &Store, path: &Path) -> Result<Store> {
    if same_file(reg.path(), path) {
        bail!(
            "{}: is the store itself ({}); nothing to merge",
            path.display(),
            reg.path().display()
        );
    }
    let other = Store::open_read(path)?;
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
            ScoreRecord::KIND => Some(Computed::Score(decode(bytes, path, id)?)),
            GenerationRecord::KIND => Some(Computed::Generation(decode(bytes, path, id)?)),
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
    /// Largest accepted |difference| of one log-prob.
    pub tolerance: Tolerance,
    pub recompute: &'a mut Recompute<'a>,
    /// The benchmarks whose sets the incoming file may hold: its records are checked, and its
    /// results re-derived, by them.
    pub benchmarks: Catalogue<'a>,
}

impl<'a> MergeOptions<'a> {
    /// 8 scores per model, seed 0, bit for bit, the command line's benchmarks.
    pub fn new(recompute: &'a mut Recompute<'a>) -> MergeOptions<'a> {
        MergeOptions {
            sample_per_model: 8,
            seed: 0,
            tolerance: Tolerance::DEFAULT,
            recompute,
            benchmarks: crate::benchmarks::ALL,
        }
    }
}

/// Adds every record of `other` (a store of the sets of `opts.benchmarks`) that this store lacks.
/// Nothing is written if `other` has any invalid record (checksum, archive, key hash), if a
/// result it would add does not follow from the records the store would hold after the merge
/// (ours first, then theirs: [`derive`]), or if a recomputed sample of its new scores differs
/// beyond the tolerance. A model's new scores are
/// verified when its sample was recomputed and matched; otherwise they are added and marked
/// unverified. Results are stored under their ids as this build derives them (a file of schema
/// 2 keys them otherwise).
pub fn merge(reg: &Store, other: &Store, mut opts: MergeOptions<'_>) -> Result<MergeReport> {
    let benchmarks = opts.benchmarks;
    let problems = verify(other, benchmarks)?.problems;
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
    let mut results = Vec::new();
    for Declared { kind, .. } in kinds(benchmarks) {
        // Kept evaluations are derived here, never taken from a file (`evaluated`): the next
        // report makes this store's own.
        if kind == EvaluationRecord::KIND {
            continue;
        }
        for (id, bytes) in other.raw_all(kind)? {
            let id = match kind {
                ResultRecord::KIND => {
                    let r: ResultRecord = decode(&bytes, other.path(), &id)?;
                    let ours = r.id();
                    results.push((ours, r));
                    ours
                }
                _ => id,
            };
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
                        .entry(kind.noun.to_string())
                        .or_default() += 1;
                    if ours == bytes {
                        continue;
                    }
                    let a = Computed::decode(kind, reg.path(), &id, &ours)?;
                    let b = Computed::decode(kind, other.path(), &id, &bytes)?;
                    if let Some(detail) = a.zip(b).and_then(|(a, b)| a.conflict(&b)) {
                        report.conflicts.push(Conflict {
                            kind: kind.noun.into(),
                            key: id,
                            detail,
                        });
                    }
                }
            }
        }
    }
    // Every result it adds must follow from the scores the store will hold after the merge.
    let after = reg.layered(other);
    let adding: BTreeSet<Id> = incoming
        .iter()
        .filter(|(kind, _, _)| *kind == ResultRecord::KIND)
        .map(|(_, id, _)| *id)
        .collect();
    for (id, r) in results.iter().filter(|(id, _)| adding.contains(id)) {
        derive::derive(&after, benchmarks, r).map_err(|e| {
            anyhow::anyhow!(
                "{}: result {} (model {}, set {}, `{}`) does not follow from the records it \
                 names: {e:#}; nothing merged",
                other.path().display(),
                id.short(),
                Id(r.model).short(),
                Id(r.set).short(),
                r.normalisation
            )
        })?;
        report.results_derived += 1;
    }
    drop(after);
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
    // A URL or a key variable in the file is never followed, now or later (`share`).
    super::share::strip_locations(other.path(), &mut incoming)?;
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
    other: &Store,
    model: Id,
    scores: &[(Id, Computed)],
    opts: &mut MergeOptions<'_>,
) -> Result<usize> {
    let mut checked = 0;
    for (key, record) in ranked(opts.seed, scores)
        .into_iter()
        .take(opts.sample_per_model)
    {
        let Some(ours) = recompute_one(opts.recompute, model, *key, record)? else {
            return Ok(0);
        };
        if let Some((stored, recomputed)) = difference(record, &ours, opts.tolerance) {
            bail!(
                "{}: {} {} (model {}) differs from its recomputation: stored {stored}, \
                 recomputed {recomputed} (tolerance {:?}); nothing merged",
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

/// One record recomputed (`None`: its model is not available here), errors naming it.
fn recompute_one(
    recompute: &mut Recompute<'_>,
    model: Id,
    key: Id,
    record: &Computed,
) -> Result<Option<Recomputed>> {
    recompute(record).with_context(|| {
        format!(
            "recomputing {} {} of model {}",
            noun(record),
            key.short(),
            model.short()
        )
    })
}

/// `record`'s sample order: a hash of the seed and the key, so a sample does not depend on the
/// order records were read in, and another seed picks differently.
fn ranked<T>(seed: u64, records: &[(Id, T)]) -> Vec<&(Id, T)> {
    let mut ranked: Vec<([u8; 32], &(Id, T))> = records
        .iter()
        .map(|s| {
            let mut h = blake3::Hasher::new();
            h.update(&seed.to_le_bytes());
            h.update(&s.0 .0);
            (*h.finalize().as_bytes(), s)
        })
        .collect();
    ranked.sort_by_key(|a| a.0);
    ranked.into_iter().map(|(_, s)| s).collect()
}

/// The largest |Δ log-prob| by which a recomputation may differ from a stored record.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// For our engine: 0 asks for the same bits.
    pub local: f32,
    /// For a served model's records (a server is not bit-reproducible).
    pub served: f32,
}

impl Tolerance {
    /// The same bits from our engine; a served model within [`super::served::TOLERANCE`].
    pub const DEFAULT: Tolerance = Tolerance {
        local: engine::SCORE_TOLERANCE,
        served: super::served::TOLERANCE,
    };

    fn of(self, backend: &str) -> f32 {
        if backend == super::served::BACKEND {
            self.served
        } else {
            self.local
        }
    }
}

/// Whether two log-prob lists agree within `tolerance` (0: bit for bit).
fn within(a: &[f32], b: &[f32], tolerance: f32) -> bool {
    if tolerance == 0.0 {
        same_bits(a, b)
    } else {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tolerance)
    }
}

/// How a stored record and its recomputation differ (stored, recomputed), if they do.
fn difference(
    record: &Computed,
    ours: &Recomputed,
    tolerance: Tolerance,
) -> Option<(String, String)> {
    let same = match (record, ours) {
        (Computed::Score(score), Recomputed::Logprobs(ours)) => {
            within(ours, &score.logprobs, tolerance.of(&score.backend))
        }
        // A generation is a sequence of choices: the same text, tokens and ending, and its
        // log-probs as a score's.
        (Computed::Generation(g), Recomputed::Generation(ours)) => {
            g.tokens == ours.tokens
                && g.text == ours.text
                && g.stop == ours.stop
                && within(&g.logprobs, &ours.logprobs, tolerance.of(&g.backend))
        }
        _ => false,
    };
    (!same).then(|| match (record, ours) {
        (Computed::Score(s), Recomputed::Logprobs(o)) => (
            format!("label {:?}: {:?}", s.label, s.logprobs),
            format!("{o:?}"),
        ),
        (Computed::Generation(g), Recomputed::Generation(o)) => (
            format!("{:?} {:?}", g.text, g.tokens),
            format!("{:?} {:?}", o.text, o.tokens),
        ),
        _ => ("a record".into(), "another kind of record".into()),
    })
}

/// What `cache verify --recompute` did.
#[derive(Debug, Default, Serialize)]
pub struct Rechecked {
    /// Per model (short id): unverified scores and generations recomputed, all equal.
    pub recomputed: BTreeMap<String, usize>,
    /// Per model: marks cleared (all its unverified records, once its sample matched).
    pub verified: BTreeMap<String, usize>,
    /// Per model: unverified records left as they are, its files not being available here.
    pub unavailable: BTreeMap<String, usize>,
}

/// Recomputes a seeded sample of up to `per_model` unverified scores and generations of each
/// model whose files are available (`recompute` gives `None` for the others), and clears the
/// marks of all that model's unverified records when every one matches: the rule a merge
/// applies to a model whose sample it recomputed. A difference is an error naming the record;
/// nothing is marked then.
pub fn recheck_unverified(
    reg: &Store,
    per_model: usize,
    seed: u64,
    tolerance: Tolerance,
    recompute: &mut Recompute<'_>,
) -> Result<Rechecked> {
    let mut by_model: BTreeMap<Id, Vec<(Id, Computed)>> = BTreeMap::new();
    for key in reg.unverified_scores()? {
        let record = match reg.get::<ScoreRecord>(&key)? {
            Some(s) => Computed::Score(s),
            None => match reg.get::<GenerationRecord>(&key)? {
                Some(g) => Computed::Generation(g),
                None => continue,
            },
        };
        by_model
            .entry(record.model())
            .or_default()
            .push((key, record));
    }
    let mut out = Rechecked::default();
    let mut verified = Vec::new();
    for (model, records) in &by_model {
        let mut checked = 0;
        for (key, record) in ranked(seed, records).into_iter().take(per_model) {
            let Some(ours) = recompute_one(recompute, *model, *key, record)? else {
                break;
            };
            if let Some((stored, recomputed)) = difference(record, &ours, tolerance) {
                bail!(
                    "{}: {} {} (model {}) differs from its recomputation: stored {stored}, \
                     recomputed {recomputed}; it stays unverified, and so do the others",
                    reg.path().display(),
                    noun(record),
                    key.short(),
                    model.short()
                );
            }
            checked += 1;
        }
        if checked == 0 {
            out.unavailable.insert(model.short(), records.len());
            continue;
        }
        out.recomputed.insert(model.short(), checked);
        out.verified.insert(model.short(), records.len());
        verified.extend(records.iter().map(|(k, _)| *k));
    }
    if !verified.is_empty() {
        reg.write(|w| verified.iter().try_for_each(|k| w.mark_verified(*k)))?;
    }
    Ok(out)
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
            *added.entry(kind.noun.to_string()).or_default() += 1;
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
    reg: &Store,
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
    // Made whole under a temporary name, then linked into place: a failure (a full disk) or an
    // interruption never leaves a partial cache file under the name asked for, and every
    // failure removes the temporary one.
    let temp = crate::store::temp_beside(out, "partial");
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let target = Store::open_write(&temp)?;
        target.write(|w| store(w, &found, names))
    })()
    .and_then(|records| {
        std::fs::hard_link(&temp, out).map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot put the cache file in place: {}",
                out.display(),
                crate::store::io_cause(&e)
            )
        })?;
        Ok(records)
    });
    let _ = std::fs::remove_file(&temp);
    let records = written.with_context(|| format!("writing the cache file {}", out.display()))?;
    Ok(ExportReport {
        file: out.display().to_string(),
        records,
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

/// What a store of `benchmarks`' sets holds.
pub fn stats(reg: &Store, benchmarks: Catalogue) -> Result<CacheStats> {
    let mut records = BTreeMap::new();
    for Declared { kind, .. } in kinds(benchmarks) {
        records.insert(kind.noun.to_string(), reg.count(kind)? as usize);
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
