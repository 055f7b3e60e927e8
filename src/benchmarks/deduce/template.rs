//! A templated problem: the question and its solution with every number that matters bound to a
//! variable, so that it can be re-executed with the original values (reproducing the dataset
//! exactly) or with new ones (a perturbed copy whose every value is recomputed).
//!
//! A *step* is one calculator annotation `<<expr=result>>`; its expression's literals are bound to
//! a question quantity (possibly as a percentage), to an earlier step's result, or to a documented
//! constant. A *line* of the solution is what a reader (and the model) sees as one step: DeduCE
//! compares the value of each line that holds annotations, which is its last annotation's result.

use super::rational::Rational;
use anyhow::{anyhow, bail, Result};

/// How a number is written, so that a new value is written the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// Thousands separators (`80,000`).
    pub commas: bool,
    /// Decimal places as written (`2.50` has 2); a new value is written with the same places.
    pub places: u32,
    /// `0.5` rather than `.5`.
    pub leading_zero: bool,
}

impl Format {
    pub const PLAIN: Format = Format {
        commas: false,
        places: 0,
        leading_zero: true,
    };

    /// The format of a number as written in the text.
    pub fn of(text: &str) -> Format {
        Format {
            commas: text.contains(','),
            places: text.split_once('.').map_or(0, |(_, f)| f.len() as u32),
            leading_zero: !text.starts_with('.'),
        }
    }

    /// `v` written in this format; `None` if it needs more places than the format has.
    pub fn write(self, v: Rational) -> Option<String> {
        let places = self.places.max(v.decimal_places()?);
        let s = v.to_decimal(places)?;
        let (int, frac) = s
            .split_once('.')
            .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
        let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
        let mut int = digits.to_string();
        if self.commas && int.len() > 3 {
            let mut grouped = String::new();
            for (i, c) in int.chars().enumerate() {
                if i > 0 && (int.len() - i) % 3 == 0 {
                    grouped.push(',');
                }
                grouped.push(c);
            }
            int = grouped;
        }
        if !self.leading_zero && int == "0" && frac.is_some() {
            int.clear();
        }
        Some(match frac {
            Some(f) => format!("{sign}{int}.{f}"),
            None => format!("{sign}{int}"),
        })
    }
}

/// What a literal of an expression stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A number of the question.
    Quantity(usize),
    /// An earlier step's result.
    Step(usize),
    /// A constant from [`super::gsm8k::CONSTANTS`] or a number word's fixed value.
    Constant(Rational),
}

/// How the literal is derived from its source's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Same,
    /// `p%` used as `p/100`.
    Percent,
    /// `p%` used as `1 - p/100` (20% off: 0.8).
    PercentLess,
    /// `p%` used as `1 + p/100` (a 50% raise: 1.5).
    PercentMore,
}

impl Scale {
    pub fn apply(self, v: Rational) -> Option<Rational> {
        let hundred = Rational::int(100);
        match self {
            Scale::Same => Some(v),
            Scale::Percent => v.checked_div(hundred),
            Scale::PercentLess => Rational::ONE.checked_sub(v.checked_div(hundred)?),
            Scale::PercentMore => Rational::ONE.checked_add(v.checked_div(hundred)?),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Literal {
    pub source: Source,
    pub scale: Scale,
}

/// A piece of an expression: operators and spacing as written, or a bound literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExprPiece {
    Text(String),
    Lit(Literal, Format),
}

/// One calculator annotation: its expression and how its result is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub expr: Vec<ExprPiece>,
    pub result: Format,
}

/// A number of the question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity {
    pub value: Rational,
    pub format: Format,
    /// Written as a percentage (`15%`, `15 percent`).
    pub percent: bool,
    /// Digits that may take a new value; number words and numbers glued to letters (`3rd`,
    /// `5pm`) keep theirs.
    pub perturbable: bool,
}

/// A piece of text (question or solution line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextPiece {
    Text(String),
    /// A question quantity, written in its own format.
    Quantity(usize),
    /// A number of the solution's prose bound to a value (a literal or a step result), written in
    /// the format it had.
    Echo(Literal, Format),
    /// The annotation of a step: `<<expr=result>>`.
    Annotation(usize),
}

/// A line of the solution. `last_step` is the step whose result is the line's value, for lines
/// holding annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub pieces: Vec<TextPiece>,
    pub last_step: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub question: Vec<TextPiece>,
    pub quantities: Vec<Quantity>,
    pub steps: Vec<Step>,
    pub lines: Vec<Line>,
    /// The step whose result is the final answer, and how `#### N` writes it.
    pub answer: usize,
    pub answer_format: Format,
}

