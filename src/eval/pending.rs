//! Request bookkeeping: a benchmark's request with the model that answers it and the keys of
//! the records its answer is read from ([`Pending`]), one turn's requests shared between
//! normalisations ([`Asked`]), and a turn's answer read back from the stored records.

use super::generate;
use super::normalise::{self, Normalisation};
use super::records::{GenerationRecord, PromptRecord, ScoreRecord};
use crate::benchmarks::{Answer, Answered, Decoding, Prepared, Request, Role};
use crate::logic::Label;
use crate::store::{Id, Record, ResultRow, Store, Turn};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;

/// A request with the model that answers it and the keys its answer is read from.
pub(super) enum Pending {
    Score {
        model: Id,
        prompt: String,
        prompt_id: Id,
        labels: Vec<String>,
        answers: Vec<Label>,
        keys: Vec<Id>,
    },
    Generate {
        model: Id,
        prompt: String,
        prompt_id: Id,
        decoding: Decoding,
        key: Id,
    },
}

impl Pending {
    pub(super) fn new(subject: Id, judge: Id, request: Request) -> Result<Pending> {
        let by = |role| match role {
            Role::Subject => subject,
            Role::Judge => judge,
        };
        let prompt_id = |prompt: &str| {
            PromptRecord {
                text: prompt.to_string(),
            }
            .id()
        };
        Ok(match request {
            Request::Score {
                by: role,
                prompt,
                labels,
            } => {
                let (model, prompt_id) = (by(role), prompt_id(&prompt));
                let (labels, answers): (Vec<String>, Vec<Label>) = labels.into_iter().unzip();
                let keys = labels
                    .iter()
                    .map(|l| ScoreRecord::key(model, prompt_id, l))
                    .collect();
                Pending::Score {
                    model,
                    prompt,
                    prompt_id,
                    labels,
                    answers,
                    keys,
                }
            }
            Request::Generate {
                by: role,
                prompt,
                decoding,
            } => {
                generate::check(&decoding)?;
                let (model, prompt_id) = (by(role), prompt_id(&prompt));
                Pending::Generate {
                    model,
                    key: GenerationRecord::key(model, prompt_id, &decoding),
                    prompt,
                    prompt_id,
                    decoding,
                }
            }
        })
    }

    pub(super) fn model(&self) -> Id {
        match self {
            Pending::Score { model, .. } | Pending::Generate { model, .. } => *model,
        }
    }

    pub(super) fn prompt(&self) -> (&str, Id) {
        match self {
            Pending::Score {
                prompt, prompt_id, ..
            }
            | Pending::Generate {
                prompt, prompt_id, ..
            } => (prompt, *prompt_id),
        }
    }

    /// A generation request's prompt and decoding.
    pub(super) fn generation(&self) -> (Id, &Decoding) {
        match self {
            Pending::Generate {
                prompt_id,
                decoding,
                ..
            } => (*prompt_id, decoding),
            Pending::Score { .. } => unreachable!("generation work comes from generation requests"),
        }
    }

    pub(super) fn keys(&self) -> Vec<Id> {
        match self {
            Pending::Score { keys, .. } => keys.clone(),
            Pending::Generate { key, .. } => vec![*key],
        }
    }

    /// The slots (labels, or the one generation) whose records the store lacks.
    pub(super) fn missing(&self, reg: &Store) -> Result<Vec<usize>> {
        Ok(match self {
            Pending::Score { keys, .. } => cached(reg, keys)?
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_none())
                .map(|(j, _)| j)
                .collect(),
            Pending::Generate { key, .. } => match reg.get::<GenerationRecord>(key)? {
                Some(_) => vec![],
                None => vec![0],
            },
        })
    }

    /// The turn the stored records give under `norm`, and its answer as the benchmark reads
    /// it. `content_free` are the requests of `norm.fillers()`'s content-free prompts (for a
    /// scored turn): their keys follow the labels' in the turn, filler by filler.
    pub(super) fn answer(
        &self,
        reg: &Store,
        norm: Normalisation,
        content_free: &[&Pending],
    ) -> Result<(Turn, Answer)> {
        Ok(match self {
            Pending::Score { answers, keys, .. } => {
                let free = content_free
                    .iter()
                    .map(|p| must(reg, &p.keys()))
                    .collect::<Result<Vec<_>>>()?;
                let values = normalise::values(&must(reg, keys)?, &free, norm)?;
                let label = answers[normalise::best(&values)];
                let free_keys: Vec<Vec<Id>> = content_free.iter().map(|p| p.keys()).collect();
                (Turn::scored(label, keys, &free_keys), Answer::Label(label))
            }
            Pending::Generate { key, .. } => (
                Turn::generated(*key),
                Answer::Text(must_generation(reg, *key)?.text),
            ),
        })
    }
}

