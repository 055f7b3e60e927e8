//! Served models: a model behind an OpenAI-compatible completions endpoint (vLLM, SGLang, TGI,
//! llama.cpp's server), asked over HTTP instead of computed here.
//!
//! The protocol is lm-evaluation-harness's `local-completions`: a label's log-probs are the
//! echoed prompt log-probs of context + label, found from the returned character offsets at the
//! context/label boundary ([`completions`]); a generation is a greedy completion. Nothing a server
//! answers is taken on faith: a response whose tokens do not spell the prompt, whose counts or
//! offsets disagree, or whose log-probs are not finite is refused, and a server is registered
//! only after a conformance probe ([`probe`]) shows that its echoed log-probs are those of its own
//! completions.

pub mod completions;
pub mod probe;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Attempts of one request before its error is reported: a 429, a 5xx or a transport failure
/// (refused connection, timeout) is retried after 0.5, 1, 2 and 4 s.
const ATTEMPTS: u32 = 5;

/// The longest a request may take: a long generation on a busy server, not a stalled one.
const TIMEOUT: Duration = Duration::from_secs(600);

/// An OpenAI-compatible API and the model asked through it. The API key, when there is one, is
/// read from the environment and never printed: errors name the URL only.
pub struct Endpoint {
    /// The API base as OpenAI clients take it (`http://host:8000/v1`), without a trailing `/`.
    base: String,
    /// The id the server serves the model under (`/v1/models`).
    model: String,
    key: Option<String>,
    agent: ureq::Agent,
    requests: AtomicU64,
}

impl Endpoint {
    /// An endpoint at `base` serving `model`; the API key, if any, is the value of the
    /// environment variable `api_key_env`.
    pub fn new(base: &str, model: &str, api_key_env: Option<&str>) -> Result<Endpoint> {
        let base = base.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("{base}: a served model's URL is an http:// or https:// API base (e.g. http://127.0.0.1:8000/v1)");
        }
        if model.is_empty() {
            bail!("{base}: an empty model id");
        }
        let key = match api_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                anyhow::anyhow!(
                    "the API key of {base} is to be read from the environment variable {var}, \
                     which is not set"
                )
            })?),
            None => None,
        };
        Ok(Endpoint {
            base: base.to_string(),
            model: model.to_string(),
            key,
            agent: ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(10))
                .timeout(TIMEOUT)
                .build(),
            requests: AtomicU64::new(0),
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// HTTP requests sent so far (retries included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The ids of the models the server serves (`GET /models`).
    pub fn served_models(&self) -> Result<Vec<String>> {
        let url = self.url("/models");
        let json = self.send(&url, None)?;
        json["data"]
            .as_array()
            .with_context(|| format!("{url}: no `data` list of models in the answer"))?
            .iter()
            .map(|m| {
                m["id"]
                    .as_str()
                    .map(str::to_string)
                    .with_context(|| format!("{url}: a model without an `id`"))
            })
            .collect()
    }

    /// `POST /completions` for the endpoint's model: `body` with the model id added.
    pub fn complete(&self, mut body: Value) -> Result<(String, Value)> {
        body["model"] = Value::String(self.model.clone());
        let url = self.url("/completions");
        let json = self.send(&url, Some(&body))?;
        Ok((url, json))
    }

    /// `POST /tokenize` (vLLM, SGLang): the prompt's token ids, or `None` when the server has no
    /// such route.
    pub fn tokenize(&self, prompt: &str) -> Result<Option<Vec<u64>>> {
        // vLLM serves it beside /v1, not under it.
        let root = self.base.strip_suffix("/v1").unwrap_or(&self.base);
        let url = format!("{root}/tokenize");
        let body = serde_json::json!({"model": self.model, "prompt": prompt});
        let json = match self.send_once(&url, Some(&body)) {
            Ok(json) => json,
            Err(Failure::Status(404 | 405, _)) => return Ok(None),
            Err(f) => return Err(f.into_error(&url)),
        };
        let tokens = json["tokens"]
            .as_array()
            .with_context(|| format!("{url}: no `tokens` list in the answer"))?;
        tokens
            .iter()
            .map(|t| {
                t.as_u64()
                    .with_context(|| format!("{url}: a token id {t} that is not a number"))
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// One request with bounded retries: a busy (429), failing (5xx) or unreachable server is
    /// asked again after a growing pause; any other refusal is final.
    fn send(&self, url: &str, body: Option<&Value>) -> Result<Value> {
        let mut pause = Duration::from_millis(500);
        for attempt in 1..=ATTEMPTS {
            match self.send_once(url, body) {
                Ok(json) => return Ok(json),
                Err(f) if f.retryable() && attempt < ATTEMPTS => {
                    std::thread::sleep(pause);
                    pause *= 2;
                }
                Err(f) => {
                    let e = f.into_error(url);
                    return Err(if attempt > 1 {
                        e.context(format!("{url}: gave up after {attempt} attempts"))
                    } else {
                        e
                    });
                }
            }
        }
        unreachable!("the last attempt returns")
    }

    fn send_once(&self, url: &str, body: Option<&Value>) -> Result<Value, Failure> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut request = match body {
            Some(_) => self.agent.post(url),
            None => self.agent.get(url),
        };
        if let Some(key) = &self.key {
            request = request.set("Authorization", &format!("Bearer {key}"));
        }
        let response = match body {
            Some(b) => request
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => request.call(),
        };
        let text = match response {
            Ok(r) => r.into_string().map_err(|e| Failure::Body(e.to_string()))?,
            Err(ureq::Error::Status(code, r)) => {
                let text = r.into_string().unwrap_or_default();
                return Err(Failure::Status(code, excerpt(&text)));
            }
            Err(ureq::Error::Transport(t)) => return Err(Failure::Transport(t.to_string())),
        };
        serde_json::from_str(&text)
            .map_err(|e| Failure::Body(format!("not JSON ({e}): {}", excerpt(&text))))
    }
}

/// Why one request failed.
enum Failure {
    Status(u16, String),
    Transport(String),
    Body(String),
}

impl Failure {
    fn retryable(&self) -> bool {
        match self {
            Failure::Status(code, _) => *code == 429 || *code >= 500,
            Failure::Transport(_) => true,
            Failure::Body(_) => false,
        }
    }

    fn into_error(self, url: &str) -> anyhow::Error {
        match self {
            Failure::Status(code, text) => {
                anyhow::anyhow!("{url}: the server answered HTTP {code}: {text}")
            }
            Failure::Transport(why) => anyhow::anyhow!("{url}: cannot reach the server: {why}"),
            Failure::Body(why) => anyhow::anyhow!("{url}: {why}"),
        }
    }
}

/// The start of a server's text, for an error message.
fn excerpt(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
