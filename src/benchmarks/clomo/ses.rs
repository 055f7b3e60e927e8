//! The Self-Evaluation Score (CLoMo, Eq. 1) and what qualifies it.
//!
//! With c(r|p, a) = 1 when the judge says the premise p stands in relation r to the argument a
//! (yes) and 0 when it says no:
//!
//!   s = c(r|p1, a) · c(r|p2, a′) − c(r|p2, a) · c(r|p2, a′)
//!
//! so s ∈ {−1, 0, 1}: 1 when the modified argument a′ carries r with p2 while the original
//! argument carried it with p1 and not with p2. An item with an unreadable judgement (a `cot`
//! judge that said neither yes nor no) has no s; such items are counted, not scored. The
//! released `ses.py` scores `1 if c(p2,a′) and (c(p1,a) or not c(p2,a)) else 0` instead, which
//! differs from Eq. 1 when c(p1,a) = c(p2,a); this module follows Eq. 1, as the paper states it.
//!
//! The **reference** s is the same formula with the dataset's gold a′: the score the judge
//! allows a perfect modification. The judge's **discrimination** on gold pairs: the dataset's
//! annotation makes c(r|p1,a) = yes, c(r|p2,gold a′) = yes and c(r|p2,a) = no; per item, the
//! balanced accuracy (the mean of its accuracy on the two yes-pairs and on the no-pair), so a
//! judge that always says yes (or always no) scores 0.5.

use super::Relation;
use crate::benchmarks::{Column, Group, RESAMPLES};
use crate::metrics::{mean_metric, Metric};
use serde::Serialize;

/// One yes/no judgement of the judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Judgement {
    Yes,
    No,
    Unreadable,
}

impl Judgement {
    fn value(self) -> Option<f64> {
        match self {
            Judgement::Yes => Some(1.0),
            Judgement::No => Some(0.0),
            Judgement::Unreadable => None,
        }
    }
}

/// Eq. 1 on the three judgements; `None` when one is unreadable.
pub fn ses(p1_a: Judgement, p2_modified: Judgement, p2_a: Judgement) -> Option<f64> {
    let (c11, c22, c21) = (p1_a.value()?, p2_modified.value()?, p2_a.value()?);
    Some(c11 * c22 - c21 * c22)
}

/// The balanced accuracy of the judge on an item's gold pairs; `None` when one is unreadable.
pub fn discrimination(p1_a: Judgement, p2_gold: Judgement, p2_a: Judgement) -> Option<f64> {
    let (c11, c2g, c21) = (p1_a.value()?, p2_gold.value()?, p2_a.value()?);
    Some(((c11 + c2g) / 2.0 + (1.0 - c21)) / 2.0)
}

/// Everything measured on one item of a result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub relation: Relation,
    /// c(r|p1,a), c(r|p2,a′), c(r|p2,a), c(r|p2,gold a′).
    pub p1_a: Judgement,
    pub p2_modified: Judgement,
    pub p2_a: Judgement,
    pub p2_gold: Judgement,
    /// The modified argument read from the generation.
    pub modified: String,
    /// Equal to the original argument (whitespace-trimmed).
    pub copied: bool,
}

impl Row {
    fn ses(&self) -> Option<f64> {
        ses(self.p1_a, self.p2_modified, self.p2_a)
    }
    fn reference(&self) -> Option<f64> {
        ses(self.p1_a, self.p2_gold, self.p2_a)
    }
    fn discrimination(&self) -> Option<f64> {
        discrimination(self.p1_a, self.p2_gold, self.p2_a)
    }
    fn unreadable(&self) -> usize {
        [self.p1_a, self.p2_modified, self.p2_a, self.p2_gold]
            .iter()
            .filter(|j| **j == Judgement::Unreadable)
            .count()
    }
}

/// The columns of CLoMo's tables, in [`Metrics::entries`] order. The mean length in words is in
/// the JSON only: tables show every column as a percentage.
pub const COLUMNS: [Column; 5] = [
    Column {
        key: "ses",
        title: "SES",
        headline: true,
    },
    Column {
        key: "ses_reference",
        title: "SES (gold a′)",
        headline: false,
    },
    Column {
        key: "discrimination",
        title: "Judge discr.",
        headline: true,
    },
    Column {
        key: "empty",
        title: "Empty",
        headline: false,
    },
    Column {
        key: "copied",
        title: "Copied",
        headline: false,
    },
];

