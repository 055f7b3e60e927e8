//! The completions API's requests and the checks on its answers. Scoring follows lm-evaluation
//! harness's `local-completions` (prompt = context + label, `echo`, `logprobs`, one greedy token);
//! what comes back is read only if it is fully consistent, else refused with what disagreed.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// The lowest log-prob vLLM reports: it clamps lower ones to this, so the value is not the
/// model's and is refused.
const CLAMPED: f64 = -9999.0;

/// The request whose echoed log-probs score `label` after `context`.
pub fn score_request(context: &str, label: &str) -> Value {
    json!({
        "prompt": format!("{context}{label}"),
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": 1,
        "echo": true,
    })
}

/// A greedy completion of at most `max_tokens` tokens, stopping at any of `stop`.
pub fn greedy_request(prompt: &str, max_tokens: u32, stop: &[String]) -> Value {
    let mut body = json!({
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "logprobs": 1,
        "echo": false,
    });
    if !stop.is_empty() {
        body["stop"] = json!(stop);
    }
    body
}

/// A label's tokens (as the server's text pieces) and their log-probs, and the whole prompt's
/// echo they were read from (what a cross-check of the answer compares).
#[derive(Clone, Debug, PartialEq)]
pub struct Echoed {
    pub tokens: Vec<String>,
    pub logprobs: Vec<f32>,
    /// The prompt's tokens as echoed, after a leading start token if there was one: they spell
    /// context + label, the label's tokens last.
    pub prompt_tokens: Vec<String>,
    /// Their log-probs as the server gave them (the first has none; the label's are checked).
    pub prompt_logprobs: Vec<Option<f64>>,
}

/// Why a completion ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    EndToken,
    StopString,
    MaxTokens,
}

/// A greedy completion as the server gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Completed {
    pub text: String,
    pub tokens: Vec<String>,
    pub logprobs: Vec<f32>,
    pub finish: Finish,
}

/// The one choice of an answer and its `logprobs` lists, of equal lengths.
struct Choice<'a> {
    choice: &'a Value,
    tokens: Vec<&'a str>,
    logprobs: Vec<Option<f64>>,
    offsets: Vec<u64>,
}

fn choice<'a>(url: &str, json: &'a Value) -> Result<Choice<'a>> {
    let choices = json["choices"]
        .as_array()
        .with_context(|| format!("{url}: the answer has no `choices` list"))?;
    if choices.len() != 1 {
        bail!(
            "{url}: the answer has {} choices, expected 1",
            choices.len()
        );
    }
    let choice = &choices[0];
    let lp = &choice["logprobs"];
    if !lp.is_object() {
        bail!("{url}: the answer has no `logprobs` (the server does not return log-probs)");
    }
    let list = |name: &str| {
        lp[name]
            .as_array()
            .with_context(|| format!("{url}: the answer's logprobs have no `{name}` list"))
    };
    let tokens = list("tokens")?
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_str()
                .with_context(|| format!("{url}: token {i} is {t}, not a string"))
        })
        .collect::<Result<Vec<_>>>()?;
    let logprobs = list("token_logprobs")?
        .iter()
        .enumerate()
        .map(|(i, x)| match x {
            Value::Null => Ok(None),
            _ => x
                .as_f64()
                .map(Some)
                .with_context(|| format!("{url}: the log-prob of token {i} is {x}, not a number")),
        })
        .collect::<Result<Vec<_>>>()?;
    let offsets = match lp.get("text_offset") {
        Some(_) => list("text_offset")?
            .iter()
            .enumerate()
            .map(|(i, o)| {
                o.as_u64()
                    .with_context(|| format!("{url}: the offset of token {i} is {o}"))
            })
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    if logprobs.len() != tokens.len() || (!offsets.is_empty() && offsets.len() != tokens.len()) {
        bail!(
            "{url}: the answer's logprobs lists differ in length ({} tokens, {} log-probs, {} \
             offsets)",
            tokens.len(),
            logprobs.len(),
            offsets.len()
        );
    }
    Ok(Choice {
        choice,
        tokens,
        logprobs,
        offsets,
    })
}

/// A log-prob the server gave for token `i`, refused unless it is a real one.
pub fn logprob(url: &str, x: Option<f64>, i: usize, token: &str) -> Result<f32> {
    match x {
        Some(x) if x.is_finite() && x <= 0.0 && x > CLAMPED => Ok(x as f32),
        Some(x) => bail!("{url}: token {i} ({token:?}) has the log-prob {x}, which no model gives"),
        None => bail!("{url}: token {i} ({token:?}) has no log-prob"),
    }
}