/// Reads stored scores; `None` for any missing.
fn cached(reg: &Store, keys: &[Id]) -> Result<Vec<Option<ScoreRecord>>> {
    keys.iter().map(|k| reg.get::<ScoreRecord>(k)).collect()
}

fn must(reg: &Store, keys: &[Id]) -> Result<Vec<ScoreRecord>> {
    cached(reg, keys)?
        .into_iter()
        .zip(keys)
        .map(|(s, k)| {
            s.ok_or_else(|| anyhow!("{}: score {} is missing", reg.path().display(), k.short()))
        })
        .collect()
}

fn must_generation(reg: &Store, key: Id) -> Result<GenerationRecord> {
    reg.get::<GenerationRecord>(&key)?.ok_or_else(|| {
        anyhow!(
            "{}: generation {} is missing",
            reg.path().display(),
            key.short()
        )
    })
}

/// An item of a stored result with each turn's answer as its benchmark reads it (a generated
/// turn's text from its generation record). A scored turn whose scores the store does not hold
/// all is refused: a result is shown only as far as its scores back it (whether its answers
/// follow from them, `derive` checks).
pub fn answered(reg: &Store, row: &ResultRow) -> Result<Answered> {
    let answers = row
        .turns
        .iter()
        .enumerate()
        .map(|(turn, t)| match (t.answer.label(), t.generation()) {
            (Some(label), _) => {
                // Every key a scored turn read, its labels' and the content-free ones alike.
                let keys: Vec<Id> = t.keys.iter().map(|k| Id(*k)).collect();
                if let Some(absent) = reg.missing(ScoreRecord::KIND, &keys)?.first() {
                    bail!(
                        "{}: item {}, turn {} reads score {}, which the store does not hold: \
                         the result cannot be backed by its scores (merge the cache file that \
                         has them, or score the set again)",
                        reg.path().display(),
                        Id(row.item).short(),
                        turn + 1,
                        absent.short()
                    );
                }
                Ok(Answer::Label(label))
            }
            (None, Some(key)) => Ok(Answer::Text(must_generation(reg, key)?.text)),
            (None, None) => bail!(
                "{}: a generated turn of item {} names {} records, not 1",
                reg.path().display(),
                Id(row.item).short(),
                t.keys.len()
            ),
        })
        .collect::<Result<_>>()?;
    Ok(Answered {
        item: Id(row.item),
        answers,
    })
}

/// The requests of one turn, shared between normalisations: an item's request under a later
/// normalisation that equals its request under an earlier one is asked once, and so is a
/// content-free request however many items and normalisations need it.
#[derive(Default)]
pub(super) struct Asked {
    pub(super) pending: Vec<Pending>,
    index: BTreeMap<(Option<usize>, Vec<Id>), usize>,
}

impl Asked {
    /// The index of `p`; `item` is `None` for a content-free request.
    pub(super) fn add(&mut self, item: Option<usize>, p: Pending) -> usize {
        let slot = self.pending.len();
        let at = *self.index.entry((item, p.keys())).or_insert(slot);
        if at == slot {
            self.pending.push(p);
        }
        at
    }
}

/// The request of item `item` at turn `turn` given its earlier answers, and the content-free
/// requests `norm` compares a scored turn with, filler by filler (none for a generated turn):
/// what the runner asks and what a derivation checks (`derive`).
pub(super) fn turn_requests(
    prepared: &dyn Prepared,
    (item, turn, earlier): (usize, usize, &[Answer]),
    norm: Normalisation,
    (subject, judge): (Id, Id),
) -> Result<(Pending, Vec<Pending>)> {
    let request = Pending::new(subject, judge, prepared.request(item, turn, earlier)?)?;
    let fillers: &[&str] = match request {
        Pending::Score { .. } => norm.fillers(),
        Pending::Generate { .. } => &[],
    };
    let free = fillers
        .iter()
        .map(|filler| {
            let r = prepared
                .content_free(item, turn, earlier, filler)?
                .with_context(|| {
                    format!(
                        "no content-free form of this turn, which the `{}` normalisation needs",
                        norm.as_str()
                    )
                })?;
            Pending::new(subject, judge, r)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((request, free))
}
