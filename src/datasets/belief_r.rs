//! Belief-R: `basic_time_t.csv` (step t) and `queries_time_t1.csv` (step t+1) read as one unit;
//! either path, or the directory holding them, reads the pair.
//!
//! A `questions` cell holds the premises, one a line, a blank line, then the question and its
//! options. A step-t+1 row repeats the step-t premises and adds one.
//!
//! The join: MANIFEST.md joins on the number in `dataset_id` plus `modus`. That holds for the
//! 1282 `-strong` rows of step t+1, but the 462 `-weak` rows are numbered on their own (the same
//! number as their step-t row up to 127, mostly one less from 129 on), so by number 242 of them
//! would pair with a different story. What identifies the step-t row in every case is the modus
//! plus the conditional premise (the first line), which every step-t+1 row repeats verbatim (13
//! weak tollens rows restate the second premise in other words, "doesn't" for "does not"; they
//! keep their wording in `t1_restated_premises`). Several step-t rows can share a conditional
//! (duplicated stories): the one with the same number wins, else the first in file order. A
//! step-t+1 row that finds no step-t row is a bad record.
//!
//! Items: one per joined (t, t+1) pair, and one per step-t row that no step-t+1 row revises:
//! Belief-R scores step t on every step-t row, and only some have a step t+1. On the shipped
//! files that is 1744 pairs (1492 distinct step-t rows) plus 420 step-t-only items. A pair is
//! `t1:<dataset_id>/<modus>` at `row N, step t row M` of the step-t+1 file; a step-t-only item
//! is `t:<dataset_id>/<modus>` at `row M` of the step-t file (rows count records, from 1).
//!
//! The answers a/b/c are majority human judgements, not logic labels: they stay in `extra`
//! (`t_*` for step t, `t1_*` for step t+1) and `dataset_label` is None.

use super::record::{self, FieldError, Fields, Place, Source};
use super::{BaseItem, ReadError, ReadFile, RecordError};
use std::collections::HashMap;
use std::path::Path;

const STEP_T_FILE: &str = "basic_time_t.csv";
const STEP_T1_FILE: &str = "queries_time_t1.csv";
/// The two files of the unit, step t first.
pub(super) const FILES: [&str; 2] = [STEP_T_FILE, STEP_T1_FILE];

const STEP_T_COLUMNS: &[&str] = &[
    "questions",
    "ground_truth",
    "modus",
    "types_of_relation",
    "atomic_idx",
    "dataset_id",
    "a",
    "b",
    "c",
];
const AGREEMENT: &str = "agreement_lv";

/// One parsed row of either file.
struct Row {
    place: Place,
    premises: Vec<String>,
    question: String,
    options: [String; 3],
    ground_truth: String,
    modus: String,
    relation: String,
    atomic_idx: String,
    dataset_id: String,
    /// The number in `dataset_id`, to break ties between duplicated stories.
    number: u64,
    /// How many annotators agreed; step t+1 only (empty at step t).
    agreement: String,
}

pub(super) fn read(src: &Source) -> Result<ReadFile, ReadError> {
    let name = src.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !FILES.contains(&name) {
        return Err(src.not_this_format(format!("expected {STEP_T_FILE} or {STEP_T1_FILE}")));
    }
    let dir = src.path.parent().unwrap_or(Path::new(""));
    let (t_path, t1_path) = (dir.join(STEP_T_FILE), dir.join(STEP_T1_FILE));
    let (t_src, t1_src) = (src.sibling(&t_path), src.sibling(&t1_path));
    let mut out = ReadFile::default();
    let mut t_rows = Vec::new();
    for row in rows(&t_src, false)? {
        match row {
            Ok(row) => t_rows.push(row),
            Err(e) => out.bad.push(e),
        }
    }
    let t1_rows = rows(&t1_src, true)?;
    let mut revised = vec![false; t_rows.len()];
    let index = conditional_index(&t_rows);
    for row in t1_rows {
        // Bad rows are reported in file order, whether unreadable or unjoinable.
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                out.bad.push(e);
                continue;
            }
        };
        match revision_of(&t_rows, &index, &row) {
            Ok(revision) => {
                revised[revision.step_t] = true;
                out.items.push(pair_item(&t1_src, &t_rows, &row, revision));
            }
            Err(e) => out.bad.push(t1_src.record_error(&row.place, e)),
        }
    }
    let unrevised = t_rows.iter().zip(revised).filter(|(_, r)| !r);
    out.items
        .extend(unrevised.map(|(row, _)| step_t_item(&t_src, row)));
    Ok(out)
}

/// Step-t rows by (modus, conditional premise).
fn conditional_index(rows: &[Row]) -> HashMap<(&str, &str), Vec<usize>> {
    let mut index: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        index
            .entry((&row.modus, &row.premises[0]))
            .or_default()
            .push(i);
    }
    index
}

/// How a step-t+1 row revises its step-t row.
struct Revision<'r> {
    /// Index into the step-t rows.
    step_t: usize,
    /// The premise step t+1 adds (its last line).
    added: &'r str,
    /// The step-t premises as step t+1 repeats them.
    restated: &'r [String],
}

fn revision_of<'r>(
    t_rows: &[Row],
    index: &HashMap<(&str, &str), Vec<usize>>,
    row: &'r Row,
) -> Fields<Revision<'r>> {
    let Some((added, restated @ [conditional, ..])) = row.premises.split_last() else {
        let message = "a step-t+1 row needs the step-t premises and one more";
        return Err(FieldError::new("questions", message));
    };
    let candidates = index.get(&(row.modus.as_str(), conditional.as_str()));
    let same_number = |&&i: &&usize| t_rows[i].number == row.number;
    let step_t = candidates.and_then(|c| c.iter().find(same_number).or(c.first()));
    let step_t = *step_t.ok_or_else(|| {
        let message = format!(
            "no row of {STEP_T_FILE} has modus {} and conditional premise `{conditional}`",
            row.modus
        );
        FieldError::new("questions", message)
    })?;
    Ok(Revision {
        step_t,
        added,
        restated,
    })
}

