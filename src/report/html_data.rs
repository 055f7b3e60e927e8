//! What the HTML report embeds: every selected result with its tables, the items its numbers
//! count, each item as its benchmark shows it, and each turn's answer with the records it was
//! read from — label scores (per-token log-probs, the value under the result's normalisation)
//! and generations. All of it is read from the store; the only values computed here are the
//! normalised label values, by the runner's own `eval::normalise` from the stored log-probs, as
//! `eval::derive` does to check a result.
//!
//! Compact by sharing: a score or a generation read by several results (the normalisations of
//! one model share their first turn's scores) is written once and named by its position; a set's
//! items are written once for all the results on it.

use super::robustness::{self, Conclusion};
use super::Entry;
use crate::benchmarks::view::{Count, Counted, ItemView};
use crate::benchmarks::{Catalogue, Column, Group};
use crate::eval::{normalise, GenerationRecord, Normalisation, ResultRecord, ScoreRecord};
use crate::store::{Id, Record, Store, StoredSet};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct Data {
    benchmarks: Vec<BenchmarkData>,
    sets: Vec<SetData>,
    results: Vec<ResultData>,
    /// `[key, label, per-token log-probs]`.
    scores: Vec<(String, String, Vec<f32>)>,
    /// `[key, text]`.
    generations: Vec<(String, String)>,
    robustness: Vec<Conclusion>,
}

#[derive(Serialize)]
struct BenchmarkData {
    name: String,
    title: &'static str,
    note: &'static str,
    columns: &'static [Column],
}

#[derive(Serialize)]
struct SetData {
    name: String,
    id: String,
    /// Member ids (hex), in the set's order.
    items: Vec<String>,
    views: Vec<ItemView>,
}

#[derive(Serialize)]
struct ResultData {
    /// Positions in [`Data::benchmarks`] and [`Data::sets`].
    benchmark: usize,
    set: usize,
    model: String,
    template: String,
    normalisation: String,
    id: String,
    n: usize,
    groups: Vec<Group>,
    /// Which rows each group's metrics count (positions in `rows`); `None` when its benchmark
    /// does not say.
    counted: Option<Counted>,
    /// Each row's item, as its position in the set.
    at: Vec<u32>,
    rows: Vec<Vec<TurnData>>,
}

/// One turn of one row.
#[derive(Serialize)]
#[serde(untagged)]
enum TurnData {
    /// `[answer, label scores, their values under the normalisation, content-free scores]`
    /// (scores as positions in [`Data::scores`]).
    Scored(String, Vec<u32>, Vec<f64>, Vec<u32>),
    /// A position in [`Data::generations`].
    Generated(u32),
}

/// Records written once, named by position.
#[derive(Default)]
struct Shared {
    scores: Vec<(String, String, Vec<f32>)>,
    score_at: BTreeMap<Id, u32>,
    generations: Vec<(String, String)>,
    generation_at: BTreeMap<Id, u32>,
}

impl Shared {
    /// Positions of `keys`' scores, with the records (read from `store` when new).
    fn scores(&mut self, store: &Store, keys: &[Id]) -> Result<(Vec<u32>, Vec<ScoreRecord>)> {
        let found = store.get_many::<ScoreRecord>(keys)?;
        let mut at = Vec::with_capacity(keys.len());
        let mut records = Vec::with_capacity(keys.len());
        for (key, record) in keys.iter().zip(found) {
            let record = record.with_context(|| format!("missing score {}", key.short()))?;
            let next = self.scores.len() as u32;
            let i = *self.score_at.entry(*key).or_insert(next);
            if i == next {
                self.scores
                    .push((key.hex(), record.label.clone(), record.logprobs.clone()));
            }
            at.push(i);
            records.push(record);
        }
        Ok((at, records))
    }

    fn generation(&mut self, store: &Store, key: Id) -> Result<u32> {
        if let Some(&i) = self.generation_at.get(&key) {
            return Ok(i);
        }
        let g = store
            .get::<GenerationRecord>(&key)?
            .with_context(|| format!("missing generation {}", key.short()))?;
        let i = self.generations.len() as u32;
        self.generations.push((key.hex(), g.text));
        self.generation_at.insert(key, i);
        Ok(i)
    }
}

/// Everything the page shows of `entries` (as `super::entries` gave them from `store`, their
/// benchmarks among `benchmarks`).
pub fn collect(store: &Store, benchmarks: Catalogue, entries: &[Entry]) -> Result<Data> {
    let mut data = Data {
        benchmarks: Vec::new(),
        sets: Vec::new(),
        results: Vec::new(),
        scores: Vec::new(),
        generations: Vec::new(),
        robustness: robustness::conclusions(entries),
    };
    let mut shared = Shared::default();
    let mut set_at: BTreeMap<Id, (usize, BTreeMap<Id, u32>)> = BTreeMap::new();
    for e in entries {
        let rid = store.resolve(ResultRecord::KIND, &e.result_id)?;
        let r = store
            .get::<ResultRecord>(&rid)?
            .with_context(|| format!("result {} vanished", rid.short()))?;
        let benchmark = benchmarks.named(&e.benchmark)?;
        let b = match data.benchmarks.iter().position(|b| b.name == e.benchmark) {
            Some(b) => b,
            None => {
                data.benchmarks.push(BenchmarkData {
                    name: e.benchmark.clone(),
                    title: e.title,
                    note: e.evaluation.note,
                    columns: e.evaluation.columns,
                });
                data.benchmarks.len() - 1
            }
        };
        let set_id = Id(r.set);
        if let std::collections::btree_map::Entry::Vacant(slot) = set_at.entry(set_id) {
            let set = store
                .get::<StoredSet>(&set_id)?
                .with_context(|| format!("result {} names a missing set", rid.short()))?;
            let ids: Vec<Id> = set.member_ids().collect();
            let views = benchmark
                .views(store, &set)
                .with_context(|| format!("the items of set `{}`", e.set))?;
            if views.len() != ids.len() {
                bail!(
                    "{} gave {} item views for the {} items of set `{}`",
                    benchmark.title(),
                    views.len(),
                    ids.len(),
                    e.set
                );
            }
            let position = ids.iter().enumerate().map(|(i, id)| (*id, i as u32));
            slot.insert((data.sets.len(), position.collect()));
            data.sets.push(SetData {
                name: e.set.clone(),
                id: set_id.hex(),
                items: ids.iter().map(Id::hex).collect(),
                views,
            });
        }
        let (set, positions) = &set_at[&set_id];
        let result = result(store, (benchmark, b), (*set, positions), e, &r, &mut shared)
            .with_context(|| format!("result {}", rid.short()))?;
        data.results.push(result);
    }
    data.scores = shared.scores;
    data.generations = shared.generations;
    Ok(data)
}

