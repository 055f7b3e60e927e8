//! Every record kind a store holds, by layer: the store's own, the runner's ([`KINDS`]) and the
//! benchmarks' ([`kinds`]): what cache verify, merge, stats and export walk.

use super::evaluated::EvaluationRecord;
use super::records::{GenerationRecord, ModelRecord, PromptRecord, ScoreRecord, ServedRecord};
use crate::benchmarks::Catalogue;
use crate::store::{self, Declared};

/// The runner's own record kinds, and the evaluations of its results that reports keep.
pub const KINDS: &[Declared] = &[
    Declared::of::<ModelRecord>(),
    Declared::of::<ServedRecord>(),
    Declared::of::<PromptRecord>(),
    Declared::of::<ScoreRecord>(),
    Declared::of::<GenerationRecord>(),
    Declared::of::<EvaluationRecord>(),
];

/// Every record kind a store of `benchmarks`' sets holds: the store's own, the runner's, and the
/// benchmarks' (what `cache verify`, `cache merge` and `cache stats` walk).
pub fn kinds(benchmarks: Catalogue) -> Vec<Declared> {
    let mut all: Vec<Declared> = store::KINDS.iter().chain(KINDS).copied().collect();
    for declared in benchmarks.kinds() {
        if !all.iter().any(|d| d.kind == declared.kind) {
            all.push(declared);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tables and contexts are part of the stored bytes (checksums cover the table, ids hash
    /// under the context): every kind the command line knows keeps the ones schema 3 wrote (the
    /// `served` and `evaluations` kinds, added without a schema change, keep the ones they were
    /// introduced with).
    #[test]
    fn every_kind_keeps_its_table_and_context() {
        let declared: Vec<(&str, &str)> = kinds(crate::benchmarks::ALL)
            .iter()
            .map(|d| (d.kind.table, d.kind.context))
            .collect();
        let mut expected = vec![
            ("sources", "deltalogic 2026-11-21 source file v1"),
            ("items", "deltalogic 2026-11-21 base item v1"),
            ("episodes", "deltalogic 2026-11-21 episode v1"),
            ("sets", "deltalogic 2026-11-21 episode set v1"),
            ("specs", "deltalogic 2026-11-21 build spec v1"),
            ("models", "deltalogic 2026-11-21 model fingerprint v1"),
            ("templates", "deltalogic 2026-11-21 prompt template v1"),
            ("prompts", "deltalogic 2026-11-21 prompt text v1"),
            ("scores", "deltalogic 2026-11-21 score key v1"),
            ("results", "deltalogic 2026-11-30 result v2"),
            ("questions", "deltalogic 2026-11-21 question v1"),
            ("generations", "deltalogic 2026-11-23 generation key v1"),
            ("problems", "deltalogic 2026-11-23 deduce problem v1"),
            ("clomo_items", "deltalogic 2026-11-23 clomo item v1"),
            ("served", "deltalogic 2026-11-26 served model identity v1"),
            ("evaluations", "deltalogic 2026-11-26 result evaluation v1"),
        ];
        let mut sorted = declared.clone();
        sorted.sort();
        expected.sort();
        assert_eq!(sorted, expected);
        sorted.dedup_by_key(|(table, _)| *table);
        assert_eq!(sorted.len(), declared.len(), "one declaration per table");
    }
}
