//! Redaction of a server's words before they are printed: an error quotes what the server said
//! (a 401's body, a non-JSON answer, a redirect's target), and a hostile or careless server may
//! echo the key it was sent ("Incorrect API key provided: Bearer sk-…"). The key itself, the word
//! after `Bearer` or `Basic`, and anything shaped like an API token are replaced.

/// What a secret is replaced with, and the word inside it.
pub const REDACTED: &str = "[redacted]";
const REDACTED_WORD: &str = "redacted";

/// Prefixes of the API tokens in use (OpenAI, Anthropic-style `sk-`, Hugging Face, GitHub).
const TOKEN_PREFIXES: [&str; 4] = ["sk-", "hf_", "ghp_", "github_pat_"];

/// An opaque run of letters and digits this long is taken for a token.
const OPAQUE: usize = 32;

/// `text` with `key` (when given), authorisation schemes' credentials and token-shaped words
/// replaced by [`REDACTED`].
pub fn redact(text: &str, key: Option<&str>) -> String {
    let text = match key.filter(|k| !k.is_empty()) {
        Some(k) => text.replace(k, REDACTED),
        None => text.to_string(),
    };
    let mut out = String::with_capacity(text.len());
    let mut after_scheme = false;
    for (word, is_word) in words(&text) {
        if !is_word {
            out.push_str(word);
            continue;
        }
        let secret = after_scheme || token_like(word);
        after_scheme = ["bearer", "basic"]
            .iter()
            .any(|s| word.eq_ignore_ascii_case(s));
        out.push_str(if secret && word != REDACTED_WORD {
            REDACTED
        } else {
            word
        });
    }
    out
}

/// Whether `word` looks like an API token: a known prefix, or a long run mixing letters and
/// digits (a hex digest in a server's words is taken too: better one hash too many hidden).
fn token_like(word: &str) -> bool {
    let prefixed = TOKEN_PREFIXES
        .iter()
        .any(|p| word.len() > p.len() + 4 && word.starts_with(p));
    let opaque = word.len() >= OPAQUE
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic());
    prefixed || opaque
}

/// Characters a token is made of (base64, base64url, hex, and the prefixes' `-` and `_`).
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '/' | '=' | '~')
}

/// `text` cut into runs of token characters (`true`) and the runs between them (`false`).
fn words(text: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let kind = token_char(first);
        let end = rest
            .char_indices()
            .find(|&(_, c)| token_char(c) != kind)
            .map_or(rest.len(), |(i, _)| i);
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some((word, kind))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_tokens_are_taken_out_of_a_servers_words() {
        let key = "k3y-with-no-known-shape";
        let said = format!(
            "{{\"error\": \"Incorrect API key provided: Bearer {key}. Also Basic dXNlcjpwYXNz and \
             sk-proj-abcdef123456 and hf_abcdefghij; digest 0123456789abcdef0123456789abcdef0\"}}"
        );
        let clean = redact(&said, Some(key));
        for secret in [
            key,
            "dXNlcjpwYXNz",
            "sk-proj-abcdef123456",
            "hf_abcdefghij",
            "0123456789abcdef0123456789abcdef0",
        ] {
            assert!(!clean.contains(secret), "{secret} in {clean}");
        }
        assert!(
            clean.contains("Incorrect API key provided: Bearer [redacted]."),
            "{clean}"
        );
        // Ordinary words, numbers and short ids are kept.
        let plain = "HTTP 500: model byte has 3 choices at offset 42 (task-7)";
        assert_eq!(redact(plain, Some(key)), plain);
        assert_eq!(redact(plain, None), plain);
    }
}
