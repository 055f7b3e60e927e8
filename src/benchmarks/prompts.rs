//! What every benchmark's prompts share: the stored form of a template ([`TemplateRecord`], whose
//! id every score key and result names), DeltaLogic's wording of a statement question (which the
//! `plain-question` template of `question` asks single questions in), and chat rendering.

use crate::logic::Label;
use crate::store::{canonical, Kind, Record};
use anyhow::{bail, Context, Result};
use serde::Serialize;

/// A prompt template as stored for audit: its name, version and full definition.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct TemplateRecord {
    pub name: String,
    /// Canonical JSON of everything that renders prompts and labels.
    pub definition: String,
}

impl Record for TemplateRecord {
    const KIND: Kind = Kind {
        table: "templates",
        context: "deltalogic 2026-11-21 prompt template v1",
        noun: "template",
    };
    fn content(&self) -> Vec<u8> {
        canonical(&(&self.name, &self.definition))
    }
}

/// The wording of DeltaLogic's statement questions (its `plain` and `chat` templates, and
/// `plain-question`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Wording {
    pub(crate) intro: &'static str,
    pub(crate) revised_intro: &'static str,
    pub(crate) open_world_rule: &'static str,
    pub(crate) closed_world_rule: &'static str,
    pub(crate) question: &'static str,
}

pub(crate) const WORDING: Wording = Wording {
    intro: "Premises:\n",
    revised_intro: "The premises have been revised. Revised premises:\n",
    open_world_rule: "Answer Uncertain when the premises settle neither the statement nor its negation.\n",
    closed_world_rule: "Closed world: anything that is not stated and cannot be derived from the premises is false.\n",
    question: "Question: Based only on the premises, is the following statement True, False, or Uncertain?\nStatement: ",
};

/// The labels of plain-text statement questions, in the order True, False, Uncertain (with
/// their separating space), and the cue that ends the prompt before them.
pub(crate) const PLAIN_LABELS: [&str; 3] = [" True", " False", " Uncertain"];
pub(crate) const ANSWER_CUE: &str = "Label:";

/// Numbered premises, a blank line, the world's rule (if any), the question line, the statement.
pub(crate) fn turn_text<'a>(
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

/// A template's record: its name and the canonical JSON of everything that decides its text.
pub(crate) fn record_of(name: &str, definition: &impl Serialize) -> TemplateRecord {
    TemplateRecord {
        name: name.to_string(),
        definition: String::from_utf8(canonical(definition)).expect("JSON is UTF-8"),
    }
}

/// `turns` (role, content) rendered with a model's chat template (jinja source), ending with the
/// assistant's generation prompt. The template's own text is marked as markup, where control
/// tokens are read; the messages' content is plain text, where `<|im_end|>` is only text
/// (`model::tokenize`'s module docs). Without the marks, the text is the template's own. A
/// harmony template (gpt-oss's) is rendered as openai-harmony renders it (`harmony`).
pub fn render_chat(jinja: &str, turns: &[(&str, String)]) -> Result<String> {
    if super::harmony::is_harmony(jinja) {
        return super::harmony::render(turns);
    }
    use crate::model::tokenize::{markup, plain, MARKUP_CLOSE, MARKUP_OPEN};
    /// Stands around a message's index where its content goes (a noncharacter, as the marks).
    const HOLD: char = '\u{FDD2}';
    let mut env = minijinja::Environment::new();
    env.add_template("chat", jinja).context("chat template")?;
    let render = |contents: &[String]| -> Result<String> {
        let messages: Vec<_> = turns
            .iter()
            .zip(contents)
            .map(|((role, _), content)| minijinja::context! { role => *role, content => content })
            .collect();
        env.get_template("chat")?
            .render(minijinja::context! { messages => messages, add_generation_prompt => true })
            .context("rendering the chat template")
    };
    let contents: Vec<String> = turns.iter().map(|(_, c)| plain(c).into_owned()).collect();
    // Rendered once with a stand-in for each content, spaced so that a template that trims its
    // content shows it: the template's own text is what lies between the stand-ins.
    let holders: Vec<String> = (0..turns.len())
        .map(|i| format!(" {HOLD}{i}{HOLD} "))
        .collect();
    let framed = render(&holders)?;
    let mut out = String::new();
    let mut rest = framed.as_str();
    while let Some(start) = rest.find(HOLD) {
        let end = start
            + HOLD.len_utf8()
            + rest[start + HOLD.len_utf8()..]
                .find(HOLD)
                .context("the chat template cuts a message's content")?;
        let index: usize = rest[start + HOLD.len_utf8()..end]
            .parse()
            .context("the chat template changes a message's content")?;
        let content = contents
            .get(index)
            .context("the chat template changes a message's content")?;
        // The spaces of the stand-in: kept, or trimmed by the template on either side.
        let (before, after) = (&rest[..start], &rest[end + HOLD.len_utf8()..]);
        let (lead, before) = match before.strip_suffix(' ') {
            Some(b) => (false, b),
            None => (true, before),
        };
        let (trail, after) = match after.strip_prefix(' ') {
            Some(a) => (false, a),
            None => (true, after),
        };
        if !before.is_empty() {
            out.push_str(&markup(before));
        }
        let mut content = content.as_str();
        if lead {
            content = content.trim_start();
        }
        if trail {
            content = content.trim_end();
        }
        out.push_str(content);
        rest = after;
    }
    if !rest.is_empty() {
        out.push_str(&markup(rest));
    }
    // The marked text must be the template's own text with the content in place.
    if render(&contents)? != out.replace([MARKUP_OPEN, MARKUP_CLOSE], "") {
        bail!(
            "the chat template transforms the messages' content in a way deltalogic cannot \
             follow, so their text could not be kept apart from the template's control tokens"
        );
    }
    Ok(out)
}
