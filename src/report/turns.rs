//! A stored result's turns, read back and checked against the benchmark: each scored turn's
//! prompt and labels as the benchmark renders them today, its label scores (and content-free
//! ones) from the store, their values under the result's normalisation, the answer those give
//! (which must be the stored one) and the gold label. The exports (`lm_eval`, `frames`) read
//! results only through here, so none shows a turn that does not match its result.

use crate::benchmarks::{Prepared, Request};
use crate::eval::{self, normalise, Normalisation, PromptRecord, ResultRecord, ScoreRecord};
use crate::logic::Label;
use crate::store::{Id, Store};
use anyhow::{bail, ensure, Context, Result};

/// Where a turn is: its item (by index in the set and id) and its number from 0.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub item_index: usize,
    pub item: Id,
    pub turn: usize,
}

/// A scored turn, checked.
pub struct Scored {
    pub place: Place,
    pub prompt: String,
    /// The label texts and what each means, in the turn's order.
    pub labels: Vec<(String, Label)>,
    /// The labels' scores after the prompt, in the same order, and their keys.
    pub own: Vec<ScoreRecord>,
    pub own_keys: Vec<Id>,
    /// The same labels' scores after each content-free prompt of the normalisation.
    pub content_free: Vec<Vec<ScoreRecord>>,
    pub content_free_keys: Vec<Id>,
    /// Each label's value under the result's normalisation.
    pub values: Vec<f64>,
    /// The label with the highest value: the stored answer.
    pub predicted: usize,
    pub gold: Option<Label>,
    /// The gold label's position among the labels.
    pub target: Option<usize>,
}

/// One turn of a result.
pub enum Turn<'a> {
    Scored(&'a Scored),
    /// A generated turn: the generation's key.
    Generated(Place, Id),
}

/// The score records `keys` name, in order.
fn scores(reg: &Store, rid: Id, keys: &[[u8; 32]]) -> Result<Vec<ScoreRecord>> {
    keys.iter()
        .map(|k| {
            reg.get::<ScoreRecord>(&Id(*k))?.with_context(|| {
                format!(
                    "result {} reads a missing score {}",
                    rid.short(),
                    Id(*k).short()
                )
            })
        })
        .collect()
}

/// The normalisation a result names.
pub fn normalisation(rid: Id, r: &ResultRecord) -> Result<Normalisation> {
    Normalisation::named(&r.normalisation).with_context(|| {
        format!(
            "result {} names an unknown normalisation `{}`",
            rid.short(),
            r.normalisation
        )
    })
}

/// Calls `f` on each turn of result `rid` (`r`), whose items `prepared` asks (the result's
/// template), item by item and turn by turn.
pub fn each(
    reg: &Store,
    (rid, r): (Id, &ResultRecord),
    prepared: &dyn Prepared,
    mut f: impl FnMut(Turn) -> Result<()>,
) -> Result<()> {
    let norm = normalisation(rid, r)?;
    let items = prepared.items();
    ensure!(
        items.len() == r.rows.len(),
        "result {}: {} rows, but the set has {} items",
        rid.short(),
        r.rows.len(),
        items.len()
    );
    for (i, row) in r.rows.iter().enumerate() {
        ensure!(
            items[i].0 == row.item,
            "result {}: row {i} is item {}, the set's item there is {}",
            rid.short(),
            Id(row.item).short(),
            items[i].short()
        );
        let answered = eval::answered(reg, row)?;
        for (t, turn) in row.turns.iter().enumerate() {
            let place = Place {
                item_index: i,
                item: Id(row.item),
                turn: t,
            };
            let context = || {
                format!(
                    "result {}, item {}, turn {}",
                    rid.short(),
                    Id(row.item).short(),
                    t + 1
                )
            };
            let Some(answer) = turn.answer.label() else {
                let generation = turn
                    .generation()
                    .with_context(|| format!("{}: a generated turn without its key", context()))?;
                f(Turn::Generated(place, generation)).with_context(context)?;
                continue;
            };
            let scored = (|| {
                let Request::Score { prompt, labels, .. } =
                    prepared.request(i, t, &answered.answers[..t])?
                else {
                    bail!("the benchmark asks this turn as a generation, but the result stores a label");
                };
                let keys = turn
                    .scored_keys(labels.len(), norm.fillers().len())
                    .with_context(|| {
                        format!(
                            "{} score keys for {} labels under `{}`",
                            turn.keys.len(),
                            labels.len(),
                            norm.as_str()
                        )
                    })?;
                let own = scores(reg, rid, keys.labels)?;
                let content_free = keys
                    .per_filler()
                    .map(|filler| scores(reg, rid, filler))
                    .collect::<Result<Vec<_>>>()?;
                let stored_prompt = reg
                    .get::<PromptRecord>(&Id(own[0].prompt))?
                    .with_context(|| format!("prompt {} is missing", Id(own[0].prompt).short()))?;
                ensure!(
                    stored_prompt.text == prompt
                        && own
                            .iter()
                            .all(|o| o.prompt == own[0].prompt && o.model == own[0].model)
                        && own
                            .iter()
                            .zip(&labels)
                            .all(|(o, (text, _))| &o.label == text),
                    "the stored scores are not of the prompt and labels the benchmark renders \
                     for this turn"
                );
                let values = normalise::values(&own, &content_free, norm)?;
                let predicted = normalise::best(&values);
                ensure!(
                    labels[predicted].1 == answer,
                    "the scores give {:?} under `{}`, the result stores {:?}",
                    labels[predicted].1,
                    norm.as_str(),
                    answer
                );
                let gold = prepared.target(i, t);
                let target = gold
                    .map(|gold| {
                        labels.iter().position(|(_, l)| *l == gold).with_context(|| {
                            format!("the gold label {gold:?} is not among the turn's labels")
                        })
                    })
                    .transpose()?;
                Ok(Scored {
                    place,
                    prompt,
                    labels,
                    own,
                    own_keys: keys.labels.iter().map(|k| Id(*k)).collect(),
                    content_free,
                    content_free_keys: keys.content_free.iter().map(|k| Id(*k)).collect(),
                    values,
                    predicted,
                    gold,
                    target,
                })
            })()
            .with_context(context)?;
            f(Turn::Scored(&scored)).with_context(context)?;
        }
    }
    Ok(())
}
