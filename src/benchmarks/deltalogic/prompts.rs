//! DeltaLogic's prompt templates. An episode gives two prompt states: step 1 = P and q; step 2 =
//! the dialogue continued with the model's own step-1 label, then P', then q again. Templates
//! are versioned and content-hashed: any change to the text they produce changes their id, and
//! so every score key and result that used them.
//!
//! - `plain`: the paper's form, premises and question ending in `Label:`; labels ` True`,
//!   ` False`, ` Uncertain` (with their separating space).
//! - `chat`: the same question as a user turn in the model's own chat template (GGUF
//!   `tokenizer.chat_template` or HF `tokenizer_config.json`), rendered with minijinja (a
//!   harmony template, gpt-oss's, as openai-harmony renders it: `benchmarks::harmony`); the
//!   model's step-1 label becomes its assistant turn. Labels `True`, `False`, `Uncertain` open
//!   the assistant turn.
//! - `dialogue`: the paper's four-turn episode (its appendix) in the plain form: (i) answer from
//!   P (the `plain` step-1 prompt, so its scores are shared); (ii) the model explains in one
//!   sentence which premise matters most: its own greedy generation, cut at the first `.` or
//!   line break, at most 48 tokens, cached like a score; (iii) the revised premises; (iv) asked
//!   whether its answer should change, it answers again, scored with the labels.

use super::episode::Episode;
use crate::benchmarks::prompts::{
    label_index, record_of, turn_text, TemplateRecord, Wording, ANSWER_CUE, PLAIN_LABELS, WORDING,
};
use crate::benchmarks::Decoding;
use crate::logic::Premise;
use crate::logic::{Label, Semantics};
use anyhow::{bail, Context, Result};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
enum Form {
    /// Plain text: `Label:` cues the answer, the revision follows as more text.
    Plain { answer_cue: &'static str },
    /// The model's chat template (jinja source), user and assistant turns.
    Chat { jinja: String },
    /// Plain text with the model's own explanation between the two answers.
    Dialogue {
        answer_cue: &'static str,
        explain: Explain,
    },
}

/// How the dialogue asks for the explanation, and how it is decoded.
#[derive(Clone, Debug, Serialize)]
struct Explain {
    ask: &'static str,
    cue: &'static str,
    max_tokens: u32,
    stop: [&'static str; 2],
    /// Before the revised premises: the model is to say whether its answer should change.
    revise: &'static str,
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

pub const TEMPLATE_NAMES: [&str; 3] = ["plain", "chat", "dialogue"];

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

/// The four-turn episode: `plain` with the model's one-sentence explanation after its first
/// answer.
pub fn dialogue() -> Template {
    Template {
        name: "dialogue",
        version: 1,
        labels: PLAIN_LABELS,
        wording: WORDING,
        form: Form::Dialogue {
            answer_cue: ANSWER_CUE,
            explain: Explain {
                ask: "In one sentence, which premise matters most for this answer?\n",
                cue: "Explanation:",
                max_tokens: 48,
                stop: [".", "\n"],
                revise: "Say whether your answer should change, and answer again.\n",
            },
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

    /// Whether the model explains its first answer before the revision (a generated turn
    /// between the two scored ones).
    pub fn explains(&self) -> bool {
        matches!(self.form, Form::Dialogue { .. })
    }

    /// Step 1: the premises and the question.
    pub fn step1(&self, ep: &Episode) -> Result<String> {
        let turn = self.turn(self.wording.intro, &ep.premises, ep);
        match &self.form {
            Form::Plain { answer_cue } | Form::Dialogue { answer_cue, .. } => {
                Ok(format!("{turn}{answer_cue}"))
            }
            Form::Chat { .. } => self.render_chat(&[("user", turn)]),
        }
    }

    /// The dialogue's explanation request: step 1 answered with the model's own label, then the
    /// question for the explanation; and how it is decoded.
    pub fn explanation(&self, ep: &Episode, pred0: Label) -> Result<(String, Decoding)> {
        let Form::Dialogue { explain, .. } = &self.form else {
            bail!("the `{}` template asks for no explanation", self.name)
        };
        let prompt = format!(
            "{}{}\n{}{}",
            self.step1(ep)?,
            self.label_text(pred0),
            explain.ask,
            explain.cue
        );
        let decoding = Decoding {
            max_tokens: explain.max_tokens,
            stop: explain.stop.iter().map(|s| s.to_string()).collect(),
        };
        Ok((prompt, decoding))
    }

    /// Step 2: step 1 answered with the model's own label (and, in the dialogue, its
    /// explanation), the revised premises, the question.
    pub fn step2(
        &self,
        ep: &Episode,
        pred0: Label,
        explanation: Option<&str>,
        after: &[Premise],
    ) -> Result<String> {
        let first = self.turn(self.wording.intro, &ep.premises, ep);
        let second = self.turn(self.wording.revised_intro, after, ep);
        let answer = self.label_text(pred0);
        match (&self.form, explanation) {
            (Form::Plain { answer_cue }, None) => Ok(format!(
                "{first}{answer_cue}{answer}\n\n{second}{answer_cue}"
            )),
            (Form::Chat { .. }, None) => self.render_chat(&[
                ("user", first),
                ("assistant", answer.to_string()),
                ("user", second),
            ]),
            (
                Form::Dialogue {
                    answer_cue,
                    explain,
                },
                Some(why),
            ) => Ok(format!(
                "{} {}.\n\n{second}{}{answer_cue}",
                self.explanation(ep, pred0)?.0,
                why.trim(),
                explain.revise
            )),
            _ => bail!(
                "the `{}` template {} an explanation",
                self.name,
                if explanation.is_some() {
                    "takes no"
                } else {
                    "needs"
                }
            ),
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
        crate::benchmarks::prompts::render_chat(jinja, turns)
    }
}
