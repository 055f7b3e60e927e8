//! Issue 45: gpt-oss's chat format, *harmony*, rendered as openai-harmony renders a conversation
//! (`render_conversation_for_completion`; checked against it in `tests/suite/harmony.rs`).
//!
//! gpt-oss's own jinja template cannot be rendered as it stands: it writes today's date into
//! the system message (`strftime_now`), so the same prompt would change from one day to the
//! next while its template id stays the same. The chat form renders it here instead, as
//! openai-harmony does with a system message without a date:
//!
//! - the system message with harmony's defaults: the model identity, knowledge cutoff,
//!   `Reasoning: medium` and the valid channels;
//! - a `system` turn as the developer message's instructions (`# Instructions`), as gpt-oss's
//!   template and openai-harmony's `DeveloperContent` put it;
//! - `user` turns as user messages, earlier `assistant` turns as messages on the `final` channel;
//! - then the assistant's turn opened **on the final channel**
//!   (`<|start|>assistant<|channel|>final<|message|>`), where openai-harmony stops at
//!   `<|start|>assistant` and leaves the model to choose a channel. DeltaLogic scores and reads
//!   the answer itself: a label scored after the bare header would be scored as a channel's
//!   name. So the model answers without an analysis message, as an earlier assistant turn of
//!   the same conversation reads.
//!
//! The control tokens are the template's markup; the messages' content is plain text, in which
//! `<|end|>` is only text (`model::tokenize`'s module docs).

use anyhow::{bail, Result};

use crate::model::tokenize::{markup, plain};

/// openai-harmony's system message for `SystemContent.new()` (no date, no tools).
const SYSTEM: &str = "You are ChatGPT, a large language model trained by OpenAI.\n\
Knowledge cutoff: 2024-06\n\n\
Reasoning: medium\n\n\
# Valid channels: analysis, commentary, final. Channel must be included for every message.";

/// Whether a chat template (jinja source) writes harmony: its messages open with `<|start|>`,
/// their content follows `<|message|>`, and assistant messages name a `<|channel|>`. No other
/// chat format uses these control tokens.
pub fn is_harmony(jinja: &str) -> bool {
    ["<|start|>", "<|message|>", "<|channel|>"]
        .iter()
        .all(|t| jinja.contains(t))
}

/// `turns` (role, content) as a harmony conversation, ending with the assistant's turn opened on
/// the final channel (module docs). A `system` turn is taken only first; any other role is
/// refused by name.
pub fn render(turns: &[(&str, String)]) -> Result<String> {
    let mut out = markup(&format!("<|start|>system<|message|>{SYSTEM}<|end|>"));
    for (i, (role, content)) in turns.iter().enumerate() {
        let header = match *role {
            "system" if i == 0 => "<|start|>developer<|message|># Instructions\n\n",
            "user" => "<|start|>user<|message|>",
            "assistant" => "<|start|>assistant<|channel|>final<|message|>",
            other => bail!(
                "harmony chat format (gpt-oss): turn {i} has role {other:?}; only a first \
                 \"system\" turn, \"user\" and \"assistant\" turns are rendered"
            ),
        };
        out.push_str(&markup(header));
        out.push_str(&plain(content));
        out.push_str(&markup("<|end|>"));
    }
    out.push_str(&markup("<|start|>assistant<|channel|>final<|message|>"));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_template_with_all_three_harmony_tokens_is_harmony() {
        assert!(is_harmony(
            "{{- \"<|start|>system<|message|>\" }}<|channel|>final"
        ));
        assert!(!is_harmony("<|im_start|>{{ m.content }}<|im_end|>"));
        assert!(!is_harmony("<|start|>user<|message|>{{ content }}<|end|>"));
    }

    #[test]
    fn a_late_system_turn_and_an_unknown_role_are_refused_by_name() {
        let late = render(&[("user", "a".into()), ("system", "b".into())]);
        assert!(format!("{:#}", late.unwrap_err()).contains("turn 1 has role \"system\""));
        let tool = render(&[("tool", "a".into())]);
        assert!(format!("{:#}", tool.unwrap_err()).contains("\"tool\""));
    }
}
