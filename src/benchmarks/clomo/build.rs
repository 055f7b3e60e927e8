//! `deltalogic build clomo`: the items of one split of the CLoMo files, with the prompt of each
//! setting, or a seeded sample of them per relation.
//!
//! The three files of a split (`zero_`, `few_`, `cot_<split>.json`) hold the same questions in
//! the same order, differing only in the rendered `input`; they are read with the dataset reader
//! (`crate::datasets`, format `clomo`) and joined on `id_string`. Any disagreement between them
//! on the argument, premises, relation, gold output or instruction is an error naming both
//! files, so an item never mixes two versions of a question.

use super::prompts::Setting;
use super::{ClomoItem, Relation, BENCHMARK};
use crate::datasets::{self, home, BaseItem, Format};
use crate::store::{canonical, Id, Names, Record, Store, StoredSet, StoredSpec};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bumped when the items made from the same files change, so that specs change with them.
const BUILDER_VERSION: u32 = 1;

/// `deltalogic build clomo`: CLoMo items of one split (an argument, a premise in a relation to
/// it, and a premise the model's rewrite must put in that relation; judged by SES).
#[derive(clap::Parser, Debug)]
pub struct BuildArgs {
    /// The folder of the CLoMo files (`{zero,few,cot}_{train,dev,test}.json`) [default:
    /// clomo/data in the datasets folder, see `deltalogic datasets where`].
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    #[arg(long, default_value = "test", value_parser = ["train", "dev", "test"])]
    pub split: String,
    /// Keep N items of each relation (all of a relation that has fewer), drawn after a seeded
    /// shuffle.
    #[arg(long = "per-type", value_parser = crate::bounds::count(1, crate::bounds::MAX_SIZE))]
    pub per_type: Option<usize>,
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::seed())]
    pub seed: u64,
    /// Name of the set.
    #[arg(long, default_value = "clomo")]
    pub name: String,
}

/// What `build clomo` made.
#[derive(Clone, Debug, Serialize)]
pub struct BuildOutcome {
    pub name: String,
    pub set: Id,
    pub split: String,
    /// Items in the split's files, and in the set.
    pub read: usize,
    pub items: usize,
    pub new_items: usize,
    /// Items of the set per relation (NA, SA, S, W).
    pub per_relation: BTreeMap<&'static str, usize>,
}

impl BuildOutcome {
    pub fn text(&self) -> String {
        // In the paper's order, not the map's.
        let per: Vec<String> = Relation::ALL
            .iter()
            .map(|r| format!("{} {}", r.as_str(), self.per_relation[r.as_str()]))
            .collect();
        format!(
            "set `{}` ({}): {} of {} CLoMo {} items ({}), {} new\n",
            self.name,
            self.set.short(),
            self.items,
            self.read,
            self.split,
            per.join(", "),
            self.new_items
        )
    }
}

/// The field `key` of an item's dataset extras.
fn extra<'a>(item: &'a BaseItem, key: &str) -> Result<&'a str> {
    match item.extra.iter().find(|(k, _)| k == key) {
        Some((_, v)) => Ok(v),
        None => bail!(
            "{} {}: no field `{key}`",
            item.origin.file,
            item.origin.position
        ),
    }
}

/// A premise without its `Premise1:`/`Premise2:` label, as `ses.py` strips it.
fn unlabelled<'a>(item: &BaseItem, text: &'a str, label: &str) -> Result<&'a str> {
    match text.split_once(label) {
        Some((_, rest)) => Ok(rest.trim()),
        None => bail!(
            "{} {}: premise `{text}` lacks its `{label}` label",
            item.origin.file,
            item.origin.position
        ),
    }
}

/// The items of one setting's file: (id_string, item with this setting's input only).
fn read_setting(data: &Path, setting: Setting, split: &str) -> Result<Vec<(ClomoItem, String)>> {
    let file = data.join(format!("{}_{split}.json", setting.as_str()));
    let read = datasets::read_file(Format::Clomo, data, &file)?;
    if let Some(bad) = read.bad.first() {
        bail!("{bad} ({} bad records in all)", read.bad.len());
    }
    read.items
        .iter()
        .map(|item| {
            let qtype = extra(item, "qtype")?;
            let Some(relation) = Relation::from_qtype(qtype) else {
                bail!(
                    "{} {}: qtype `{qtype}` is not 0, 1, 2 or 3",
                    item.origin.file,
                    item.origin.position
                );
            };
            let [argument, p1, p2] = item.premises.as_slice() else {
                unreachable!("the CLoMo reader gives P, O, Om")
            };
            let clomo = ClomoItem {
                split: split.to_string(),
                id_string: extra(item, "id_string")?.to_string(),
                relation,
                argument: argument.clone(),
                premise1: unlabelled(item, p1, "Premise1:")?.to_string(),
                premise2: unlabelled(item, p2, "Premise2:")?.to_string(),
                gold: extra(item, "output")?.to_string(),
                instruction: extra(item, "instruction")?.to_string(),
                inputs: Default::default(),
            };
            Ok((clomo, extra(item, "input")?.to_string()))
        })
        .collect()
}

