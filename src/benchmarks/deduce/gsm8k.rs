//! GSM8K as templates, without a language model: every literal of every calculator annotation
//! is traced to where it comes from, and an item is kept only if re-executing the traced steps
//! reproduces every annotated result and the final answer exactly. Otherwise the item is
//! rejected with one [`Reject`] reason, counted by the build.
//!
//! Tracing a literal `x` of step `s` tries, in order:
//! 1. the result of an earlier step equal to `x` (the latest);
//! 2. a number of the question equal to `x`, or a percentage `p%` of the question with `x` equal
//!    to `p/100`, `1 - p/100` or `1 + p/100`;
//! 3. the value of a number word of the question (`three`, `half` as 1/2 or 2, `twice`, `a
//!    dozen`, `a quarter` as 1/4 or 4, ...) or of a fraction written `a/b`;
//! 4. a constant of [`CONSTANTS`] (units every solver may know: 60 minutes, 7 days, 100 percent).
//!
//! A literal equal both to an earlier result and to a question number that the perturbation
//! would change is ambiguous (the new values would disagree), and its item is rejected.

use super::rational::Rational;
use super::template::{
    literals, ExprPiece, Format, Line, Literal, Quantity, Scale, Source, Step, Template, TextPiece,
};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::path::Path;

/// Constants a solution may use without the question stating them, each with why: 100 (percent,
/// cents in a dollar), 60 (minutes in an hour, seconds in a minute), 24 (hours in a day), 7 (days
/// in a week), 12 (months in a year, a dozen), 52 (weeks in a year), 365 (days in a year), 30
/// (days in a month), 4 (weeks in a month, quarters in a dollar), 1000 (a thousand), 1 (the whole,
/// as in `1 - 0.2`), 2 (halving and doubling: `x/2`, `2*x`).
pub const CONSTANTS: [i128; 12] = [100, 60, 24, 7, 12, 52, 365, 30, 4, 1000, 1, 2];

/// Number words and the values a solution may use them as.
fn word_values(w: &str) -> &'static [(i128, i128)] {
    match w {
        "zero" => &[(0, 1)],
        "one" | "once" | "single" => &[(1, 1)],
        "two" | "twice" | "double" | "doubled" | "doubles" | "pair" | "both" => &[(2, 1)],
        "three" | "triple" | "tripled" | "triples" | "thrice" => &[(3, 1)],
        "four" | "quadruple" | "quadrupled" => &[(4, 1)],
        "five" => &[(5, 1)],
        "six" => &[(6, 1)],
        "seven" => &[(7, 1)],
        "eight" => &[(8, 1)],
        "nine" => &[(9, 1)],
        "ten" => &[(10, 1)],
        "eleven" => &[(11, 1)],
        "twelve" | "dozen" | "dozens" => &[(12, 1)],
        "thirteen" => &[(13, 1)],
        "fourteen" => &[(14, 1)],
        "fifteen" => &[(15, 1)],
        "sixteen" => &[(16, 1)],
        "seventeen" => &[(17, 1)],
        "eighteen" => &[(18, 1)],
        "nineteen" => &[(19, 1)],
        "twenty" => &[(20, 1)],
        "thirty" => &[(30, 1)],
        "forty" => &[(40, 1)],
        "fifty" => &[(50, 1)],
        "sixty" => &[(60, 1)],
        "seventy" => &[(70, 1)],
        "eighty" => &[(80, 1)],
        "ninety" => &[(90, 1)],
        "hundred" => &[(100, 1)],
        "thousand" => &[(1000, 1)],
        "million" => &[(1_000_000, 1)],
        "half" | "halves" | "halved" => &[(1, 2), (2, 1)],
        "third" | "thirds" => &[(1, 3), (3, 1)],
        "quarter" | "quarters" | "fourth" | "fourths" => &[(1, 4), (4, 1)],
        "fifth" | "fifths" => &[(1, 5), (5, 1)],
        "tenth" | "tenths" => &[(1, 10), (10, 1)],
        _ => &[],
    }
}

