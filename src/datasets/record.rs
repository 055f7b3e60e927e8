//! What every reader shares: the file being read, typed access to JSON fields with errors that
//! name the field, and the record loops for JSON Lines and JSON-array files.

use super::{BaseItem, Format, Origin, ReadError, ReadFile, RecordError};
use crate::logic::World;
use serde_json::{Map, Value};
use std::fmt;
use std::path::Path;

/// The file being read: its path as given (for errors) and as named in origins.
pub(crate) struct Source<'a> {
    pub path: &'a Path,
    /// The path as given, for error messages.
    pub shown: String,
    /// The path relative to the ingest root, with `/` separators on every platform.
    pub relative: String,
    pub format: Format,
}

impl<'a> Source<'a> {
    pub fn new(format: Format, root: &Path, path: &'a Path) -> Source<'a> {
        let relative = match path.strip_prefix(root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel,
            _ => Path::new(path.file_name().unwrap_or(path.as_os_str())),
        };
        let relative = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        Source {
            path,
            shown: path.display().to_string(),
            relative,
            format,
        }
    }

    /// Another file in the same directory, named alike in origins and errors.
    pub fn sibling<'b>(&self, path: &'b Path) -> Source<'b> {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let relative = match self.relative.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{name}"),
            None => name.to_string(),
        };
        Source {
            path,
            shown: path.display().to_string(),
            relative,
            format: self.format,
        }
    }

    /// The file's text. The two noncharacters that mark a template's own markup (where control
    /// tokens are read, `model::tokenize::markup`) are refused: dataset text must never open
    /// markup, and Unicode reserves noncharacters for a program's internal use.
    pub fn text(&self) -> Result<String, ReadError> {
        let text = std::fs::read_to_string(self.path).map_err(|source| match source.kind() {
            std::io::ErrorKind::InvalidData => self.not_this_format("not UTF-8 text"),
            _ => ReadError::Io {
                file: self.shown.clone(),
                source,
            },
        })?;
        let marks = [
            crate::model::tokenize::MARKUP_OPEN,
            crate::model::tokenize::MARKUP_CLOSE,
        ];
        if let Some((line, c)) = text
            .lines()
            .enumerate()
            .find_map(|(i, l)| l.chars().find(|c| marks.contains(c)).map(|c| (i + 1, c)))
        {
            return Err(self.not_this_format(format!(
                "line {line} holds the noncharacter U+{:04X}, which deltalogic reserves to mark \
                 template markup",
                c as u32
            )));
        }
        Ok(text)
    }

    pub fn not_this_format(&self, why: impl Into<String>) -> ReadError {
        ReadError::NotThisFormat {
            file: self.shown.clone(),
            format: self.format.dataset(),
            why: why.into(),
        }
    }

    pub fn origin(&self, position: impl Into<String>, external_id: impl Into<String>) -> Origin {
        Origin {
            dataset: self.format.dataset().to_string(),
            file: self.relative.clone(),
            position: position.into(),
            external_id: external_id.into(),
        }
    }

    pub fn record_error(&self, place: &Place, error: FieldError) -> RecordError {
        RecordError {
            file: self.shown.clone(),
            place: place.to_string(),
            field: error.field,
            message: error.message,
        }
    }
}

/// A record's place in its file, counted from 1: `line 12`, `record 3`, `row 40`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place {
    pub unit: &'static str,
    pub number: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.unit, self.number)
    }
}

/// A record-level problem before the file and place are attached.
#[derive(Debug)]
pub(crate) struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &str, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// Names the field inside its parent: `meta` within `questions[2]` is `questions[2].meta`.
    pub fn within(self, parent: &str) -> FieldError {
        let field = if self.field.is_empty() {
            parent.to_string()
        } else {
            format!("{parent}.{}", self.field)
        };
        FieldError { field, ..self }
    }
}

pub(crate) type Fields<T> = Result<T, FieldError>;
pub(crate) type Record = Map<String, Value>;

pub(crate) fn object(value: &Value) -> Fields<&Record> {
    value
        .as_object()
        .ok_or_else(|| FieldError::new("", "expected a JSON object"))
}

fn field<'v>(record: &'v Record, key: &str) -> Fields<&'v Value> {
    record
        .get(key)
        .ok_or_else(|| FieldError::new(key, "missing"))
}

pub(crate) fn object_field<'v>(record: &'v Record, key: &str) -> Fields<&'v Record> {
    object(field(record, key)?).map_err(|e| e.within(key))
}

pub(crate) fn str_field<'v>(record: &'v Record, key: &str) -> Fields<&'v str> {
    field(record, key)?
        .as_str()
        .ok_or_else(|| FieldError::new(key, "expected a string"))
}

pub(crate) fn optional_str_field<'v>(record: &'v Record, key: &str) -> Fields<Option<&'v str>> {
    record.get(key).map(|_| str_field(record, key)).transpose()
}

pub(crate) fn bool_field(record: &Record, key: &str) -> Fields<bool> {
    field(record, key)?
        .as_bool()
        .ok_or_else(|| FieldError::new(key, "expected true or false"))
}

pub(crate) fn array_field<'v>(record: &'v Record, key: &str) -> Fields<&'v [Value]> {
    field(record, key)?
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| FieldError::new(key, "expected an array"))
}

