//! RuleTaker JSON Lines: one theory per line with its questions; one item per question, labels
//! true/false.
//!
//! Open or closed world: the RuleTaker/ProofWriter releases that ship both semantics mark their
//! ids with `-OWA-` or `-CWA-`; an id so marked gets that world. Unmarked ids, as in every file of
//! RuleTaker V2020.2.4 (whose README says it is closed world, negation as failure), are closed.

use super::record::{self, Fields, Place, Record, Source};
use super::{BaseItem, ReadError, ReadFile};
use crate::logic::{Label, World};

pub(super) fn read(src: &Source) -> Result<ReadFile, ReadError> {
    record::read_jsonl(src, |place, rec| theory(src, place, rec))
}

fn theory(src: &Source, place: Place, rec: &Record) -> Fields<Vec<BaseItem>> {
    let id = record::str_field(rec, "id")?;
    let premises = record::sentences(record::str_field(rec, "context")?, "context")?;
    let world = record::world_of(id, World::Closed);
    let questions = record::array_field(rec, "questions")?;
    questions
        .iter()
        .enumerate()
        .map(|(index, q)| {
            let position = format!("{place}, question {}", index + 1);
            record::object(q)
                .and_then(|q| question(src, position, world, q, &premises))
                .map_err(|e| e.within(&format!("questions[{index}]")))
        })
        .collect()
}

fn question(
    src: &Source,
    position: String,
    world: World,
    q: &Record,
    premises: &[String],
) -> Fields<BaseItem> {
    let id = record::str_field(q, "id")?;
    let query = record::str_field(q, "text")?.trim().to_string();
    let label = if record::bool_field(q, "label")? {
        Label::True
    } else {
        Label::False
    };
    let meta = record::object_field(q, "meta")?;
    let depth = record::scalar_field(meta, "QDep").map_err(|e| e.within("meta"))?;
    let strategy = record::str_field(meta, "strategy").map_err(|e| e.within("meta"))?;
    Ok(BaseItem {
        origin: src.origin(position, id),
        world: Some(world),
        premises: premises.to_vec(),
        query,
        dataset_label: Some(label),
        formal: None,
        extra: record::extra([("QDep", depth), ("strategy", strategy.to_string())]),
    })
}
