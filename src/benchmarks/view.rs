//! What the HTML report (`crate::report::html`) needs of a benchmark besides its metrics: how one
//! of its items reads ([`ItemView`], from [`super::Benchmark::views`]) and which items each of
//! its metrics counts ([`Counted`], from [`super::Benchmark::counted`]), so that every number of
//! its tables opens exactly the items behind it. The report renders these shapes alike for
//! every benchmark and names none.

use crate::logic::Label;
use crate::metrics::{Derived, Outcome};
use serde::Serialize;

/// One item as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ItemView {
    /// Short values the report lists beside the item and filters by (edit type, source, a
    /// question's tags), in the order shown.
    pub facets: Vec<(String, String)>,
    /// The gold label of each turn the model under test answers with a label, in turn order;
    /// empty when the benchmark has none (a generation, a judge's verdict).
    pub gold: Vec<Label>,
    /// The item's text, in reading order.
    pub blocks: Vec<Block>,
}

/// A titled part of an item's text.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Block {
    Text {
        title: String,
        text: String,
    },
    List {
        title: String,
        items: Vec<String>,
    },
    /// A list before and after an edit, line by line: kept, removed or added.
    Diff {
        title: String,
        lines: Vec<Line>,
    },
}

/// One line of a [`Block::Diff`].
#[derive(Clone, Debug, Serialize)]
pub struct Line {
    pub mark: Mark,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    Kept,
    Removed,
    Added,
}

/// Items as their `export` objects give them, for a benchmark without a view of its own: short
/// one-line values and numbers as facets, longer text as text, lists as lists (an element that
/// is not text as compact JSON); the `id` is the report's own.
pub fn fields(exported: Vec<serde_json::Value>) -> Vec<ItemView> {
    use serde_json::Value;
    let line = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    exported
        .into_iter()
        .map(|object| {
            let mut view = ItemView {
                facets: Vec::new(),
                gold: Vec::new(),
                blocks: Vec::new(),
            };
            let Value::Object(fields) = object else {
                view.blocks.push(Block::Text {
                    title: "item".into(),
                    text: object.to_string(),
                });
                return view;
            };
            for (title, value) in fields.into_iter().filter(|(k, _)| k != "id") {
                match value {
                    Value::Array(items) => view.blocks.push(Block::List {
                        title,
                        items: items.iter().map(line).collect(),
                    }),
                    Value::String(s) if s.chars().count() > FACET_CHARS || s.contains('\n') => {
                        view.blocks.push(Block::Text { title, text: s })
                    }
                    Value::Object(_) => view.blocks.push(Block::Text {
                        title,
                        text: value.to_string(),
                    }),
                    scalar => view.facets.push((title, line(&scalar))),
                }
            }
            view
        })
        .collect()
}

/// The longest text [`fields`] makes a facet of.
const FACET_CHARS: usize = 40;

/// For each group of a benchmark's evaluation (in its order) and each of its columns, what the
/// metric counts — its conditioning set, whose size is the metric's `n` — or `None` where the
/// column has no metric in that group.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counted(pub Vec<Vec<Option<Count>>>);

/// What one metric's `n` counts, as positions in the result's rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Count {
    /// Items, each counted once: `n` is their number.
    Rows(Vec<u32>),
    /// Units made of items (RobustLR's families: a metric averaged over families counts
    /// families), each with the items of it the metric reads: `n` is the number of units.
    Units {
        /// What a unit is, singular and plural ("family", "families"), for the report's words.
        noun: (&'static str, &'static str),
        units: Vec<Unit>,
    },
}

/// One counted unit: its name and the rows of it a metric reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unit {
    pub name: String,
    pub rows: Vec<u32>,
}

impl Count {
    /// The metric's `n`.
    pub fn n(&self) -> usize {
        match self {
            Count::Rows(rows) => rows.len(),
            Count::Units { units, .. } => units.len(),
        }
    }
}

impl Counted {
    /// Groups in which every column has a metric over items.
    pub fn every(groups: Vec<Vec<Vec<u32>>>) -> Counted {
        Counted(
            groups
                .into_iter()
                .map(|columns| columns.into_iter().map(|c| Some(Count::Rows(c))).collect())
                .collect(),
        )
    }
}

/// The rows in each proportion's conditioning set, then in each derived value's (the rows of
/// the sets it names, in their order: its n is their total), in the order
/// [`crate::metrics::estimate`] returns the metrics.
pub fn conditioning<const N: usize>(outcomes: &[Outcome<N>], derived: &[Derived]) -> Vec<Vec<u32>> {
    let inside = |k: usize| -> Vec<u32> {
        (0..outcomes.len() as u32)
            .filter(|&i| outcomes[i as usize][k].0)
            .collect()
    };
    let mut out: Vec<Vec<u32>> = (0..N).map(inside).collect();
    out.extend(
        derived
            .iter()
            .map(|d| d.n_of.iter().flat_map(|&k| inside(k)).collect()),
    );
    out
}

/// Positions within a group mapped back to the result's rows (`rows[i]` is the group's i-th).
pub fn within(rows: &[u32], positions: Vec<u32>) -> Vec<u32> {
    positions.into_iter().map(|p| rows[p as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditioning_sets_have_the_sizes_of_the_estimates() {
        let outcomes: Vec<Outcome<2>> = vec![
            [(true, true), (false, false)],
            [(true, false), (true, true)],
            [(false, false), (true, false)],
        ];
        let derived = [Derived {
            value: |v| v[0].zip(v[1]).map(|(a, b)| a - b),
            n_of: &[0, 1],
        }];
        let sets = conditioning(&outcomes, &derived);
        let metrics = crate::metrics::estimate(&outcomes, &derived, 0, 0);
        assert_eq!(sets, [vec![0, 1], vec![1, 2], vec![0, 1, 1, 2]]);
        for (set, m) in sets.iter().zip(&metrics) {
            assert_eq!(set.len(), m.n);
        }
        assert_eq!(within(&[4, 7, 9], vec![0, 2]), [4, 9]);
    }
}
