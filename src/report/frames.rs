//! The store as data frames (`report::table`), for pandas, polars or DuckDB:
//! - `results`: one row per turn of each result (the answer, the gold label, whether they agree);
//! - `scores`: one row per label of each scored turn (its score key, log-likelihood, value under
//!   the result's normalisation, whether it was chosen, whether it is gold);
//! - `items`: one row per item of a set, the benchmark's export (`export items`) with its
//!   top-level fields as columns.
//!
//! Rows of `results` and `scores` share `result_id`, `item_id` and `turn` (from 1), and `items`
//! shares `item_id`, so the three join on them. Ids are full lowercase hex. Turns are read through
//! `report::turns`, which checks each against its result.

use super::table::{Cell, Kind, Table};
use super::turns::{self, Turn};
use super::Entry;
use crate::benchmarks::Prepared;
use crate::eval::ResultRecord;
use crate::store::Id;
use crate::store::Store;
use anyhow::{bail, Context, Result};
use serde_json::Value;

/// A result to tabulate: as the report shows it, its record, and its benchmark's questions.
pub struct Source<'a> {
    pub entry: &'a Entry,
    pub id: Id,
    pub result: &'a ResultRecord,
    pub prepared: &'a dyn Prepared,
}

/// The columns naming a result's settings, first in `results` and `scores`.
const SETTINGS: [(&str, Kind); 7] = [
    ("result_id", Kind::Text),
    ("model", Kind::Text),
    ("model_id", Kind::Text),
    ("benchmark", Kind::Text),
    ("set", Kind::Text),
    ("template", Kind::Text),
    ("normalisation", Kind::Text),
];

fn settings(s: &Source) -> Vec<Cell> {
    let e = s.entry;
    vec![
        e.result_id.as_str().into(),
        e.model.as_str().into(),
        Id(s.result.model).hex().into(),
        e.benchmark.as_str().into(),
        e.set.as_str().into(),
        e.template.as_str().into(),
        e.normalisation.as_str().into(),
    ]
}