/// A template executed with one assignment of values to its quantities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Executed {
    pub quantities: Vec<Rational>,
    pub results: Vec<Rational>,
}

impl Executed {
    fn literal(&self, l: Literal) -> Result<Rational> {
        let v = match l.source {
            Source::Quantity(q) => self.quantities[q],
            Source::Step(s) => self.results[s],
            Source::Constant(c) => c,
        };
        l.scale
            .apply(v)
            .ok_or_else(|| anyhow!("overflow scaling {v}"))
    }

    fn write_literal(&self, l: Literal, f: Format) -> Result<String> {
        let v = self.literal(l)?;
        f.write(v)
            .ok_or_else(|| anyhow!("{v} has no exact decimal form"))
    }
}

impl Template {
    /// The original values of the quantities.
    pub fn original(&self) -> Vec<Rational> {
        self.quantities.iter().map(|q| q.value).collect()
    }

    /// Renders one step's expression with the values computed so far.
    fn expression(&self, step: usize, ex: &Executed) -> Result<String> {
        let mut s = String::new();
        for p in &self.steps[step].expr {
            match p {
                ExprPiece::Text(t) => s.push_str(t),
                ExprPiece::Lit(l, f) => s.push_str(&ex.write_literal(*l, *f)?),
            }
        }
        Ok(s)
    }

    /// Executes every step in order with `quantities`: each expression is rendered as text and
    /// evaluated by the same parser that reads the dataset, so what is executed is exactly what
    /// the exported annotation says.
    pub fn execute(&self, quantities: Vec<Rational>) -> Result<Executed> {
        let mut ex = Executed {
            quantities,
            results: Vec::with_capacity(self.steps.len()),
        };
        for i in 0..self.steps.len() {
            let e = self.expression(i, &ex)?;
            let v = evaluate(&e).map_err(|why| anyhow!("step {}: `{e}`: {why}", i + 1))?;
            ex.results.push(v);
        }
        Ok(ex)
    }

    fn annotation(&self, step: usize, ex: &Executed) -> Result<String> {
        let r = ex.results[step];
        let r = self.steps[step]
            .result
            .write(r)
            .ok_or_else(|| anyhow!("step {}: {r} has no exact decimal form", step + 1))?;
        Ok(format!("<<{}={r}>>", self.expression(step, ex)?))
    }

    fn render(&self, pieces: &[TextPiece], ex: &Executed) -> Result<String> {
        let mut s = String::new();
        for p in pieces {
            match p {
                TextPiece::Text(t) => s.push_str(t),
                TextPiece::Quantity(q) => {
                    let v = ex.quantities[*q];
                    let f = self.quantities[*q].format;
                    s.push_str(
                        &f.write(v)
                            .ok_or_else(|| anyhow!("{v} cannot be written as {f:?}"))?,
                    )
                }
                TextPiece::Echo(l, f) => {
                    let v = ex.literal(*l)?;
                    s.push_str(
                        &f.write(v)
                            .ok_or_else(|| anyhow!("{v} cannot be written as {f:?}"))?,
                    )
                }
                TextPiece::Annotation(i) => s.push_str(&self.annotation(*i, ex)?),
            }
        }
        Ok(s)
    }

    pub fn question(&self, ex: &Executed) -> Result<String> {
        self.render(&self.question, ex)
    }

    /// The solution's steps: each line holding annotations, preceded by the lines without any
    /// that come before it (a trailing line without annotations joins the last step), with the
    /// value of each.
    pub fn steps(&self, ex: &Executed) -> Result<Vec<(String, Rational)>> {
        let mut out: Vec<(String, Rational)> = Vec::new();
        let mut pending = String::new();
        for line in &self.lines {
            let text = self.render(&line.pieces, ex)?;
            match line.last_step {
                Some(s) => {
                    out.push((format!("{pending}{text}"), ex.results[s]));
                    pending.clear();
                }
                None => {
                    pending.push_str(&text);
                    pending.push('\n');
                }
            }
        }
        if !pending.is_empty() {
            match out.last_mut() {
                Some(last) => {
                    last.0.push('\n');
                    last.0.push_str(pending.trim_end_matches('\n'));
                }
                None => bail!("a solution without annotated steps"),
            }
        }
        Ok(out)
    }

    /// The solution as GSM8K writes it: its lines, then `#### answer`.
    pub fn solution(&self, ex: &Executed) -> Result<String> {
        let mut s = String::new();
        for line in &self.lines {
            s.push_str(&self.render(&line.pieces, ex)?);
            s.push('\n');
        }
        let a = ex.results[self.answer];
        let a = self
            .answer_format
            .write(a)
            .ok_or_else(|| anyhow!("the answer {a} has no exact decimal form"))?;
        s.push_str(&format!("#### {a}"));
        Ok(s)
    }
}