/// Each column's value on one row, in [`COLUMNS`] order; `None` where the row does not count
/// (what the metrics average and what the report's counted items are).
const ENTRIES: [fn(&Row) -> Option<f64>; 5] = [
    Row::ses,
    Row::reference,
    Row::discrimination,
    |r| Some(flag(r.modified.is_empty())),
    |r| Some(flag(r.copied)),
];

fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// The metrics of a group of rows, each with a seeded 95% bootstrap interval over items.
#[derive(Clone, Debug, Serialize)]
pub struct Metrics {
    pub ses: Metric,
    pub ses_reference: Metric,
    pub discrimination: Metric,
    /// Share of items whose modified argument is empty.
    pub empty: Metric,
    /// Share of items whose modified argument equals the original argument.
    pub copied: Metric,
    /// Mean length of the modified argument in words.
    pub words: Metric,
    /// Unreadable judgements (of four per item).
    pub unreadable: usize,
}

impl Metrics {
    /// The metrics of `rows`; `stream` names the group so every group resamples independently.
    pub fn of(rows: &[&Row], seed: u64, stream: &str) -> Metrics {
        let metric = |name: &str, f: &dyn Fn(&Row) -> Option<f64>| {
            let values: Vec<f64> = rows.iter().filter_map(|r| f(r)).collect();
            mean_metric(&values, seed, &format!("clomo {stream} {name}"), RESAMPLES)
        };
        let [ses, reference, discrimination, empty, copied] = ENTRIES;
        Metrics {
            ses: metric("ses", &ses),
            ses_reference: metric("reference", &reference),
            discrimination: metric("discrimination", &discrimination),
            empty: metric("empty", &empty),
            copied: metric("copied", &copied),
            words: metric("words", &|r| {
                Some(r.modified.split_whitespace().count() as f64)
            }),
            unreadable: rows.iter().map(|r| r.unreadable()).sum(),
        }
    }

    pub fn entries(&self) -> [&Metric; 5] {
        [
            &self.ses,
            &self.ses_reference,
            &self.discrimination,
            &self.empty,
            &self.copied,
        ]
    }

    /// Whether the judge fails to separate gold pairs: its discrimination's interval reaches
    /// chance (0.5), or there is none.
    pub fn judge_blind(&self) -> bool {
        self.discrimination.lo.is_none_or(|lo| lo <= 0.5)
    }
}

/// CLoMo's metrics overall and per relation.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub overall: Metrics,
    /// Per relation (NA, SA, S, W), the relations with items only.
    pub relations: Vec<RelationMetrics>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RelationMetrics {
    /// NA, SA, S or W.
    pub relation: &'static str,
    #[serde(flatten)]
    pub metrics: Metrics,
}

impl Report {
    pub fn of(rows: &[Row], seed: u64) -> Report {
        let all: Vec<&Row> = rows.iter().collect();
        let relations = Relation::ALL
            .into_iter()
            .filter_map(|rel| {
                let of: Vec<&Row> = rows.iter().filter(|r| r.relation == rel).collect();
                (!of.is_empty()).then(|| RelationMetrics {
                    relation: rel.as_str(),
                    metrics: Metrics::of(&of, seed, rel.as_str()),
                })
            })
            .collect();
        Report {
            overall: Metrics::of(&all, seed, "overall"),
            relations,
        }
    }

    /// The rows each metric of [`Report::groups`] counts, in its order: overall, then each
    /// relation with items.
    pub fn counted(rows: &[Row]) -> Vec<Vec<Vec<u32>>> {
        let columns = |keep: &dyn Fn(&Row) -> bool| -> Vec<Vec<u32>> {
            ENTRIES
                .iter()
                .map(|value| {
                    (0..rows.len() as u32)
                        .filter(|&i| keep(&rows[i as usize]) && value(&rows[i as usize]).is_some())
                        .collect()
                })
                .collect()
        };
        std::iter::once(columns(&|_| true))
            .chain(
                Relation::ALL
                    .into_iter()
                    .filter(|rel| rows.iter().any(|r| r.relation == *rel))
                    .map(|rel| columns(&|r: &Row| r.relation == rel)),
            )
            .collect()
    }

