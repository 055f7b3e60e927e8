//! A DeduCE item as stored and exported: the question, its solution steps (each carrying its
//! calculator annotation in GSM8K's notation) with their values, and the answer. Anyone can
//! re-execute it from the text alone ([`Problem::verify`] does, before anything is stored).

use super::extract::{annotations, extract};
use super::rational::Rational;
use super::template::{evaluate, Executed, Template};
use crate::store::{canonical, Kind, Record};
use anyhow::{anyhow, bail, Result};
use serde::Serialize;

/// One solution step: its text (with `<<expr=result>>`) and its value, the exact decimal (or
/// `p/q`) of its last annotation's result.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct ProblemStep {
    pub text: String,
    pub value: String,
}

#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Problem {
    /// `gsm8k` or `synthetic`.
    pub dataset: String,
    /// Where it comes from: `test.jsonl line 12`, or the synthetic generator's seed and index.
    pub origin: String,
    /// Whether its numbers were redrawn (a perturbed copy of a GSM8K item).
    pub perturbed: bool,
    pub question: String,
    pub steps: Vec<ProblemStep>,
    pub answer: String,
}

impl Record for Problem {
    const KIND: Kind = Kind {
        table: "problems",
        context: "deltalogic 2026-11-23 deduce problem v1",
        noun: "problem",
    };
    fn content(&self) -> Vec<u8> {
        canonical(self)
    }
}

impl Problem {
    /// The problem a template gives under one execution.
    pub fn from_template(
        t: &Template,
        ex: &Executed,
        dataset: &str,
        origin: String,
        perturbed: bool,
    ) -> Result<Problem> {
        let steps = t
            .steps(ex)?
            .into_iter()
            .map(|(text, v)| ProblemStep {
                text,
                value: v.to_string(),
            })
            .collect();
        Ok(Problem {
            dataset: dataset.to_string(),
            origin,
            perturbed,
            question: t.question(ex)?,
            steps,
            answer: ex.results[t.answer].to_string(),
        })
    }

    /// Each step's value, exactly.
    pub fn values(&self) -> Result<Vec<Rational>> {
        self.steps.iter().map(|s| parse_value(&s.value)).collect()
    }

    pub fn answer_value(&self) -> Result<Rational> {
        parse_value(&self.answer)
    }

    /// Whether [`extract`] reads this problem's own solution back as its step values and
    /// answer: the contract that lets a model's continuation be matched step by step.
    pub fn extractable(&self) -> Result<bool> {
        let text: Vec<&str> = self.steps.iter().map(|s| s.text.as_str()).collect();
        let got = extract(&format!("{}\n#### {}", text.join("\n"), self.answer));
        Ok(got.steps == self.values()? && got.answer == Some(self.answer_value()?))
    }

    /// Re-executes the problem from its text: every annotation's expression evaluates exactly to
    /// its stated result, each step's value is its last annotation's result, and the answer is a
    /// step's value. `what` names the problem in errors.
    pub fn verify(&self, what: &str) -> Result<()> {
        if self.steps.is_empty() {
            bail!("{what}: no steps");
        }
        let values = self.values().map_err(|e| anyhow!("{what}: {e}"))?;
        for (i, (s, v)) in self.steps.iter().zip(&values).enumerate() {
            let anns = annotations(&s.text);
            let Some(last) = anns.last() else {
                bail!("{what}: step {} has no annotation", i + 1);
            };
            for (expr, result) in &anns {
                let got = evaluate(expr).map_err(|e| anyhow!("{what}: step {}: {e}", i + 1))?;
                if got != *result {
                    bail!("{what}: step {}: {expr} is {got}, not {result}", i + 1);
                }
            }
            if last.1 != *v {
                bail!(
                    "{what}: step {} has value {v}, its annotation {}",
                    i + 1,
                    last.1
                );
            }
        }
        let a = self.answer_value().map_err(|e| anyhow!("{what}: {e}"))?;
        if !values.contains(&a) {
            bail!("{what}: the answer {a} is no step's value");
        }
        Ok(())
    }
}

/// A value as [`Rational`]'s display writes it: a decimal or `p/q`.
pub fn parse_value(s: &str) -> Result<Rational> {
    let parsed = match s.split_once('/') {
        Some((n, d)) => n
            .parse()
            .ok()
            .zip(d.parse().ok())
            .and_then(|(n, d)| Rational::new(n, d)),
        None => Rational::parse_decimal(s),
    };
    parsed.ok_or_else(|| anyhow!("`{s}` is not a value"))
}

/// A step's text as a reader sees it: the annotations removed (`9 * 2 = $<<9*2=18>>18` reads
/// `9 * 2 = $18`), which is how prompts show the first k steps.
pub fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("<<") {
        let Some(close) = rest[open..].find(">>").map(|c| c + open) else {
            break;
        };
        out.push_str(&rest[..open]);
        rest = &rest[close + 2..];
    }
    out.push_str(rest);
    out
}
