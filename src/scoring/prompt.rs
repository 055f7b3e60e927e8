//! Prompt templates. A DeltaLogic episode gives two prompt states: step 1 = P and q; step 2 =
//! the dialogue continued with the model's own step-1 label, then P', then q again. Templates
//! are versioned and content-hashed: any change to the text they produce changes their id, and
//! so every score key and result that used them.

use super::records::TemplateRecord;
use crate::episodes::{Episode, Premise, Semantics};
use crate::logic::Label;
use crate::registry::{canonical, Id, Record};
use serde::Serialize;

/// Everything that decides the text of a prompt and its labels.
#[derive(Clone, Debug, Serialize)]
pub struct Template {
    pub name: &'static str,
    pub version: u32,
    /// Surface form of each label, in the order True, False, Uncertain; each starts with its
    /// separating space so the prompt's tokens stay a prefix of prompt+label.
    pub labels: [&'static str; 3],
    intro: &'static str,
    revised_intro: &'static str,
    question: &'static str,
    open_world_rule: &'static str,
    closed_world_rule: &'static str,
    answer_cue: &'static str,
}

/// The paper's form: premises, question, ending in `Label:`.
pub const PLAIN: Template = Template {
    name: "plain",
    version: 1,
    labels: [" True", " False", " Uncertain"],
    intro: "Premises:\n",
    revised_intro: "\n\nThe premises have been revised. Revised premises:\n",
    question: "Question: Based only on the premises, is the following statement True, False, or Uncertain?\nStatement: ",
    open_world_rule: "Answer Uncertain when the premises settle neither the statement nor its negation.\n",
    closed_world_rule: "Closed world: anything that is not stated and cannot be derived from the premises is false.\n",
    answer_cue: "Label:",
};

pub const TEMPLATES: [&Template; 1] = [&PLAIN];

pub fn by_name(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().copied().find(|t| t.name == name)
}

impl Template {
    pub fn record(&self) -> TemplateRecord {
        TemplateRecord {
            name: self.name.to_string(),
            definition: String::from_utf8(canonical(self)).expect("JSON is UTF-8"),
        }
    }

    pub fn id(&self) -> Id {
        self.record().id()
    }

    pub fn label_text(&self, label: Label) -> &'static str {
        self.labels[label_index(label)]
    }

    /// Step 1: the premises and the question.
    pub fn step1(&self, ep: &Episode) -> String {
        let mut s = String::from(self.intro);
        push_premises(&mut s, &ep.premises);
        self.push_question(&mut s, ep);
        s
    }

    /// Step 2: step 1 answered with the model's own label, the revised premises, the question.
    pub fn step2(&self, ep: &Episode, pred0: Label, after: &[Premise]) -> String {
        let mut s = self.step1(ep);
        s.push_str(self.label_text(pred0));
        s.push_str(self.revised_intro);
        push_premises(&mut s, after);
        self.push_question(&mut s, ep);
        s
    }

    fn push_question(&self, s: &mut String, ep: &Episode) {
        s.push('\n');
        s.push_str(match ep.semantics {
            Semantics::ClosedWorld => self.closed_world_rule,
            Semantics::OpenWorld | Semantics::FirstOrder => self.open_world_rule,
        });
        s.push_str(self.question);
        s.push_str(&ep.query.text);
        s.push('\n');
        s.push_str(self.answer_cue);
    }
}

fn push_premises(s: &mut String, premises: &[Premise]) {
    for (i, p) in premises.iter().enumerate() {
        s.push_str(&format!("{}. {}\n", i + 1, p.text));
    }
}

pub fn label_index(label: Label) -> usize {
    match label {
        Label::True => 0,
        Label::False => 1,
        Label::Uncertain => 2,
    }
}