/// Why an item was not templatised. Checked in this order; the first failing check names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reject {
    /// The solution has no calculator annotation.
    NoAnnotation,
    /// An annotation or the `#### N` line cannot be read.
    Unreadable,
    /// An annotation's expression does not evaluate exactly to its stated result (GSM8K rounds
    /// some results, and a few annotations are wrong).
    ResultMismatch,
    /// A literal traces to nothing: not the question, an earlier result, or a constant.
    Untraced,
    /// A literal equals both an earlier result and a question number that would be perturbed.
    Ambiguous,
    /// `#### N` is no step's result.
    AnswerNotComputed,
    /// The solution read back by [`super::extract`] does not give its own step values (a line
    /// without an annotation states `= value`), so a model's steps could not be matched either.
    Unextractable,
}

impl Reject {
    pub const ALL: [Reject; 7] = [
        Reject::NoAnnotation,
        Reject::Unreadable,
        Reject::ResultMismatch,
        Reject::Untraced,
        Reject::Ambiguous,
        Reject::AnswerNotComputed,
        Reject::Unextractable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reject::NoAnnotation => "no-annotation",
            Reject::Unreadable => "unreadable",
            Reject::ResultMismatch => "result-mismatch",
            Reject::Untraced => "untraced-literal",
            Reject::Ambiguous => "ambiguous-literal",
            Reject::AnswerNotComputed => "answer-not-computed",
            Reject::Unextractable => "unextractable",
        }
    }
}

/// One line of a GSM8K file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// 1-based line number in the file.
    pub line: usize,
    pub question: String,
    pub answer: String,
}

/// Reads a GSM8K JSONL file (`{"question": ..., "answer": ...}` per line).
pub fn read(path: &Path) -> Result<Vec<Row>> {
    #[derive(serde::Deserialize)]
    struct Raw {
        question: String,
        answer: String,
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading GSM8K file {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let raw: Raw = serde_json::from_str(l)
            .with_context(|| format!("{} line {}: not a GSM8K record", path.display(), i + 1))?;
        rows.push(Row {
            line: i + 1,
            question: raw.question,
            answer: raw.answer,
        });
    }
    if rows.is_empty() {
        bail!("{}: no GSM8K records", path.display());
    }
    Ok(rows)
}

/// A number found in text.
struct Found {
    range: std::ops::Range<usize>,
    text: String,
    value: Rational,
    percent: bool,
    /// Glued to a letter or `:` (`3rd`, `5pm`, `3:30`): kept as written.
    glued: bool,
    /// Part of a fraction `a/b`: a question keeps it (its value is traced as a fraction).
    fraction: bool,
}

/// The numbers of a text: digits with thousands commas and decimals; a trailing `%` or
/// ` percent` marks a percentage.
fn numbers(text: &str) -> Vec<Found> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            || (b[i] == b'.'
                && i + 1 < b.len()
                && b[i + 1].is_ascii_digit()
                && (i == 0 || !b[i - 1].is_ascii_digit()));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() {
            let c = b[i];
            let digit_after = i + 1 < b.len() && b[i + 1].is_ascii_digit();
            if c.is_ascii_digit() {
                i += 1;
            } else if c == b','
                && i + 3 < b.len() + 1
                && b[i + 1..].iter().take(3).all(u8::is_ascii_digit)
                && b.len() >= i + 4
                && (i + 4 == b.len() || !b[i + 4].is_ascii_digit())
            {
                i += 4;
            } else if c == b'.' && digit_after && !text[start..i].contains('.') {
                i += 1;
            } else {
                break;
            }
        }
        let s = &text[start..i];
        let Some(value) = Rational::parse_decimal(s) else {
            continue;
        };
        let rest = &text[i..];
        let percent = rest.starts_with('%') || rest.to_ascii_lowercase().starts_with(" percent");
        let before = text[..start].chars().next_back();
        let after = rest.chars().next();
        let glued_char = |c: Option<char>| c.is_some_and(|c| c.is_alphabetic() || c == ':');
        out.push(Found {
            range: start..i,
            text: s.to_string(),
            value,
            percent,
            glued: glued_char(before) || glued_char(after),
            fraction: before == Some('/') || after == Some('/'),
        });
    }
    out
}

