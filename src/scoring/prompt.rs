//! Prompt templates. A DeltaLogic episode gives two prompt states: step 1 = P and q; step 2 =
//! the dialogue continued with the model's own step-1 label, then P', then q again. Templates
//! are versioned and content-hashed: any change to the text they produce changes their id, and
//! so every score key and result that used them.
//!
//! - `plain`: the paper's form, premises and question ending in `Label:`; labels ` True`,
//!   ` False`, ` Uncertain` (with their separating space).
//! - `chat`: the same question as a user turn in the model's own chat template (GGUF
//!   `tokenizer.chat_template` or HF `tokenizer_config.json`), rendered with minijinja; the
//!   model's step-1 label becomes its assistant turn. Labels `True`, `False`, `Uncertain` open
//!   the assistant turn.

use super::records::TemplateRecord;
use crate::episodes::{Episode, Premise, Semantics};
use crate::logic::Label;
use crate::registry::{canonical, Id, Record};
use anyhow::{bail, Context, Result};
use serde::Serialize;

/// The wording shared by both templates.
#[derive(Clone, Debug, Serialize)]
struct Wording {
    intro: &'static str,
    revised_intro: &'static str,
    open_world_rule: &'static str,
    closed_world_rule: &'static str,
    question: &'static str,
}

const WORDING: Wording = Wording {
    intro: "Premises:\n",
    revised_intro: "The premises have been revised. Revised premises:\n",
    open_world_rule: "Answer Uncertain when the premises settle neither the statement nor its negation.\n",
    closed_world_rule: "Closed world: anything that is not stated and cannot be derived from the premises is false.\n",
    question: "Question: Based only on the premises, is the following statement True, False, or Uncertain?\nStatement: ",
};

#[derive(Clone, Debug, Serialize)]
enum Form {
    /// Plain text: `Label:` cues the answer, the revision follows as more text.
    Plain { answer_cue: &'static str },
    /// The model's chat template (jinja source), user and assistant turns.
    Chat { jinja: String },
}

/// Everything that decides the text of a prompt and its labels.
#[derive(Clone, Debug, Serialize)]
pub struct Template {
    pub name: &'static str,
    pub version: u32,
    /// Surface form of each label, in the order True, False, Uncertain.
    pub labels: [&'static str; 3],
    wording: Wording,
    form: Form,
}

pub const TEMPLATE_NAMES: [&str; 2] = ["plain", "chat"];

pub fn plain() -> Template {
    Template {
        name: "plain",
        version: 1,
        labels: [" True", " False", " Uncertain"],
        wording: WORDING,
        form: Form::Plain {
            answer_cue: "Label:",
        },
    }
}

/// The chat template of a model, from its jinja source.
pub fn chat(jinja: &str) -> Result<Template> {
    let t = Template {
        name: "chat",
        version: 1,
        labels: ["True", "False", "Uncertain"],
        wording: WORDING,
        form: Form::Chat {
            jinja: jinja.to_string(),
        },
    };
    // Fail now, not half way through a run.
    t.render_chat(&[("user", "x".into())])
        .context("the model's chat template does not render")?;
    Ok(t)
}

impl Template {
    pub fn record(&self) -> TemplateRecord {
        record_of(self.name, self)
    }

    pub fn id(&self) -> Id {
        self.record().id()
    }

    pub fn label_text(&self, label: Label) -> &'static str {
        self.labels[label_index(label)]
    }

    /// Step 1: the premises and the question.
    pub fn step1(&self, ep: &Episode) -> Result<String> {
        let turn = self.turn(self.wording.intro, &ep.premises, ep);
        match &self.form {
            Form::Plain { answer_cue } => Ok(format!("{turn}{answer_cue}")),
            Form::Chat { .. } => self.render_chat(&[("user", turn)]),
        }
    }

    /// Step 2: step 1 answered with the model's own label, the revised premises, the question.
    pub fn step2(&self, ep: &Episode, pred0: Label, after: &[Premise]) -> Result<String> {
        let first = self.turn(self.wording.intro, &ep.premises, ep);
        let second = self.turn(self.wording.revised_intro, after, ep);
        let answer = self.label_text(pred0);
        match &self.form {
            Form::Plain { answer_cue } => Ok(format!(
                "{first}{answer_cue}{answer}\n\n{second}{answer_cue}"
            )),
            Form::Chat { .. } => self.render_chat(&[
                ("user", first),
                ("assistant", answer.to_string()),
                ("user", second),
            ]),
        }
    }