fn pair_item(t1_src: &Source, t_rows: &[Row], t1: &Row, revision: Revision) -> BaseItem {
    let t = &t_rows[revision.step_t];
    let position = format!("{}, step t {}", t1.place, t.place);
    let external_id = format!("t1:{}/{}", t1.dataset_id, t1.modus);
    let mut extra = shared_extra(t1);
    extra.extend(step_extra("t", t));
    extra.extend(step_extra("t1", t1));
    extra.push(("agreement_lv".into(), t1.agreement.clone()));
    extra.push(("t1_premise".into(), revision.added.to_string()));
    let restated = revision.restated;
    if restated != t.premises.as_slice() {
        extra.push(("t1_restated_premises".into(), restated.join("\n")));
    }
    item(t1_src.origin(position, external_id), t, extra)
}

fn step_t_item(t_src: &Source, t: &Row) -> BaseItem {
    let external_id = format!("t:{}/{}", t.dataset_id, t.modus);
    let mut extra = shared_extra(t);
    extra.extend(step_extra("t", t));
    item(t_src.origin(t.place.to_string(), external_id), t, extra)
}

fn item(origin: super::Origin, t: &Row, extra: Vec<(String, String)>) -> BaseItem {
    BaseItem {
        origin,
        world: None,
        premises: t.premises.clone(),
        query: t.question.clone(),
        dataset_label: None,
        formal: None,
        extra: record::extra(extra),
    }
}

fn shared_extra(row: &Row) -> Vec<(String, String)> {
    vec![
        ("modus".into(), row.modus.clone()),
        ("types_of_relation".into(), row.relation.clone()),
        ("atomic_idx".into(), row.atomic_idx.clone()),
    ]
}

/// One step's options, answer and id, under keys `t_…` or `t1_…`.
fn step_extra(step: &str, row: &Row) -> Vec<(String, String)> {
    let [a, b, c] = row.options.clone();
    let fields = [
        ("a", a),
        ("b", b),
        ("c", c),
        ("ground_truth", row.ground_truth.clone()),
        ("dataset_id", row.dataset_id.clone()),
    ];
    fields
        .into_iter()
        .map(|(key, value)| (format!("{step}_{key}"), value))
        .collect()
}

/// The rows of one file, each parsed or a bad record; a file without the expected columns is
/// not Belief-R.
fn rows(src: &Source, step_t1: bool) -> Result<Vec<Result<Row, RecordError>>, ReadError> {
    let text = src.text()?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| src.not_this_format(format!("unreadable CSV header: {e}")))?
        .clone();
    let wanted = STEP_T_COLUMNS.iter().chain(step_t1.then_some(&AGREEMENT));
    let mut columns = HashMap::new();
    for &name in wanted {
        let at = headers.iter().position(|h| h.trim() == name);
        let at =
            at.ok_or_else(|| src.not_this_format(format!("no column `{name}` in the header")))?;
        columns.insert(name, at);
    }
    let mut rows = Vec::new();
    for (index, record) in reader.records().enumerate() {
        let place = Place {
            unit: "row",
            number: index + 1,
        };
        let parsed = record
            .map_err(|e| FieldError::new("", format!("unreadable CSV row: {e}")))
            .and_then(|r| {
                row(place, |name| {
                    columns
                        .get(name)
                        .and_then(|&i| r.get(i))
                        .unwrap_or("")
                        .trim()
                })
            });
        rows.push(parsed.map_err(|e| src.record_error(&place, e)));
    }
    Ok(rows)
}

fn row<'r>(place: Place, cell: impl Fn(&str) -> &'r str) -> Fields<Row> {
    let (premises, question) = split_questions(cell("questions"))?;
    let dataset_id = cell("dataset_id");
    let number = dataset_id
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            FieldError::new(
                "dataset_id",
                format!("expected NUMBER-kind, got `{dataset_id}`"),
            )
        })?;
    Ok(Row {
        place,
        premises,
        question,
        options: [cell("a"), cell("b"), cell("c")].map(str::to_string),
        ground_truth: one_of(&cell, "ground_truth", &["a", "b", "c"])?,
        modus: one_of(&cell, "modus", &["ponens", "tollens"])?,
        relation: cell("types_of_relation").to_string(),
        atomic_idx: cell("atomic_idx").to_string(),
        dataset_id: dataset_id.to_string(),
        number,
        agreement: cell(AGREEMENT).to_string(),
    })
}

fn one_of<'r>(cell: &impl Fn(&str) -> &'r str, name: &str, allowed: &[&str]) -> Fields<String> {
    let value = cell(name);
    if allowed.contains(&value) {
        Ok(value.to_string())
    } else {
        Err(FieldError::new(
            name,
            format!("unknown value `{value}` (expected {})", allowed.join(", ")),
        ))
    }
}

/// Splits a `questions` cell into its premise lines and the question line.
fn split_questions(cell: &str) -> Fields<(Vec<String>, String)> {
    let shape = "expected premise lines, a blank line, then the question";
    let (premises, rest) = cell
        .split_once("\n\n")
        .ok_or_else(|| FieldError::new("questions", shape))?;
    let premises: Vec<String> = premises
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let question = rest.lines().next().unwrap_or("").trim();
    if premises.is_empty() || question.is_empty() {
        return Err(FieldError::new("questions", shape));
    }
    Ok((premises, question.to_string()))
}
