//! `deltalogic stats`: counts of everything in the store: the records of every kind the
//! benchmarks' catalogue declares (`eval::kinds::kinds`), then items, episodes and sets in detail.

use super::emit;
use crate::benchmarks::{self, deltalogic::Episode};
use crate::datasets::BaseItem;
use crate::store::{Id, Names, SourceFile, Store};
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct Stats {
    store: String,
    source_files: usize,
    /// Every declared record kind, by its table: a new kind is counted without a change here.
    records_per_kind: BTreeMap<&'static str, u64>,
    items_per_dataset: BTreeMap<String, usize>,
    episodes: usize,
    episodes_per_source_and_type: BTreeMap<String, BTreeMap<String, usize>>,
    sets: Vec<SetStats>,
}

#[derive(Serialize)]
struct SetStats {
    name: String,
    id: Id,
    benchmark: String,
    members: usize,
}

fn stats(reg: &Store) -> Result<Stats> {
    let mut items_per_dataset = BTreeMap::new();
    for (_, item) in reg.all::<BaseItem>()? {
        *items_per_dataset.entry(item.origin.dataset).or_insert(0) += 1;
    }
    let eps = reg.all::<Episode>()?;
    let mut per = BTreeMap::<String, BTreeMap<String, usize>>::new();
    for (_, e) in &eps {
        *per.entry(e.source.clone())
            .or_default()
            .entry(e.edit_type.as_str().to_string())
            .or_insert(0) += 1;
    }
    let mut sets = Vec::new();
    for (name, id) in reg.names(Names::Sets)? {
        if let Some((_, s)) = reg.set_by_name(&name)? {
            sets.push(SetStats {
                name,
                id,
                benchmark: s.benchmark,
                members: s.members.len(),
            });
        }
    }
    let mut records_per_kind = BTreeMap::new();
    for declared in crate::eval::kinds::kinds(benchmarks::ALL) {
        records_per_kind.insert(declared.kind.table, reg.count(declared.kind)?);
    }
    Ok(Stats {
        store: reg.path().display().to_string(),
        source_files: reg.all::<SourceFile>()?.len(),
        records_per_kind,
        items_per_dataset,
        episodes: eps.len(),
        episodes_per_source_and_type: per,
        sets,
    })
}

pub fn run(store: &Store, json: bool) -> Result<()> {
    let s = stats(store)?;
    emit(json, &s, || {
        println!("store: {}", s.store);
        println!("source files: {}", s.source_files);
        for (table, n) in &s.records_per_kind {
            println!("records: {table:<12} {n}");
        }
        for (d, n) in &s.items_per_dataset {
            println!("items: {d:<12} {n}");
        }
        println!("episodes: {}", s.episodes);
        for (src, types) in &s.episodes_per_source_and_type {
            for (t, n) in types {
                println!("  {src:<12} {t:<20} {n}");
            }
        }
        for set in &s.sets {
            println!(
                "set {:<20} {:<14} {} members  {}",
                set.name,
                set.benchmark,
                set.members,
                set.id.short()
            );
        }
    })
}