    /// One question turn: premises, the world's rule, the statement.
    fn turn(&self, intro: &str, premises: &[Premise], ep: &Episode) -> String {
        let rule = match ep.semantics {
            Semantics::ClosedWorld => self.wording.closed_world_rule,
            Semantics::OpenWorld
            | Semantics::FirstOrder
            | Semantics::Commonsense
            | Semantics::Classical
            | Semantics::DatasetGold => self.wording.open_world_rule,
        };
        let texts = premises.iter().map(|p| p.text.as_str());
        turn_text(intro, texts, rule, self.wording.question, &ep.query.text)
    }

    fn render_chat(&self, turns: &[(&str, String)]) -> Result<String> {
        let Form::Chat { jinja } = &self.form else {
            unreachable!("render_chat on a chat template")
        };
        let mut env = minijinja::Environment::new();
        env.add_template("chat", jinja).context("chat template")?;
        let messages: Vec<_> = turns
            .iter()
            .map(|(role, content)| minijinja::context! { role => *role, content => content })
            .collect();
        let text = env
            .get_template("chat")?
            .render(minijinja::context! { messages => messages, add_generation_prompt => true })
            .context("rendering the chat template")?;
        Ok(text)
    }
}

/// Numbered premises, a blank line, the world's rule (if any), the question line, the statement.
fn turn_text<'a>(
    intro: &str,
    premises: impl Iterator<Item = &'a str>,
    rule: &str,
    question: &str,
    statement: &str,
) -> String {
    let mut s = String::from(intro);
    for (i, p) in premises.enumerate() {
        s.push_str(&format!("{}. {p}\n", i + 1));
    }
    s.push('\n');
    s.push_str(rule);
    s.push_str(question);
    s.push_str(statement);
    s.push('\n');
    s
}

pub fn label_index(label: Label) -> usize {
    match label {
        Label::True => 0,
        Label::False => 1,
        Label::Uncertain => 2,
    }
}

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

/// A multiple-choice template by name.
pub fn choice_template(name: &str) -> Option<ChoiceTemplate> {
    match name {
        "beliefr-letters" => Some(beliefr(LabelForm::Letters)),
        "beliefr-text" => Some(beliefr(LabelForm::Text)),
        _ => None,
    }
}