/// Reads the echoed log-probs of `label` after `context` from the answer to
/// [`score_request`]. The prompt's tokens must spell `context + label` exactly (after at most one
/// leading start token without a log-prob, which servers add for some models), the offsets must
/// be those of the tokens, and a token must begin exactly where the label does: a boundary
/// inside a token leaves the label's tokens unknown, and is refused rather than guessed.
pub fn read_score(url: &str, json: &Value, context: &str, label: &str) -> Result<Echoed> {
    let c = choice(url, json)?;
    let n = json["usage"]["prompt_tokens"]
        .as_u64()
        .with_context(|| format!("{url}: the answer has no usage.prompt_tokens"))?
        as usize;
    // The prompt's tokens, then at most the one token asked for.
    if c.tokens.len() < n || c.tokens.len() > n + 1 {
        bail!(
            "{url}: {} tokens echoed for a prompt of {n} tokens and one generated token",
            c.tokens.len()
        );
    }
    if c.offsets.is_empty() {
        bail!("{url}: the answer's logprobs have no `text_offset` list");
    }
    let prompt = format!("{context}{label}");
    let spelled = |from: usize| c.tokens[from..n].concat() == prompt;
    let lead = if spelled(0) {
        0
    } else if n > 0 && c.logprobs[0].is_none() && spelled(1) {
        1
    } else {
        let echoed = c.tokens[..n].concat();
        let at = echoed
            .chars()
            .zip(prompt.chars())
            .take_while(|(a, b)| a == b)
            .count();
        bail!(
            "{url}: the echoed tokens do not spell the prompt: they differ from character {at} \
             (echoed {:?}, prompt {:?})",
            echoed.chars().skip(at).take(20).collect::<String>(),
            prompt.chars().skip(at).take(20).collect::<String>()
        );
    };
    // Offsets count characters (Python's), from the first token of the prompt.
    let mut at = 0u64;
    let mut first_label = None;
    let context_chars = context.chars().count() as u64;
    for i in lead..n {
        let offset = c.offsets[i].checked_sub(c.offsets[lead]).with_context(|| {
            format!(
                "{url}: token {i}'s offset {} precedes the prompt's",
                c.offsets[i]
            )
        })?;
        if offset != at {
            bail!(
                "{url}: token {i} ({:?}) is at offset {offset}, but the tokens before it spell {at} \
                 characters",
                c.tokens[i]
            );
        }
        if at == context_chars && first_label.is_none() {
            first_label = Some(i);
        }
        let len = c.tokens[i].chars().count() as u64;
        if at < context_chars && at + len > context_chars {
            bail!(
                "{url}: the boundary between the context and the label {label:?} falls inside \
                 token {i} ({:?}): the label's tokens cannot be told apart from the context's",
                c.tokens[i]
            );
        }
        at += len;
    }
    let Some(first) = first_label.filter(|&i| i < n) else {
        bail!("{url}: the label {label:?} has no tokens in the echo");
    };
    if first == lead {
        bail!("{url}: nothing precedes the label {label:?}: an empty context conditions nothing");
    }
    let logprobs = (first..n)
        .map(|i| logprob(url, c.logprobs[i], i, c.tokens[i]))
        .collect::<Result<Vec<_>>>()?;
    Ok(Echoed {
        tokens: c.tokens[first..n].iter().map(|t| t.to_string()).collect(),
        logprobs,
        prompt_tokens: c.tokens[lead..n].iter().map(|t| t.to_string()).collect(),
        prompt_logprobs: c.logprobs[lead..n].to_vec(),
    })
}

