//! Belief-R's prompts: the dataset's multiple-choice prompt (`src/prompts/one_time.py` of the
//! Belief-R code) with an answer cue for constrained scoring, scoring either the option letters
//! (`beliefr-letters`) or the option texts (`beliefr-text`).

use crate::benchmarks::prompts::{record_of, TemplateRecord};
use crate::benchmarks::question::Question;
use crate::benchmarks::question::QuestionTemplate;
use anyhow::Result;
use serde::Serialize;

/// How a question's options are named in the prompt and scored as labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabelForm {
    /// The option letters: labels ` a`, ` b`, ` c` (one token each in most vocabularies).
    Letters,
    /// The option texts as the dataset words them: labels ` John learns something new.`, ...
    Text,
}

/// The wording of multiple-choice prompts: the Belief-R prompt (`src/prompts/one_time.py` of
/// the Belief-R code: the dataset's `questions` cell, then its formatting line) with an answer
/// cue for constrained scoring.
#[derive(Clone, Debug, Serialize)]
struct ChoiceWording {
    /// Before the letters (`either a, b, or c.`).
    letters_reminder: &'static str,
    text_reminder: &'static str,
    answer_cue: &'static str,
}

const CHOICE_WORDING: ChoiceWording = ChoiceWording {
    letters_reminder: "Begin! Reminder to write your final answer as \"Final Answer [X].\" and fill [X] with either ",
    text_reminder: "Begin! Reminder to write your final answer as \"Final Answer [X].\" and fill [X] with one of the options above, word for word.",
    answer_cue: "Final Answer:",
};

/// A template for single questions: premises one a line, a blank line, the query, the options
/// `(a) ...`, a blank line, the reminder, a blank line, `Final Answer:`. Labels per question:
/// its option letters or texts, each after a space.
#[derive(Clone, Debug, Serialize)]
pub struct ChoiceTemplate {
    pub name: &'static str,
    pub version: u32,
    pub form: LabelForm,
    wording: ChoiceWording,
}

pub const CHOICE_TEMPLATE_NAMES: [&str; 2] = ["beliefr-letters", "beliefr-text"];

pub fn beliefr(form: LabelForm) -> ChoiceTemplate {
    ChoiceTemplate {
        name: match form {
            LabelForm::Letters => CHOICE_TEMPLATE_NAMES[0],
            LabelForm::Text => CHOICE_TEMPLATE_NAMES[1],
        },
        version: 1,
        form,
        wording: CHOICE_WORDING,
    }
}

/// `a`, `b`, ... for option `i`.
fn letter(i: usize) -> char {
    char::from(b'a' + u8::try_from(i).expect("fewer than 26 options"))
}

impl ChoiceTemplate {
    pub fn record(&self) -> TemplateRecord {
        record_of(self.name, self)
    }

    /// The prompt of a question. Options lose a final period, as the dataset's own `questions`
    /// cells print them.
    pub fn prompt(&self, q: &Question) -> String {
        let mut s = String::new();
        for p in &q.premises {
            s.push_str(p);
            s.push('\n');
        }
        s.push('\n');
        s.push_str(&q.query);
        s.push('\n');
        for (i, o) in q.options.iter().enumerate() {
            s.push_str(&format!(
                "({}) {}\n",
                letter(i),
                o.text.trim_end_matches('.')
            ));
        }
        s.push('\n');
        match self.form {
            LabelForm::Letters => {
                s.push_str(self.wording.letters_reminder);
                let letters: Vec<String> = (0..q.options.len())
                    .map(|i| letter(i).to_string())
                    .collect();
                s.push_str(&match letters.as_slice() {
                    [init @ .., last] if init.len() >= 2 => {
                        format!("{}, or {last}.", init.join(", "))
                    }
                    [first, last] => format!("{first} or {last}."),
                    _ => format!("{}.", letters.join("")),
                });
            }
            LabelForm::Text => s.push_str(self.wording.text_reminder),
        }
        s.push_str("\n\n");
        s.push_str(self.wording.answer_cue);
        s
    }

    /// The label texts of a question's options, in option order.
    pub fn labels(&self, q: &Question) -> Vec<String> {
        (0..q.options.len())
            .map(|i| match self.form {
                LabelForm::Letters => format!(" {}", letter(i)),
                LabelForm::Text => format!(" {}", q.options[i].text),
            })
            .collect()
    }
}

impl QuestionTemplate for ChoiceTemplate {
    fn record(&self) -> TemplateRecord {
        ChoiceTemplate::record(self)
    }
    fn prompt(&self, q: &Question) -> Result<String> {
        Ok(ChoiceTemplate::prompt(self, q))
    }
    fn labels(&self, q: &Question) -> Result<Vec<String>> {
        Ok(ChoiceTemplate::labels(self, q))
    }
}