/// A template's record: its name and the canonical JSON of everything that decides its text.
fn record_of(name: &str, definition: &impl Serialize) -> TemplateRecord {
    TemplateRecord {
        name: name.to_string(),
        definition: String::from_utf8(canonical(definition)).expect("JSON is UTF-8"),
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

    pub fn id(&self) -> Id {
        self.record().id()
    }

    /// The prompt of a question. Options lose a final period, as the dataset's own `questions`
    /// cells print them.
    pub fn prompt(&self, q: &crate::questions::Question) -> String {
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
    pub fn labels(&self, q: &crate::questions::Question) -> Vec<String> {
        (0..q.options.len())
            .map(|i| match self.form {
                LabelForm::Letters => format!(" {}", letter(i)),
                LabelForm::Text => format!(" {}", q.options[i].text),
            })
            .collect()
    }
}

/// A template that turns a single question into a prompt and the label texts of its options.
pub trait QuestionTemplate {
    fn record(&self) -> TemplateRecord;
    fn id(&self) -> Id {
        self.record().id()
    }
    fn prompt(&self, q: &crate::questions::Question) -> Result<String>;
    /// The label texts of a question's options, in option order.
    fn labels(&self, q: &crate::questions::Question) -> Result<Vec<String>>;
}

impl QuestionTemplate for ChoiceTemplate {
    fn record(&self) -> TemplateRecord {
        ChoiceTemplate::record(self)
    }
    fn prompt(&self, q: &crate::questions::Question) -> Result<String> {
        Ok(ChoiceTemplate::prompt(self, q))
    }
    fn labels(&self, q: &crate::questions::Question) -> Result<Vec<String>> {
        Ok(ChoiceTemplate::labels(self, q))
    }
}

/// DeltaLogic's plain wording for a single True/False(/Uncertain) question about a statement
/// (RobustLR): numbered premises, the world's rule, the question, `Label:`; labels ` True`,
/// ` False` (and ` Uncertain` when it is an option), as the `plain` template scores them. A
/// question with all three options gets exactly the `plain` step-1 prompt of the same premises
/// and statement, so the two share every score; a True/False question shares its prefix up to
/// the question line.
#[derive(Clone, Debug, Serialize)]
pub struct StatementTemplate {
    pub name: &'static str,
    pub version: u32,
    labels: [&'static str; 3],
    wording: Wording,
    /// The question line when the options are True and False only.
    binary_question: &'static str,
    answer_cue: &'static str,
}

pub const STATEMENT_TEMPLATE_NAME: &str = "plain-question";

pub fn plain_question() -> StatementTemplate {
    let plain = plain();
    let Form::Plain { answer_cue } = plain.form else {
        unreachable!("the plain template is plain text")
    };
    StatementTemplate {
        name: STATEMENT_TEMPLATE_NAME,
        version: 1,
        labels: plain.labels,
        wording: plain.wording,
        binary_question: "Question: Based only on the premises, is the following statement True or False?\nStatement: ",
        answer_cue,
    }
}

impl StatementTemplate {
    /// Whether the options are True, False (false) or True, False, Uncertain (true), in that
    /// order: the only lists the question line can name.
    fn three_way(q: &crate::questions::Question) -> Result<bool> {
        let labels: Vec<Label> = q.options.iter().map(|o| o.label).collect();
        match labels.as_slice() {
            [Label::True, Label::False] => Ok(false),
            [Label::True, Label::False, Label::Uncertain] => Ok(true),
            _ => bail!(
                "template `{}` asks True/False(/Uncertain) questions; question `{}` has options {labels:?}",
                STATEMENT_TEMPLATE_NAME,
                q.query
            ),
        }
    }
}

impl QuestionTemplate for StatementTemplate {
    fn record(&self) -> TemplateRecord {
        record_of(self.name, self)
    }

    fn prompt(&self, q: &crate::questions::Question) -> Result<String> {
        let three = Self::three_way(q)?;
        let w = &self.wording;
        // Without an Uncertain option the open-world rule (answer Uncertain when ...) would
        // name an answer that cannot be given; closed world keeps its rule either way.
        let rule = match q.semantics {
            Semantics::ClosedWorld => w.closed_world_rule,
            _ if three => w.open_world_rule,
            _ => "",
        };
        let question = if three {
            w.question
        } else {
            self.binary_question
        };
        let texts = q.premises.iter().map(String::as_str);
        let turn = turn_text(w.intro, texts, rule, question, &q.query);
        Ok(format!("{turn}{}", self.answer_cue))
    }

    fn labels(&self, q: &crate::questions::Question) -> Result<Vec<String>> {
        Self::three_way(q)?;
        Ok(q.options
            .iter()
            .map(|o| self.labels[label_index(o.label)].to_string())
            .collect())
    }
}

/// Every question template's name.
pub const QUESTION_TEMPLATE_NAMES: [&str; 3] = [
    CHOICE_TEMPLATE_NAMES[0],
    CHOICE_TEMPLATE_NAMES[1],
    STATEMENT_TEMPLATE_NAME,
];

/// A question template by name.
pub fn question_template(name: &str) -> Option<Box<dyn QuestionTemplate>> {
    if name == STATEMENT_TEMPLATE_NAME {
        return Some(Box::new(plain_question()));
    }
    choice_template(name).map(|t| Box::new(t) as Box<dyn QuestionTemplate>)
}

/// The template `score` uses for a question set of `benchmark` when none is named: Belief-R's
/// own prompt for Belief-R, DeltaLogic's plain wording for True/False benchmarks (RobustLR).
pub fn default_question_template(benchmark: &str) -> &'static str {
    if benchmark == crate::questions::beliefr::BENCHMARK {
        CHOICE_TEMPLATE_NAMES[0]
    } else {
        STATEMENT_TEMPLATE_NAME
    }
}
