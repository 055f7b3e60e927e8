//! Results as schema 1 stored them, and their upgrade. Schema 1 had two result kinds: DeltaLogic
//! results (table `results`: both predictions of an episode and its six score keys) and question
//! results (table `question_results`: one answer and its keys per question). Schema 2 has one
//! [`ResultRecord`] whose rows hold every turn of an item.
//!
//! An upgraded DeltaLogic result hashes to its key under the schema 1-2 derivation
//! ([`ResultRecord::legacy_id`]), which checks the upgrade; every upgraded result is then stored
//! under today's id, which also covers its answers.

use super::records::{ResultRecord, ResultRow, Turn};
use super::Id;
use crate::logic::Label;
use anyhow::{anyhow, bail, Result};

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct EpisodeRowV1 {
    episode: [u8; 32],
    pred0: Label,
    pred1: Label,
    keys: Vec<[u8; 32]>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct EpisodeResultV1 {
    model: [u8; 32],
    set: [u8; 32],
    template: [u8; 32],
    normalisation: String,
    rows: Vec<EpisodeRowV1>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct QuestionRowV1 {
    question: [u8; 32],
    pred: Label,
    keys: Vec<[u8; 32]>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct QuestionResultV1 {
    model: [u8; 32],
    set: [u8; 32],
    template: [u8; 32],
    normalisation: String,
    rows: Vec<QuestionRowV1>,
}

/// The schema-1 table names of the two result kinds.
pub(super) const EPISODE_RESULTS_V1: &str = "results";
pub(super) const QUESTION_RESULTS_V1: &str = "question_results";

/// Upgrades one schema-1 result from table `table`, stored under `key`, to a schema-2 record.
/// An archive that does not validate, or an episode row without its six keys, is an error naming
/// the record.
pub(super) fn upgrade_result(table: &str, key: Id, bytes: &[u8]) -> Result<ResultRecord> {
    let corrupt = |e: rkyv::rancor::Error| {
        anyhow!(
            "schema-1 record {} in table `{table}` is corrupt: {e}",
            key.short()
        )
    };
    let record = match table {
        EPISODE_RESULTS_V1 => {
            let r =
                rkyv::from_bytes::<EpisodeResultV1, rkyv::rancor::Error>(bytes).map_err(corrupt)?;
            let rows = r
                .rows
                .into_iter()
                .map(|row| {
                    if row.keys.len() != 6 {
                        bail!(
                            "schema-1 result {}: episode {} has {} score keys, not 6",
                            key.short(),
                            Id(row.episode).short(),
                            row.keys.len()
                        );
                    }
                    Ok(ResultRow {
                        item: row.episode,
                        turns: vec![
                            Turn {
                                answer: row.pred0.into(),
                                keys: row.keys[..3].to_vec(),
                            },
                            Turn {
                                answer: row.pred1.into(),
                                keys: row.keys[3..].to_vec(),
                            },
                        ],
                    })
                })
                .collect::<Result<_>>()?;
            ResultRecord {
                model: r.model,
                set: r.set,
                template: r.template,
                normalisation: r.normalisation,
                rows,
            }
        }
        QUESTION_RESULTS_V1 => {
            let r = rkyv::from_bytes::<QuestionResultV1, rkyv::rancor::Error>(bytes)
                .map_err(corrupt)?;
            ResultRecord {
                model: r.model,
                set: r.set,
                template: r.template,
                normalisation: r.normalisation,
                rows: r
                    .rows
                    .into_iter()
                    .map(|row| ResultRow {
                        item: row.question,
                        turns: vec![Turn {
                            answer: row.pred.into(),
                            keys: row.keys,
                        }],
                    })
                    .collect(),
            }
        }
        _ => bail!("table `{table}` holds no schema-1 results"),
    };
    if table == EPISODE_RESULTS_V1 && record.legacy_id() != key {
        bail!(
            "schema-1 result {} does not hash to its key after the upgrade",
            key.short()
        );
    }
    Ok(record)
}