pub(crate) fn strings_field(record: &Record, key: &str) -> Fields<Vec<String>> {
    let wrong = || FieldError::new(key, "expected an array of strings");
    let values = field(record, key)?.as_array().ok_or_else(wrong)?;
    values
        .iter()
        .map(|v| v.as_str().map(|s| s.trim().to_string()).ok_or_else(wrong))
        .collect()
}

/// A number or a string, as text: ids and metadata that some files write either way.
pub(crate) fn scalar_field(record: &Record, key: &str) -> Fields<String> {
    scalar(field(record, key)?).ok_or_else(|| FieldError::new(key, "expected a number or a string"))
}

pub(crate) fn optional_scalar_field(record: &Record, key: &str) -> Fields<Option<String>> {
    record
        .get(key)
        .map(|_| scalar_field(record, key))
        .transpose()
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads a JSON Lines file: each non-blank line is one record, and a line that is not JSON is a
/// bad record, not the end of the file. A file of which no line is JSON is not this format.
pub(crate) fn read_jsonl(
    src: &Source,
    mut items_of: impl FnMut(Place, &Record) -> Fields<Vec<BaseItem>>,
) -> Result<ReadFile, ReadError> {
    let text = src.text()?;
    let mut out = ReadFile::default();
    let mut parsed_any = false;
    let mut first_error = None;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = Place {
            unit: "line",
            number: index + 1,
        };
        let value = match serde_json::from_str::<Value>(line) {
            Ok(value) => value,
            Err(e) => {
                first_error.get_or_insert_with(|| format!("{place}: {e}"));
                out.bad.push(
                    src.record_error(&place, FieldError::new("", format!("invalid JSON: {e}"))),
                );
                continue;
            }
        };
        parsed_any = true;
        collect(
            src,
            &mut out,
            place,
            object(&value).and_then(|r| items_of(place, r)),
        );
    }
    match first_error {
        Some(why) if !parsed_any => Err(src.not_this_format(format!("no line is JSON ({why})"))),
        _ => Ok(out),
    }
}

/// Reads a file holding one JSON array of records.
pub(crate) fn read_json_array(
    src: &Source,
    mut items_of: impl FnMut(Place, &Record) -> Fields<Vec<BaseItem>>,
) -> Result<ReadFile, ReadError> {
    let text = src.text()?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| src.not_this_format(format!("not JSON: {e}")))?;
    let Value::Array(records) = value else {
        return Err(src.not_this_format("expected a JSON array of records"));
    };
    let mut out = ReadFile::default();
    for (index, value) in records.iter().enumerate() {
        let place = Place {
            unit: "record",
            number: index + 1,
        };
        collect(
            src,
            &mut out,
            place,
            object(value).and_then(|r| items_of(place, r)),
        );
    }
    Ok(out)
}

fn collect(src: &Source, out: &mut ReadFile, place: Place, result: Fields<Vec<BaseItem>>) {
    match result {
        Ok(items) => out.items.extend(items),
        Err(e) => out.bad.push(src.record_error(&place, e)),
    }
}

/// The sentences of a ProofWriter/RuleTaker theory. Their grammar has no abbreviations, so a
/// sentence ends exactly where ". " does.
pub(crate) fn sentences(context: &str, field: &str) -> Fields<Vec<String>> {
    let sentences: Vec<String> = context
        .split_inclusive(". ")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if sentences.is_empty() {
        return Err(FieldError::new(field, "has no sentences"));
    }
    Ok(sentences)
}

/// The world a ProofWriter/RuleTaker id declares: releases that ship both semantics mark ids with
/// `-OWA-` (open) or `-CWA-` (closed); an unmarked id gets the format's own semantics.
pub(crate) fn world_of(id: &str, unmarked: World) -> World {
    if id.contains("-OWA-") {
        World::Open
    } else if id.contains("-CWA-") {
        World::Closed
    } else {
        unmarked
    }
}

/// Dataset-specific fields, sorted by key as the canonical encoding requires.
pub(crate) fn extra<K: Into<String>>(
    pairs: impl IntoIterator<Item = (K, String)>,
) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = pairs.into_iter().map(|(k, v)| (k.into(), v)).collect();
    pairs.sort();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_after_full_stops() {
        let got = sentences(
            "Bob is cold. If something is red then it is big. ",
            "context",
        )
        .unwrap();
        assert_eq!(got, ["Bob is cold.", "If something is red then it is big."]);
        assert_eq!(sentences("  ", "context").unwrap_err().field, "context");
    }

    #[test]
    fn world_markers_override_the_format_default() {
        assert_eq!(
            world_of("ProofWriter_AttNoneg-OWA-D5-1041_Q1", World::Closed),
            World::Open
        );
        assert_eq!(world_of("AttNoneg-CWA-D5-3", World::Open), World::Closed);
        assert_eq!(world_of("RelNeg-D2-1742-3", World::Closed), World::Closed);
        assert_eq!(world_of("RelNeg-D2-1742-3", World::Open), World::Open);
    }

    #[test]
    fn nested_fields_are_named_by_path() {
        let e = FieldError::new("QDep", "missing")
            .within("meta")
            .within("questions[2]");
        assert_eq!(e.field, "questions[2].meta.QDep");
    }
}
