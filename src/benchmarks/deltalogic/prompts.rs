//! DeltaLogic's prompt templates. An episode gives two prompt states: step 1 = P and q; step 2 =
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

use super::{Episode, Premise};
use crate::benchmarks::prompts::{
    label_index, record_of, turn_text, TemplateRecord, Wording, ANSWER_CUE, PLAIN_LABELS, WORDING,
};
use crate::logic::{Label, Semantics};
use anyhow::{Context, Result};
use serde::Serialize;

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
        labels: PLAIN_LABELS,
        wording: WORDING,
        form: Form::Plain {
            answer_cue: ANSWER_CUE,
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
