//! ProofWriter as shipped by Logic-LM: a JSON array of `{id, context, question, options,
//! answer}`, one question per record, answers A/B/C for True/False/Unknown. The theory's
//! sentences are the premises; the statement after the fixed question prefix is the query.

use super::record::{self, FieldError, Fields, Place, Record, Source};
use super::{BaseItem, ReadError, ReadFile};
use crate::logic::{Label, World};

const QUESTION_PREFIX: &str =
    "Based on the above information, is the following statement true, false, or unknown? ";

pub(super) fn read(src: &Source) -> Result<ReadFile, ReadError> {
    record::read_json_array(src, |place, rec| Ok(vec![item(src, place, rec)?]))
}

fn item(src: &Source, place: Place, rec: &Record) -> Fields<BaseItem> {
    let id = record::str_field(rec, "id")?;
    let premises = record::sentences(record::str_field(rec, "context")?, "context")?;
    let query = record::str_field(rec, "question")?
        .strip_prefix(QUESTION_PREFIX)
        .ok_or_else(|| {
            FieldError::new(
                "question",
                format!("does not start with `{QUESTION_PREFIX}`"),
            )
        })?
        .trim()
        .to_string();
    let label = match record::str_field(rec, "answer")?.trim() {
        "A" => Label::True,
        "B" => Label::False,
        "C" => Label::Uncertain,
        other => {
            return Err(FieldError::new(
                "answer",
                format!("unknown answer `{other}` (expected A, B or C)"),
            ))
        }
    };
    Ok(BaseItem {
        origin: src.origin(place.to_string(), id),
        world: Some(record::world_of(id, World::Open)),
        premises,
        query,
        dataset_label: Some(label),
        formal: None,
        extra: Vec::new(),
    })
}