/// One result's rows and the items its numbers count: its benchmark with its position in
/// [`Data::benchmarks`], and its set's position in [`Data::sets`] with each member's position in
/// the set.
fn result(
    store: &Store,
    (benchmark, b): (&dyn crate::benchmarks::Benchmark, usize),
    (set, positions): (usize, &BTreeMap<Id, u32>),
    e: &Entry,
    r: &ResultRecord,
    shared: &mut Shared,
) -> Result<ResultData> {
    let norm = Normalisation::named(&r.normalisation)
        .with_context(|| format!("unknown normalisation `{}`", r.normalisation))?;
    let fillers = norm.fillers().len();
    let mut at = Vec::with_capacity(r.rows.len());
    let mut rows = Vec::with_capacity(r.rows.len());
    let mut answered = Vec::with_capacity(r.rows.len());
    for row in &r.rows {
        let item = Id(row.item);
        at.push(
            *positions
                .get(&item)
                .with_context(|| format!("item {} is not a member of its set", item.short()))?,
        );
        let mut turns = Vec::with_capacity(row.turns.len());
        for (t, turn) in row.turns.iter().enumerate() {
            let what = || format!("item {}, turn {}", item.short(), t + 1);
            turns.push(match (turn.answer.label(), turn.generation()) {
                (Some(label), _) => {
                    let keys: Vec<Id> = turn.keys.iter().map(|k| Id(*k)).collect();
                    if keys.is_empty() || !keys.len().is_multiple_of(1 + fillers) {
                        bail!(
                            "{}: {} score keys are not whole label sets for `{}`",
                            what(),
                            keys.len(),
                            norm.as_str()
                        );
                    }
                    let (scores, records) = shared.scores(store, &keys).with_context(what)?;
                    let labels = keys.len() / (1 + fillers);
                    let free: Vec<Vec<ScoreRecord>> = records[labels..]
                        .chunks(labels)
                        .map(<[_]>::to_vec)
                        .collect();
                    let values =
                        normalise::values(&records[..labels], &free, norm).with_context(what)?;
                    TurnData::Scored(
                        label.as_str().to_string(),
                        scores[..labels].to_vec(),
                        values,
                        scores[labels..].to_vec(),
                    )
                }
                (None, Some(key)) => {
                    TurnData::Generated(shared.generation(store, key).with_context(what)?)
                }
                (None, None) => bail!("{}: a generated turn without its generation", what()),
            });
        }
        rows.push(turns);
        answered.push(crate::eval::answered(store, row)?);
    }
    let counted = benchmark.counted(store, &answered)?;
    if let Some(c) = &counted {
        agrees(c, &e.evaluation.groups, rows.len())
            .with_context(|| format!("{}'s counted items", benchmark.title()))?;
    }
    Ok(ResultData {
        benchmark: b,
        set,
        model: e.model.clone(),
        template: e.template.clone(),
        normalisation: e.normalisation.clone(),
        id: e.result_id.clone(),
        n: e.evaluation.n,
        groups: e.evaluation.groups.clone(),
        counted,
        at,
        rows,
    })
}

/// Refuses counted items that are not the metrics' conditioning sets in size and shape: a link
/// must open exactly the items its number counts.
fn agrees(counted: &Counted, groups: &[Group], rows: usize) -> Result<()> {
    if counted.0.len() != groups.len() {
        bail!(
            "{} groups counted for {} evaluated",
            counted.0.len(),
            groups.len()
        );
    }
    for (c, g) in counted.0.iter().zip(groups) {
        if c.len() != g.metrics.len() {
            bail!("group {} {}: {} columns counted", g.by, g.value, c.len());
        }
        for (k, (items, m)) in c.iter().zip(&g.metrics).enumerate() {
            let (n, counted) = (m.as_ref().map(|m| m.n), items.as_ref().map(Count::n));
            if n != counted {
                bail!(
                    "group {} {}, column {}: n = {n:?} but {counted:?} counted",
                    g.by,
                    g.value,
                    k + 1
                );
            }
            let positions: Vec<u32> = match items {
                Some(Count::Rows(r)) => r.clone(),
                Some(Count::Units { units, .. }) => {
                    if units.iter().any(|u| u.rows.is_empty()) {
                        bail!(
                            "group {} {}, column {}: an empty unit",
                            g.by,
                            g.value,
                            k + 1
                        );
                    }
                    units.iter().flat_map(|u| u.rows.iter().copied()).collect()
                }
                None => Vec::new(),
            };
            if let Some(p) = positions.iter().find(|&&p| p as usize >= rows) {
                bail!(
                    "group {} {}, column {}: row {p} of {rows}",
                    g.by,
                    g.value,
                    k + 1
                );
            }
        }
    }
    Ok(())
}