/// Values the question gives in words or as fractions `a/b`.
fn fixed_values(question: &str) -> Vec<Rational> {
    let mut out = Vec::new();
    let lower = question.to_lowercase();
    for w in lower.split(|c: char| !c.is_alphabetic()) {
        for &(n, d) in word_values(w) {
            out.extend(Rational::new(n, d));
        }
    }
    // Hyphenated tens and units: twenty-five.
    for w in lower.split(|c: char| !(c.is_alphabetic() || c == '-')) {
        if let Some((t, u)) = w.split_once('-') {
            if let ([(t, 1)], [(u, 1)]) = (word_values(t), word_values(u)) {
                if *t >= 20 && *t % 10 == 0 && *u < 10 {
                    out.push(Rational::int(t + u));
                }
            }
        }
    }
    let b = question.as_bytes();
    for f in numbers(question) {
        let r = f.range.clone();
        if r.end < b.len() && b[r.end] == b'/' {
            if let Some(den) = numbers(&question[r.end + 1..]).first() {
                if den.range.start == 0 {
                    out.extend(f.value.checked_div(den.value));
                }
            }
        }
    }
    out
}

/// Traces one GSM8K item into a template.
pub fn templatise(question: &str, answer: &str) -> Result<Template, Reject> {
    // The question's numbers become quantities.
    let mut quantities = Vec::new();
    let mut qpieces = Vec::new();
    let mut at = 0;
    for f in numbers(question) {
        // A glued number keeps its value, so it stays text (`8:00` keeps its zeros).
        let kept = f.glued || f.fraction;
        if kept {
            qpieces.push(TextPiece::Text(question[at..f.range.end].to_string()));
        } else {
            qpieces.push(TextPiece::Text(question[at..f.range.start].to_string()));
            qpieces.push(TextPiece::Quantity(quantities.len()));
        }
        quantities.push(Quantity {
            value: f.value,
            format: Format::of(&f.text),
            percent: f.percent,
            perturbable: !kept,
        });
        at = f.range.end;
    }
    qpieces.push(TextPiece::Text(question[at..].to_string()));
    let fixed = fixed_values(question);

    let (body, final_line) = answer.rsplit_once("####").ok_or(Reject::Unreadable)?;
    let final_text = final_line.trim();
    let final_value = Rational::parse_decimal(final_text).ok_or(Reject::Unreadable)?;
    let body = body.strip_suffix('\n').unwrap_or(body);
    if !body.contains("<<") {
        return Err(Reject::NoAnnotation);
    }

    let mut steps: Vec<Step> = Vec::new();
    let mut results: Vec<Rational> = Vec::new();
    let mut lines = Vec::new();
    let mut ambiguous = false;
    for text in body.split('\n') {
        let mut pieces = Vec::new();
        let mut rest = text;
        let mut last_step = None;
        // Line literals, for binding the prose numbers of this line.
        let mut line_lits: Vec<(Rational, Literal)> = Vec::new();
        // Prose (`Ok`) and annotations (`Err(step)`) in line order.
        let mut segments: Vec<Result<String, usize>> = Vec::new();
        while let Some(open) = rest.find("<<") {
            let close = rest[open..].find(">>").ok_or(Reject::Unreadable)? + open;
            segments.push(Ok(rest[..open].to_string()));
            let inner = &rest[open + 2..close];
            let (expr, result) = inner.rsplit_once('=').ok_or(Reject::Unreadable)?;
            let stated = Rational::parse_decimal(result.trim()).ok_or(Reject::Unreadable)?;
            let computed = super::template::evaluate(expr).map_err(|_| Reject::Unreadable)?;
            if computed != stated {
                return Err(Reject::ResultMismatch);
            }
            let s = steps.len();
            let mut expr_pieces = Vec::new();
            let mut eat = 0;
            for (r, x) in literals(expr) {
                let lit = trace(x, &results, &quantities, &fixed, &mut ambiguous)
                    .ok_or(Reject::Untraced)?;
                expr_pieces.push(ExprPiece::Text(expr[eat..r.start].to_string()));
                expr_pieces.push(ExprPiece::Lit(lit, Format::of(&expr[r.clone()])));
                line_lits.push((x, lit));
                eat = r.end;
            }
            expr_pieces.push(ExprPiece::Text(expr[eat..].to_string()));
            steps.push(Step {
                expr: expr_pieces,
                result: Format::of(result.trim()),
            });
            results.push(stated);
            line_lits.insert(
                0,
                (
                    stated,
                    Literal {
                        source: Source::Step(s),
                        scale: Scale::Same,
                    },
                ),
            );
            segments.push(Err(s));
            last_step = Some(s);
            rest = &rest[close + 2..];
        }
        segments.push(Ok(rest.to_string()));
        for seg in segments {
            match seg {
                Ok(p) => pieces.extend(echo(&p, &line_lits, &results, &quantities)),
                Err(s) => pieces.push(TextPiece::Annotation(s)),
            }
        }
        lines.push(Line { pieces, last_step });
    }
    if ambiguous {
        return Err(Reject::Ambiguous);
    }
    let answer_step = results
        .iter()
        .rposition(|r| *r == final_value)
        .ok_or(Reject::AnswerNotComputed)?;
    Ok(Template {
        question: qpieces,
        quantities,
        steps,
        lines,
        answer: answer_step,
        answer_format: Format::of(final_text),
    })
}