/// The split's items, each with its three inputs, in file order.
pub fn read_split(data: &Path, split: &str) -> Result<Vec<ClomoItem>> {
    let mut items: Vec<ClomoItem> = Vec::new();
    for setting in Setting::ALL {
        let read = read_setting(data, setting, split)?;
        if setting == Setting::ALL[0] {
            items = read.iter().map(|(i, _)| i.clone()).collect();
            let mut seen = std::collections::BTreeSet::new();
            if let Some(dup) = items.iter().find(|i| !seen.insert(&i.id_string)) {
                bail!(
                    "{}: id_string `{}` appears twice",
                    data.join(format!("{}_{split}.json", setting.as_str()))
                        .display(),
                    dup.id_string
                );
            }
        }
        let file = |s: Setting| format!("{}_{split}.json", s.as_str());
        if read.len() != items.len() {
            bail!(
                "{}: {} items, but {} has {}",
                file(setting),
                read.len(),
                file(Setting::ALL[0]),
                items.len()
            );
        }
        for (pos, (item, (other, input))) in items.iter_mut().zip(read).enumerate() {
            let bare = ClomoItem {
                inputs: Default::default(),
                ..item.clone()
            };
            if other != bare {
                bail!(
                    "{} record {pos} (`{}`) differs from {} record {pos} (`{}`) in more than its \
                     input",
                    file(setting),
                    other.id_string,
                    file(Setting::ALL[0]),
                    item.id_string
                );
            }
            item.inputs[setting as usize] = input;
        }
    }
    Ok(items)
}

/// `per_type` items of each relation, drawn in id order after a seeded shuffle: the same files
/// and seed give the same sample.
fn sampled(mut items: Vec<ClomoItem>, per_type: usize, seed: u64) -> Vec<ClomoItem> {
    items.sort_by_key(|i| i.id());
    crate::rng::Rng::derive(seed, "clomo sample").shuffle(&mut items);
    let mut taken: BTreeMap<Relation, usize> = BTreeMap::new();
    items.retain(|i| {
        let n = taken.entry(i.relation).or_default();
        *n += 1;
        *n <= per_type
    });
    items
}

pub fn build(store: &Store, a: &BuildArgs) -> Result<BuildOutcome> {
    let data = match &a.data {
        Some(dir) => dir.clone(),
        None => home::find(None)?.dir.join(Format::Clomo.folder()),
    };
    let all = read_split(&data, &a.split)
        .with_context(|| format!("reading CLoMo `{}` from {}", a.split, data.display()))?;
    let read = all.len();
    let items = match a.per_type {
        Some(n) => sampled(all, n, a.seed),
        None => all,
    };
    if items.is_empty() {
        bail!("no CLoMo items to store in set `{}`", a.name);
    }
    #[derive(Serialize)]
    struct Spec<'a> {
        benchmark: &'static str,
        builder_version: u32,
        split: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        per_type: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        seed: Option<u64>,
    }
    let spec = Spec {
        benchmark: BENCHMARK,
        builder_version: BUILDER_VERSION,
        split: &a.split,
        per_type: a.per_type,
        seed: a.per_type.map(|_| a.seed),
    };
    let json = String::from_utf8(canonical(&spec)).expect("JSON is UTF-8");
    let mut per_relation = BTreeMap::new();
    for r in Relation::ALL {
        per_relation.insert(r.as_str(), items.iter().filter(|i| i.relation == r).count());
    }
    let (set, new_items) = store
        .write(|w| {
            let (spec, _) = w.put(&StoredSpec { json })?;
            let mut ids = Vec::with_capacity(items.len());
            let mut new = 0;
            for item in &items {
                let (id, fresh) = w.put(item)?;
                ids.push(id);
                new += usize::from(fresh);
            }
            let (set, _) = w.put(&StoredSet::new(BENCHMARK, spec, ids))?;
            w.name(Names::Sets, &a.name, set)?;
            Ok((set, new))
        })
        .with_context(|| format!("storing set `{}`", a.name))?;
    Ok(BuildOutcome {
        name: a.name.clone(),
        set,
        split: a.split.clone(),
        read,
        items: items.len(),
        new_items,
        per_relation,
    })
}
