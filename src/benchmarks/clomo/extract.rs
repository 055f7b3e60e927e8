//! Reading generations: the modified argument a model wrote, and a `cot` judge's yes/no.
//!
//! The modified argument. CLoMo's `ses.py` judges the first line of the prediction, which in
//! the CoT setting is reasoning, not the argument. Here, in every setting (one rule, so that a
//! result is read without knowing its setting, and a zero-shot answer that reasons first is read
//! like a CoT one):
//! 1. the text after the *last* `Modified Argument:` (any case) is taken; failing that, the text
//!    from the last `Statement1:` (the dataset's arguments number their statements from
//!    `Statement1:`, so a model restating the argument starts there); failing both, the whole
//!    text (then the reasoning itself is judged, as a model that never states an argument
//!    deserves);
//! 2. a leading `Modified Argument:` or `Argument:` label is dropped, and the first non-empty
//!    line is the argument (as in `ses.py`; a line holding only the label does not count).
//!
//! The judge's answer (`cot` mode): `ses.py` reads an answer that *starts* with yes or no; a
//! judge told to think step by step first states its answer last, so the last standalone word
//! `yes` or `no` (any case) is the answer, and a text with neither is unreadable.

use super::ses::Judgement;

const MODIFIED: &str = "modified argument:";
const FIRST_STATEMENT: &str = "statement1:";

/// The modified argument in a generation (see the module's rules).
pub fn modified_argument(text: &str) -> String {
    let lower = text.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII; positions are only trusted where the
    // lower-cased text has the same length.
    let same = lower.len() == text.len();
    let mut rest = text;
    if same {
        if let Some(i) = lower.rfind(MODIFIED) {
            rest = &text[i + MODIFIED.len()..];
        } else if let Some(i) = lower.rfind(FIRST_STATEMENT) {
            rest = &text[i..];
        }
    }
    rest.lines()
        .map(|l| strip_label(l.trim()))
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

fn strip_label(line: &str) -> &str {
    for label in ["modified argument:", "argument:"] {
        if line.len() >= label.len()
            && line.is_char_boundary(label.len())
            && line[..label.len()].eq_ignore_ascii_case(label)
        {
            return line[label.len()..].trim();
        }
    }
    line
}

/// A `cot` judge's answer: its last standalone yes or no.
pub fn judgement(text: &str) -> Judgement {
    text.split(|c: char| !c.is_alphanumeric())
        .rev()
        .find_map(|w| {
            if w.eq_ignore_ascii_case("yes") {
                Some(Judgement::Yes)
            } else if w.eq_ignore_ascii_case("no") {
                Some(Judgement::No)
            } else {
                None
            }
        })
        .unwrap_or(Judgement::Unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_without_its_label() {
        let t = "Modified Argument:\nStatement1: A. Statement2: B.\nThis is why.";
        assert_eq!(modified_argument(t), "Statement1: A. Statement2: B.");
        assert_eq!(
            modified_argument("  Argument: Statement1: C.\n"),
            "Statement1: C."
        );
        assert_eq!(modified_argument("\n \n"), "");
    }

    #[test]
    fn the_argument_after_the_reasoning() {
        let t = "Premise 2 says X. Statement1: is about Y, so change it.\n\
                 Modified Argument: Statement1: Y'. Statement2: Z.\nDone.";
        assert_eq!(modified_argument(t), "Statement1: Y'. Statement2: Z.");
        // Without the label: from the last Statement1.
        let t = "Statement1: old. We must change it.\nStatement1: new. Statement2: kept.";
        assert_eq!(modified_argument(t), "Statement1: new. Statement2: kept.");
        // Without either: the first line of the whole text.
        assert_eq!(modified_argument("I cannot.\nSorry."), "I cannot.");
        // A zero-shot answer that reasons first is read the same way.
        let t = "Reasoning first.\nModified Argument: Statement1: Y.";
        assert_eq!(modified_argument(t), "Statement1: Y.");
    }

    #[test]
    fn judge_answers_are_read_from_the_end() {
        assert_eq!(
            judgement("No premise is needed... so the answer is Yes."),
            Judgement::Yes
        );
        assert_eq!(
            judgement("Yes, it seems so; but on reflection: no"),
            Judgement::No
        );
        assert_eq!(
            judgement("It is unknowable (nobody, yesterday)."),
            Judgement::Unreadable
        );
    }
}
