//! The GLoRE subset of RobustLR: JSON Lines of `{input: [chat messages], ideal}`. The last user
//! message holds the theory and statement as `From the premise: "<theory>" Can we infer the
//! hypothesis: "<statement>"?`; `ideal` is Yes, No or Neutral (True, False, Uncertain). The
//! earlier messages are GLoRE's instructions and a one-shot example, not part of the item.

use super::record::{self, FieldError, Fields, Place, Record, Source};
use super::{BaseItem, ReadError, ReadFile};
use crate::logic::Label;

const PREMISE_OPEN: &str = "From the premise: \"";
const HYPOTHESIS_OPEN: &str = "Can we infer the hypothesis: \"";

pub(super) fn read(src: &Source) -> Result<ReadFile, ReadError> {
    record::read_jsonl(src, |place, rec| Ok(vec![item(src, place, rec)?]))
}

fn item(src: &Source, place: Place, rec: &Record) -> Fields<BaseItem> {
    let messages = record::array_field(rec, "input")?;
    let (index, content) = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| {
            let m = m.as_object()?;
            (m.get("role")?.as_str()? == "user").then_some((i, m))
        })
        .ok_or_else(|| FieldError::new("input", "has no user message"))?;
    let field = format!("input[{index}].content");
    let text =
        record::str_field(content, "content").map_err(|e| e.within(&format!("input[{index}]")))?;
    let bad = |what: &str| FieldError::new(&field, what.to_string());
    let (_, rest) = text
        .split_once(PREMISE_OPEN)
        .ok_or_else(|| bad("expected `From the premise: \"...\"`"))?;
    let (theory, rest) = rest
        .split_once(HYPOTHESIS_OPEN)
        .ok_or_else(|| bad("expected `Can we infer the hypothesis: \"...\"`"))?;
    let theory = theory
        .trim_end()
        .strip_suffix('"')
        .ok_or_else(|| bad("premise is not closed by a quote"))?;
    let (query, _) = rest
        .split_once('"')
        .ok_or_else(|| bad("hypothesis is not closed by a quote"))?;
    let label = match record::str_field(rec, "ideal")?.trim() {
        "Yes" => Label::True,
        "No" => Label::False,
        "Neutral" => Label::Uncertain,
        other => {
            return Err(FieldError::new(
                "ideal",
                format!("unknown answer `{other}` (expected Yes, No or Neutral)"),
            ))
        }
    };
    Ok(BaseItem {
        origin: src.origin(place.to_string(), ""),
        world: None,
        premises: record::sentences(theory.trim(), &field)?,
        query: query.trim().to_string(),
        dataset_label: Some(label),
        formal: None,
        extra: Vec::new(),
    })
}