/// Evaluates a calculator expression exactly: numbers, `+ - * /`, parentheses, unary minus,
/// spaces. The usual precedence; `/` and `-` associate to the left.
pub fn evaluate(expr: &str) -> Result<Rational, String> {
    let toks = tokens(expr)?;
    let mut p = Parser { toks: &toks, at: 0 };
    let v = p.sum()?;
    if p.at != toks.len() {
        return Err(format!("unexpected `{}`", toks[p.at].text()));
    }
    Ok(v)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(Rational, String),
    Op(char),
}

impl Tok {
    fn text(&self) -> String {
        match self {
            Tok::Num(_, s) => s.clone(),
            Tok::Op(c) => c.to_string(),
        }
    }
}

fn tokens(expr: &str) -> Result<Vec<Tok>, String> {
    let cs: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < cs.len() && (cs[i].is_ascii_digit() || cs[i] == '.' || cs[i] == ',') {
                i += 1;
            }
            let s: String = cs[start..i].iter().collect();
            let v = Rational::parse_decimal(&s).ok_or(format!("bad number `{s}`"))?;
            out.push(Tok::Num(v, s));
            continue;
        }
        match c {
            '+' | '-' | '*' | '/' | '(' | ')' => out.push(Tok::Op(c)),
            c if c.is_whitespace() => {}
            c => return Err(format!("unexpected character `{c}`")),
        }
        i += 1;
    }
    Ok(out)
}

struct Parser<'a> {
    toks: &'a [Tok],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn sum(&mut self) -> Result<Rational, String> {
        let mut v = self.product()?;
        while let Some(Tok::Op(op @ ('+' | '-'))) = self.peek().cloned() {
            self.at += 1;
            let r = self.product()?;
            v = if op == '+' {
                v.checked_add(r)
            } else {
                v.checked_sub(r)
            }
            .ok_or("overflow")?;
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<Rational, String> {
        let mut v = self.unary()?;
        while let Some(Tok::Op(op @ ('*' | '/'))) = self.peek().cloned() {
            self.at += 1;
            let r = self.unary()?;
            v = if op == '*' {
                v.checked_mul(r).ok_or("overflow")?
            } else {
                v.checked_div(r).ok_or("division by zero or overflow")?
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<Rational, String> {
        match self.peek().cloned() {
            Some(Tok::Op('-')) => {
                self.at += 1;
                Rational::ZERO
                    .checked_sub(self.unary()?)
                    .ok_or("overflow".into())
            }
            Some(Tok::Op('(')) => {
                self.at += 1;
                let v = self.sum()?;
                match self.peek() {
                    Some(Tok::Op(')')) => {
                        self.at += 1;
                        Ok(v)
                    }
                    _ => Err("unclosed `(`".into()),
                }
            }
            Some(Tok::Num(v, _)) => {
                self.at += 1;
                Ok(v)
            }
            Some(t) => Err(format!("unexpected `{}`", t.text())),
            None => Err("unexpected end".into()),
        }
    }
}

/// The number literals of an expression with their byte ranges, in order.
pub fn literals(expr: &str) -> Vec<(std::ops::Range<usize>, Rational)> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() || b[i] == b'.' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b',') {
                i += 1;
            }
            if let Some(v) = Rational::parse_decimal(&expr[start..i]) {
                out.push((start..i, v));
            }
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_with_precedence_exactly() {
        let r = |s: &str| evaluate(s).unwrap().to_string();
        assert_eq!(r("16-3-4"), "9");
        assert_eq!(r("2+3*4"), "14");
        assert_eq!(r("(2+3)*4"), "20");
        assert_eq!(r("80000*1.5"), "120000");
        assert_eq!(r("100/4/5"), "5");
        assert_eq!(r("-3+.5"), "-2.5");
        assert!(evaluate("2^3").is_err());
        assert!(evaluate("(2+3").is_err());
        assert!(evaluate("4/0").is_err());
    }

    #[test]
    fn formats_keep_their_style() {
        let r = |s: &str| Rational::parse_decimal(s).unwrap();
        assert_eq!(
            Format::of("80,000").write(r("1234567")).unwrap(),
            "1,234,567"
        );
        assert_eq!(Format::of("2.50").write(r("3.1")).unwrap(), "3.10");
        assert_eq!(Format::of(".5").write(r("0.25")).unwrap(), ".25");
        assert_eq!(Format::of("3").write(r("2.5")).unwrap(), "2.5");
    }
}
