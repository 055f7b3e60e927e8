//! Issue 45: gpt-oss's chat format (harmony) as openai-harmony renders it
//! (`fixtures/golden/harmony-openai.json`, written by scripts/harmony_goldens.py).

use deltalogic::benchmarks::prompts::render_chat;
use deltalogic::model::tokenize::{MARKUP_CLOSE, MARKUP_OPEN};
use serde_json::Value;

/// A chat template in harmony (the shape of gpt-oss's: it writes today's date, which
/// minijinja has no `strftime_now` for, so it renders only as harmony).
const HARMONY_JINJA: &str = "{{- \"<|start|>system<|message|>Current date: \" + \
     strftime_now(\"%Y-%m-%d\") + \"<|end|>\" }}{%- for m in messages %}<|start|>{{ m.role }}\
     <|channel|>final<|message|>{{ m.content }}<|end|>{%- endfor %}<|start|>assistant";

fn golden() -> Value {
    let path = crate::common::root().join("fixtures/golden/harmony-openai.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The golden's conversations as `render_chat` takes them.
fn conversations(g: &Value) -> Vec<(Vec<(String, String)>, &Value)> {
    g["conversations"]
        .as_array()
        .expect("conversations")
        .iter()
        .map(|c| {
            let turns = c["turns"]
                .as_array()
                .expect("turns")
                .iter()
                .map(|t| {
                    let s = |i: usize| t[i].as_str().expect("a string").to_string();
                    (s(0), s(1))
                })
                .collect();
            (turns, c)
        })
        .collect()
}

fn render(turns: &[(String, String)]) -> String {
    let turns: Vec<(&str, String)> = turns.iter().map(|(r, c)| (r.as_str(), c.clone())).collect();
    render_chat(HARMONY_JINJA, &turns).unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn a_harmony_template_renders_as_openai_harmony_with_the_final_channel_opened() {
    let g = golden();
    let opened = g["final_channel"]["text"].as_str().expect("final_channel");
    let all = conversations(&g);
    assert_eq!(all.len(), 4);
    for (turns, want) in all {
        let text = render(&turns);
        let bare: String = text
            .chars()
            .filter(|&c| c != MARKUP_OPEN && c != MARKUP_CLOSE)
            .collect();
        let harmony = want["text"].as_str().expect("text");
        assert_eq!(bare, format!("{harmony}{opened}"), "{turns:?}");
        // No date: the same prompt on any day.
        assert!(!bare.contains("Current date"));
    }
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn a_harmony_prompt_has_openai_harmonys_token_ids_and_none_from_the_content() {
    let tok = crate::tokenizer_golden::o200k_harmony();
    let g = golden();
    let ids = |v: &Value| -> Vec<u32> {
        v.as_array()
            .expect("ids")
            .iter()
            .map(|i| i.as_u64().expect("an id") as u32)
            .collect()
    };
    let opened = ids(&g["final_channel"]["tokens"]);
    for (turns, want) in conversations(&g) {
        let got = tok
            .encode_prompt(&render(&turns))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut expected = ids(&want["tokens"]);
        expected.extend(&opened);
        // The fourth conversation's content spells <|end|>, <|start|>, <|channel|> and
        // <|message|>: openai-harmony reads them as text, and so must the prompt.
        assert_eq!(got, expected, "{turns:?}");
    }
}