    pub fn groups(&self) -> Vec<Group> {
        std::iter::once(Group::of("overall", "all", self.overall.entries()))
            .chain(
                self.relations
                    .iter()
                    .map(|r| Group::of("relation", r.relation, r.metrics.entries())),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Judgement::{No, Unreadable, Yes};
    use super::*;

    #[test]
    fn eq_1_on_every_judgement() {
        // (c11, c22, c21) -> s
        let cases = [
            ((Yes, Yes, No), 1.0),
            ((Yes, Yes, Yes), 0.0),
            ((No, Yes, Yes), -1.0),
            ((No, Yes, No), 0.0),
            ((Yes, No, No), 0.0),
            ((Yes, No, Yes), 0.0),
            ((No, No, Yes), 0.0),
            ((No, No, No), 0.0),
        ];
        for ((a, b, c), s) in cases {
            assert_eq!(ses(a, b, c), Some(s), "{a:?} {b:?} {c:?}");
        }
        assert_eq!(ses(Yes, Unreadable, No), None);
    }

    #[test]
    fn discrimination_is_balanced() {
        assert_eq!(discrimination(Yes, Yes, No), Some(1.0));
        assert_eq!(discrimination(Yes, Yes, Yes), Some(0.5), "always yes");
        assert_eq!(discrimination(No, No, No), Some(0.5), "always no");
        assert_eq!(discrimination(No, No, Yes), Some(0.0));
        assert_eq!(discrimination(Yes, No, No), Some(0.75));
        assert_eq!(discrimination(Unreadable, Yes, No), None);
    }

    fn row(relation: Relation, j: [Judgement; 4], modified: &str, copied: bool) -> Row {
        Row {
            relation,
            p1_a: j[0],
            p2_modified: j[1],
            p2_a: j[2],
            p2_gold: j[3],
            modified: modified.into(),
            copied,
        }
    }

    #[test]
    fn report_on_hand_made_judgements() {
        let rows = vec![
            row(Relation::Weaken, [Yes, Yes, No, Yes], "a b c", false),
            row(Relation::Weaken, [Yes, No, No, Yes], "", false),
            row(Relation::Strengthen, [No, Yes, Yes, Yes], "x y", true),
            row(
                Relation::Strengthen,
                [Yes, Unreadable, No, Yes],
                "p q r s",
                false,
            ),
        ];
        let r = Report::of(&rows, 7);
        // s: 1, 0, -1, (none) -> mean 0 over 3.
        assert_eq!(r.overall.ses.value, Some(0.0));
        assert_eq!(r.overall.ses.n, 3);
        // reference s: 1, 1, -1, 1.
        assert_eq!(r.overall.ses_reference.value, Some(0.5));
        // discrimination: 1, 1, (0.5 + 0)/2 = 0.25, 1.
        assert_eq!(r.overall.discrimination.value, Some(0.8125));
        assert_eq!(r.overall.empty.value, Some(0.25));
        assert_eq!(r.overall.copied.value, Some(0.25));
        assert_eq!(r.overall.words.value, Some(9.0 / 4.0));
        assert_eq!(r.overall.unreadable, 1);
        let rels: Vec<_> = r
            .relations
            .iter()
            .map(|r| (r.relation, r.metrics.ses.value))
            .collect();
        assert_eq!(rels, vec![("S", Some(-1.0)), ("W", Some(0.5))]);
        let groups = r.groups();
        assert_eq!(groups.len(), 3);
        assert_eq!(groups[2].value, "W");
        // Deterministic intervals: the same rows and seed give the same bits.
        let again = Report::of(&rows, 7);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            serde_json::to_string(&again).unwrap()
        );
    }

    #[test]
    fn a_judge_that_always_says_yes_is_blind() {
        let rows: Vec<Row> = (0..20)
            .map(|_| row(Relation::Weaken, [Yes; 4], "a", false))
            .collect();
        let r = Report::of(&rows, 1);
        assert_eq!(r.overall.ses.value, Some(0.0));
        assert!(r.overall.judge_blind());
        let good: Vec<Row> = (0..20)
            .map(|_| row(Relation::Weaken, [Yes, Yes, No, Yes], "a", false))
            .collect();
        assert!(!Report::of(&good, 1).overall.judge_blind());
    }
}