/// Reads the answer to [`greedy_request`]: its text, tokens, their log-probs and why it ended.
/// The count of tokens must agree with the reason (`length`: exactly `max_tokens`), the text must
/// hold no stop string, and a stop must say whether a stop string or the end token made it.
pub fn read_greedy(url: &str, json: &Value, max_tokens: u32, stop: &[String]) -> Result<Completed> {
    let c = choice(url, json)?;
    let text = c.choice["text"]
        .as_str()
        .with_context(|| format!("{url}: the answer's choice has no `text`"))?;
    let n = c.tokens.len();
    if n > max_tokens as usize {
        bail!("{url}: {n} tokens generated, more than the {max_tokens} asked for");
    }
    let logprobs = (0..n)
        .map(|i| logprob(url, c.logprobs[i], i, c.tokens[i]))
        .collect::<Result<Vec<_>>>()?;
    if let Some(s) = stop.iter().find(|s| text.contains(s.as_str())) {
        bail!("{url}: the generated text holds the stop string {s:?}, where it should have ended");
    }
    let finish = match c.choice["finish_reason"].as_str() {
        Some("length") if n == max_tokens as usize => Finish::MaxTokens,
        Some("length") => {
            bail!("{url}: the generation ended for its length after {n} tokens, not {max_tokens}")
        }
        Some("stop") => match c.choice.get("stop_reason") {
            Some(Value::String(s)) if stop.contains(s) => Finish::StopString,
            Some(Value::String(s)) => bail!("{url}: stopped by {s:?}, which was not asked for"),
            Some(Value::Null) => Finish::EndToken,
            None if stop.is_empty() => Finish::EndToken,
            other => bail!(
                "{url}: the answer does not say whether a stop string or the end token ended the \
                 generation (stop_reason {other:?})"
            ),
        },
        other => bail!("{url}: the generation ended with finish_reason {other:?}"),
    };
    Ok(Completed {
        text: text.to_string(),
        tokens: c.tokens.iter().map(|t| t.to_string()).collect(),
        logprobs,
        finish,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer to a score request echoing `tokens` with `logprobs`, `prompt` of them the
    /// prompt's, offsets counted from the tokens.
    fn echo(tokens: &[&str], logprobs: &[Option<f64>], prompt: usize) -> Value {
        let mut at = 0;
        let offsets: Vec<u64> = tokens
            .iter()
            .map(|t| {
                let o = at;
                at += t.chars().count() as u64;
                o
            })
            .collect();
        json!({
            "choices": [{"text": "", "logprobs": {
                "tokens": tokens, "token_logprobs": logprobs, "text_offset": offsets}}],
            "usage": {"prompt_tokens": prompt},
        })
    }

    #[test]
    fn the_label_is_cut_at_its_first_token() {
        let json = echo(
            &["The", " sky", " is", " blue", "."],
            &[None, Some(-5.0), Some(-1.5), Some(-0.25), Some(-0.5)],
            4,
        );
        let e = read_score("u", &json, "The sky is", " blue").unwrap();
        assert_eq!(e.tokens, [" blue"]);
        assert_eq!(e.logprobs, [-0.25]);
        let e = read_score("u", &json, "The sky", " is blue").unwrap();
        assert_eq!(e.logprobs, [-1.5, -0.25]);
    }

    #[test]
    fn a_start_token_without_log_prob_is_allowed() {
        let json = echo(&["<s>", "The", " sky"], &[None, Some(-3.0), Some(-2.0)], 3);
        let e = read_score("u", &json, "The", " sky").unwrap();
        assert_eq!(e.logprobs, [-2.0]);
    }

    #[test]
    fn inconsistent_answers_are_refused() {
        let ok = [None, Some(-1.0), Some(-2.0)];
        // A boundary inside a token.
        let json = echo(&["The", " sky", "line"], &ok, 3);
        let e = read_score("u", &json, "The sk", "yline").unwrap_err();
        assert!(e.to_string().contains("inside token 1"), "{e}");
        // Tokens that do not spell the prompt.
        let e = read_score("u", &json, "The", " sea line").unwrap_err();
        assert!(e.to_string().contains("do not spell"), "{e}");
        // NaN, null, clamped and positive log-probs.
        for bad in [Some(f64::NAN), None, Some(-9999.0), Some(0.5)] {
            let json = echo(&["The", " sky"], &[None, bad], 2);
            assert!(read_score("u", &json, "The", " sky").is_err(), "{bad:?}");
        }
        // Counts: more tokens than the prompt's and one generated.
        let json = echo(
            &["The", " sky", "a", "b"],
            &[None, Some(-1.0), Some(-1.0), Some(-1.0)],
            2,
        );
        assert!(read_score("u", &json, "The", " sky").is_err());
        // Offsets that disagree with the tokens.
        let mut json = echo(&["The", " sky"], &[None, Some(-1.0)], 2);
        json["choices"][0]["logprobs"]["text_offset"] = json!([0, 4]);
        let e = read_score("u", &json, "The", " sky").unwrap_err();
        assert!(e.to_string().contains("offset"), "{e}");
        // Lists of different lengths; no choices.
        let mut json = echo(&["The", " sky"], &[None, Some(-1.0)], 2);
        json["choices"][0]["logprobs"]["token_logprobs"] = json!([null]);
        assert!(read_score("u", &json, "The", " sky").is_err());
        assert!(read_score("u", &json!({"choices": []}), "The", " sky").is_err());
        // An empty context.
        let json = echo(&["The", " sky"], &[None, Some(-1.0)], 2);
        assert!(read_score("u", &json, "", "The sky").is_err());
    }

    fn greedy(text: &str, n: usize, finish: &str, stop_reason: Option<Value>) -> Value {
        let mut choice = json!({"text": text, "finish_reason": finish, "logprobs": {
            "tokens": vec!["x"; n], "token_logprobs": vec![-0.5; n]}});
        if let Some(s) = stop_reason {
            choice["stop_reason"] = s;
        }
        json!({"choices": [choice]})
    }

    #[test]
    fn a_completion_says_why_it_ended() {
        let stop = ["\n".to_string()];
        let read = |json: &Value| read_greedy("u", json, 4, &stop);
        assert_eq!(
            read(&greedy("a b", 4, "length", None)).unwrap().finish,
            Finish::MaxTokens
        );
        assert_eq!(
            read(&greedy("a", 2, "stop", Some(json!("\n"))))
                .unwrap()
                .finish,
            Finish::StopString
        );
        assert_eq!(
            read(&greedy("a", 2, "stop", Some(Value::Null)))
                .unwrap()
                .finish,
            Finish::EndToken
        );
        // Ambiguous, inconsistent or unknown endings are refused.
        assert!(read(&greedy("a", 2, "stop", None)).is_err());
        assert!(read(&greedy("a", 3, "length", None)).is_err());
        assert!(read(&greedy("a", 5, "length", None)).is_err());
        assert!(read(&greedy("a\nb", 2, "stop", Some(json!("\n")))).is_err());
        assert!(read(&greedy("a", 2, "content_filter", None)).is_err());
        assert_eq!(
            read_greedy("u", &greedy("a", 2, "stop", None), 4, &[])
                .unwrap()
                .finish,
            Finish::EndToken
        );
    }
}
