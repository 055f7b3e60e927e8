//! FOLIO v0.0 JSON Lines, in both of its shapes: train (`story_id`, `example_id`, `source`, no
//! `conclusion-FOL`) and validation (`conclusion-FOL`, no ids). Train items are named by
//! `example_id`, the others by split and line (`validation-12`). Items whose NL premises and FOL
//! formulas differ in number are kept, with `fol_mismatch` = "NL vs FOL" counts in `extra`.

use super::record::{self, Fields, Place, Record, Source};
use super::{BaseItem, Formal, ReadError, ReadFile};
use crate::logic::Label;

pub(super) fn read(src: &Source) -> Result<ReadFile, ReadError> {
    // Validation items have no id of their own: they are named by split and line.
    let stem = src
        .path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let split = stem.strip_prefix("folio-").unwrap_or(&stem).to_string();
    record::read_jsonl(src, |place, rec| Ok(vec![item(src, &split, place, rec)?]))
}

fn item(src: &Source, split: &str, place: Place, rec: &Record) -> Fields<BaseItem> {
    let premises = record::strings_field(rec, "premises")?;
    let premises_fol = record::strings_field(rec, "premises-FOL")?;
    let conclusion = record::str_field(rec, "conclusion")?.trim().to_string();
    let conclusion_fol = record::optional_str_field(rec, "conclusion-FOL")?;
    let label = label(rec)?;
    let example_id = record::optional_scalar_field(rec, "example_id")?;
    let mut extra = Vec::new();
    if let Some(story) = record::optional_scalar_field(rec, "story_id")? {
        extra.push(("story_id", story));
    }
    if let Some(source) = record::optional_str_field(rec, "source")? {
        extra.push(("source", source.to_string()));
    }
    if premises.len() != premises_fol.len() {
        let counts = format!("{} vs {}", premises.len(), premises_fol.len());
        extra.push(("fol_mismatch", counts));
    }
    let external_id = example_id.unwrap_or_else(|| format!("{split}-{}", place.number));
    Ok(BaseItem {
        origin: src.origin(place.to_string(), external_id),
        world: None,
        premises,
        query: conclusion,
        dataset_label: Some(label),
        formal: Some(Formal {
            premises: premises_fol,
            conclusion: conclusion_fol.map(|c| c.trim().to_string()),
        }),
        extra: record::extra(extra),
    })
}

fn label(rec: &Record) -> Fields<Label> {
    let text = record::str_field(rec, "label")?;
    Label::parse(text).ok_or_else(|| {
        record::FieldError::new(
            "label",
            format!("unknown label `{text}` (expected True, False, Unknown or Uncertain)"),
        )
    })
}
