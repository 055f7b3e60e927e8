//! Reading values out of a model's continuation of a solution.
//!
//! The continuation is read line by line; a line is a step if it yields a value:
//! - the result of its last calculator annotation `<<expr=value>>`, if it has one;
//! - otherwise the number right after its last `=` (`$`, spaces and thousands commas allowed;
//!   `a/b` read as a fraction; a trailing unit or `%` ignored).
//!
//! Lines with neither are prose and skipped. A line starting with `####` gives the final answer and
//! ends the solution; so does `the answer is N`. Without either, the final answer is the last
//! step's value. Values are compared exactly (`18.00` is `18`).

use super::rational::Rational;

/// The `<<expr=result>>` annotations of a text, with their results (unreadable ones left out:
/// a model's output may hold anything). A problem's own steps are checked by them too.
pub fn annotations(text: &str) -> Vec<(String, Rational)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("<<") {
        let Some(close) = rest[open..].find(">>").map(|c| c + open) else {
            break;
        };
        if let Some((expr, result)) = rest[open + 2..close].rsplit_once('=') {
            if let Some(r) = Rational::parse_decimal(result.trim()) {
                out.push((expr.to_string(), r));
            }
        }
        rest = &rest[close + 2..];
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Extracted {
    /// The value of each step line, in order.
    pub steps: Vec<Rational>,
    pub answer: Option<Rational>,
}

pub fn extract(continuation: &str) -> Extracted {
    let mut out = Extracted::default();
    for line in continuation.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("####") {
            out.answer = number_at(rest);
            return out;
        }
        let lower = line.to_lowercase();
        if let Some(at) = lower.find("the answer is") {
            out.answer = number_at(&line[at + "the answer is".len()..]);
            return out;
        }
        let value = match annotations(line).last() {
            Some((_, v)) => Some(*v),
            None => line.rfind('=').and_then(|at| number_at(&line[at + 1..])),
        };
        out.steps.extend(value);
    }
    out.answer = out.steps.last().copied();
    out
}

/// The number at the start of `s`, after spaces, `$` and a colon.
fn number_at(s: &str) -> Option<Rational> {
    let s = s.trim_start_matches(|c: char| c.is_whitespace() || c == '$' || c == ':');
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == ','
                || (c == '-' && i == 0)
                || (c == '.' && s[i + 1..].starts_with(|d: char| d.is_ascii_digit())))
        })
        .map_or(s.len(), |(i, _)| i);
    let n = Rational::parse_decimal(s[..end].trim_end_matches(','))?;
    match s[end..].strip_prefix('/') {
        Some(rest) if rest.starts_with(|d: char| d.is_ascii_digit()) => {
            let dend = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            n.checked_div(Rational::parse_decimal(&rest[..dend])?)
        }
        _ => Some(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Rational {
        Rational::parse_decimal(s).unwrap()
    }

    #[test]
    fn reads_step_values_in_order() {
        let e = extract(
            "She makes 9 * 2 = $18 every day.\nThen, the rest is spent.\nTotal: 18 + 2.50 = 20.5\n#### 20.50",
        );
        assert_eq!(e.steps, vec![r("18"), r("20.5")]);
        assert_eq!(e.answer, Some(r("20.5")));
    }

    #[test]
    fn annotations_win_over_prose() {
        let e =
            extract("So 80,000*1.5=<<80000*1.5=120000>>120,000 = 1 house\nThe answer is 1,200.");
        assert_eq!(e.steps, vec![r("120000")]);
        assert_eq!(e.answer, Some(r("1200")));
    }

    #[test]
    fn fractions_units_and_missing_answers() {
        let e = extract("Half is 3 / 4 = 3/4 cups\nIt costs = 15% of it\nno value here =\n");
        assert_eq!(e.steps, vec![r("0.75"), r("15")]);
        // No `####` and no "the answer is": the last step's value.
        assert_eq!(e.answer, Some(r("15")));
        assert_eq!(extract("I don't know."), Extracted::default());
    }

    #[test]
    fn the_final_answer_ends_the_solution() {
        let e = extract("a = 3\n#### 3\nb = 4");
        assert_eq!(e.steps, vec![r("3")]);
        assert_eq!(e.answer, Some(r("3")));
    }
}