fn schema(more: &[(&'static str, Kind)]) -> Vec<(&'static str, Kind)> {
    SETTINGS.iter().chain(more).copied().collect()
}

/// One row per turn of each result.
pub fn results(reg: &Store, sources: &[Source]) -> Result<Table> {
    let mut table = Table::new(&schema(&[
        ("item_index", Kind::Int),
        ("item_id", Kind::Text),
        ("turn", Kind::Int),
        ("answer", Kind::Text),
        ("gold", Kind::Text),
        ("correct", Kind::Bool),
        ("prompt_id", Kind::Text),
        ("generation_key", Kind::Text),
    ]));
    for s in sources {
        turns::each(reg, (s.id, s.result), s.prepared, |turn| {
            let mut row = settings(s);
            match turn {
                Turn::Scored(t) => {
                    let answer = t.labels[t.predicted].1;
                    row.extend([
                        t.place.item_index.into(),
                        t.place.item.hex().into(),
                        (t.place.turn + 1).into(),
                        answer.as_str().into(),
                        t.gold.map(|g| g.as_str()).into(),
                        t.gold.map(|g| g == answer).into(),
                        Id(t.own[0].prompt).hex().into(),
                        Cell::Null,
                    ]);
                }
                Turn::Generated(place, key) => row.extend([
                    place.item_index.into(),
                    place.item.hex().into(),
                    (place.turn + 1).into(),
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    key.hex().into(),
                ]),
            }
            table.push(row)
        })
        .with_context(|| format!("result {}", s.id.short()))?;
    }
    Ok(table)
}

/// One row per label of each scored turn of each result.
pub fn scores(reg: &Store, sources: &[Source]) -> Result<Table> {
    let mut table = Table::new(&schema(&[
        ("item_index", Kind::Int),
        ("item_id", Kind::Text),
        ("turn", Kind::Int),
        ("label_index", Kind::Int),
        ("label", Kind::Text),
        ("label_text", Kind::Text),
        ("score_key", Kind::Text),
        ("prompt_id", Kind::Text),
        ("tokens", Kind::Int),
        ("logprob", Kind::Float),
        ("value", Kind::Float),
        ("chosen", Kind::Bool),
        ("gold", Kind::Bool),
    ]));
    for s in sources {
        turns::each(reg, (s.id, s.result), s.prepared, |turn| {
            let Turn::Scored(t) = turn else {
                return Ok(());
            };
            for (i, ((text, label), score)) in t.labels.iter().zip(&t.own).enumerate() {
                let mut row = settings(s);
                row.extend([
                    t.place.item_index.into(),
                    t.place.item.hex().into(),
                    (t.place.turn + 1).into(),
                    i.into(),
                    label.as_str().into(),
                    text.as_str().into(),
                    t.own_keys[i].hex().into(),
                    Id(score.prompt).hex().into(),
                    score.tokens.len().into(),
                    score.sum().into(),
                    t.values[i].into(),
                    (i == t.predicted).into(),
                    t.target.map(|g| g == i).into(),
                ]);
                table.push(row)?;
            }
            Ok(())
        })
        .with_context(|| format!("result {}", s.id.short()))?;
    }
    Ok(table)
}

/// One row per item of set `set` (id `set_id`): `docs` are the benchmark's export, in the set's
/// order. Each top-level field is a column: text, integer, float or boolean when every item's
/// value is one (or null), else the value's JSON text; `id` becomes `item_id`.
pub fn items(set: &str, set_id: Id, docs: &[Value]) -> Result<Table> {
    let mut fields: Vec<&str> = Vec::new();
    for doc in docs {
        let object = doc
            .as_object()
            .context("the benchmark exports an item that is not a JSON object")?;
        for key in object.keys() {
            if !fields.contains(&key.as_str()) {
                fields.push(key);
            }
        }
    }
    if let Some(clash) = fields
        .iter()
        .find(|f| ["set", "set_id", "item_index", "item_id"].contains(f))
    {
        bail!(
            "the benchmark's items have a field `{clash}`, which the table's own column is named"
        );
    }
    let kind = |field: &str| {
        let values = docs
            .iter()
            .filter_map(|d| d.get(field))
            .filter(|v| !v.is_null());
        let all = |p: fn(&Value) -> bool| values.clone().all(p);
        if all(Value::is_string) {
            Kind::Text
        } else if all(|v| v.is_i64()) {
            Kind::Int
        } else if all(Value::is_number) {
            Kind::Float
        } else if all(Value::is_boolean) {
            Kind::Bool
        } else {
            Kind::Text
        }
    };
    let kinds: Vec<Kind> = fields.iter().map(|f| kind(f)).collect();
    let names: Vec<&str> = fields
        .iter()
        .map(|f| if *f == "id" { "item_id" } else { f })
        .collect();
    let mut columns = vec![
        ("set", Kind::Text),
        ("set_id", Kind::Text),
        ("item_index", Kind::Int),
    ];
    columns.extend(names.iter().copied().zip(kinds.iter().copied()));
    let mut table = Table::new(&columns);
    for (i, doc) in docs.iter().enumerate() {
        let mut row = vec![set.into(), set_id.hex().into(), i.into()];
        for (field, kind) in fields.iter().zip(&kinds) {
            row.push(match (doc.get(*field), kind) {
                (None | Some(Value::Null), _) => Cell::Null,
                (Some(Value::String(s)), Kind::Text) => s.clone().into(),
                (Some(v), Kind::Int) => Cell::Int(v.as_i64().context("an integer field")?),
                (Some(v), Kind::Float) => Cell::Float(v.as_f64().context("a number field")?),
                (Some(Value::Bool(b)), Kind::Bool) => (*b).into(),
                (Some(v), _) => serde_json::to_string(v)?.into(),
            });
        }
        table.push(row)?;
    }
    Ok(table)
}