/// The source of literal `x` (see the module's order), noting an ambiguity between an earlier
/// result and a question number that the perturbation would change.
fn trace(
    x: Rational,
    results: &[Rational],
    quantities: &[Quantity],
    fixed: &[Rational],
    ambiguous: &mut bool,
) -> Option<Literal> {
    let same = |source| Literal {
        source,
        scale: Scale::Same,
    };
    let from_question = quantities.iter().enumerate().find_map(|(i, q)| {
        let scales: &[Scale] = if q.percent {
            &[
                Scale::Same,
                Scale::Percent,
                Scale::PercentLess,
                Scale::PercentMore,
            ]
        } else {
            &[Scale::Same]
        };
        scales
            .iter()
            .find(|s| s.apply(q.value) == Some(x))
            .map(|s| {
                (
                    q.perturbable,
                    Literal {
                        source: Source::Quantity(i),
                        scale: *s,
                    },
                )
            })
    });
    if let Some(s) = results.iter().rposition(|r| *r == x) {
        if from_question.is_some_and(|(perturbable, _)| perturbable) {
            *ambiguous = true;
        }
        return Some(same(Source::Step(s)));
    }
    if let Some((_, lit)) = from_question {
        return Some(lit);
    }
    if fixed.contains(&x) || CONSTANTS.iter().any(|c| Rational::int(*c) == x) {
        return Some(same(Source::Constant(x)));
    }
    None
}

/// The prose of a solution line with its numbers bound: to this line's result or literals
/// first, then to an earlier result, then to a question number; a number bound to nothing is
/// kept as written.
fn echo(
    prose: &str,
    line_lits: &[(Rational, Literal)],
    results: &[Rational],
    quantities: &[Quantity],
) -> Vec<TextPiece> {
    let mut out = Vec::new();
    let mut at = 0;
    for f in numbers(prose) {
        let bound = line_lits
            .iter()
            .find(|(v, _)| *v == f.value)
            .map(|(_, l)| *l)
            .or_else(|| {
                results
                    .iter()
                    .rposition(|r| *r == f.value)
                    .map(|s| Literal {
                        source: Source::Step(s),
                        scale: Scale::Same,
                    })
            })
            .or_else(|| {
                quantities
                    .iter()
                    .position(|q| q.value == f.value)
                    .map(|q| Literal {
                        source: Source::Quantity(q),
                        scale: Scale::Same,
                    })
            });
        if let (Some(l), false) = (bound, f.glued) {
            out.push(TextPiece::Text(prose[at..f.range.start].to_string()));
            out.push(TextPiece::Echo(l, Format::of(&f.text)));
            at = f.range.end;
        }
    }
    out.push(TextPiece::Text(prose[at..].to_string()));
    out
}
