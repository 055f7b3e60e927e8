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
pub mod redact;

use anyhow::{bail, Context, Result};
use completions::{Completed, Echoed};
use serde_json::Value;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// Attempts of one request before its error is reported: a 429, a 5xx or a failed connection is
/// retried after 0.5, 1, 2 and 4 s while the [`RETRY_BUDGET`] lasts.
const ATTEMPTS: u32 = 5;

/// No new attempt of a request starts later than this after its first: with one request's
/// timeout, it bounds the longest wait for one answer.
pub const RETRY_BUDGET: Duration = Duration::from_secs(60);

/// The largest answer read: an echo of a 32k-token prompt is about 2.5 MB of JSON. A larger one
/// is refused unread, so that memory per request in flight stays bounded.
pub const MAX_ANSWER_BYTES: u64 = 8 << 20;

/// Requests in flight at most: with [`MAX_ANSWER_BYTES`] and its parsed form (a few times the
/// text), well under a few GiB however the flag is set.
pub const MAX_CONCURRENCY: usize = 64;

/// How long one request may wait, per phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    /// To open the connection (resolving the host, TCP, TLS).
    pub connect: Duration,
    /// From sending the request to the end of the answer's headers: a server that accepted the
    /// request and says nothing, or drips its headers, is given up on.
    pub first_byte: Duration,
    /// The whole request, its body included: a server that drips its answer is given up on.
    pub request: Duration,
}

impl Waits {
    /// The defaults (`--connect-timeout`, `--first-byte-timeout`, `--timeout`; docs/served.md):
    /// a long generation on a busy server answers within minutes; a stalled one is named
    /// after two.
    pub const DEFAULT: Waits = Waits {
        connect: Duration::from_secs(10),
        first_byte: Duration::from_secs(120),
        request: Duration::from_secs(300),
    };
}

/// The waits of this process's requests: set once from the command line, as the kernels' threads
/// are.
static WAITS: RwLock<Waits> = RwLock::new(Waits::DEFAULT);

/// Sets the waits of every endpoint opened from now on.
pub fn set_waits(waits: Waits) {
    *WAITS.write().unwrap_or_else(|e| e.into_inner()) = waits;
}

fn waits() -> Waits {
    *WAITS.read().unwrap_or_else(|e| e.into_inner())
}

/// An OpenAI-compatible API and the model asked through it. The API key, when there is one, is
/// read from the environment, sent only to this URL (redirects are never followed), and never
/// printed: every server text quoted in an error is redacted ([`redact`]).
pub struct Endpoint {
    /// The API base as OpenAI clients take it (`http://host:8000/v1`), without a trailing `/`.
    base: String,
    /// The id the server serves the model under (`/v1/models`).
    model: String,
    key: Option<String>,
    agent: ureq::Agent,
    waits: Waits,
    requests: AtomicU64,
}

impl Endpoint {
    /// An endpoint at `base` serving `model`; the API key, if any, is the value of the
    /// environment variable `api_key_env`. A URL with user info and a key that could not be a
    /// header's value are refused here, before any request.
    pub fn new(base: &str, model: &str, api_key_env: Option<&str>) -> Result<Endpoint> {
        let base = check_url(base)?;
        if model.is_empty() {
            bail!("{base}: an empty model id");
        }
        let key = match api_key_env {
            Some(var) => Some(api_key(&base, var)?),
            None => None,
        };
        let waits = waits();
        let agent = ureq::Agent::config_builder()
            // A status is an answer to read (its body quoted, redacted), not a bare error.
            .http_status_as_error(false)
            // The key goes to the registered URL only: a redirect is reported, never followed
            // (ureq 2 panicked on one to file://).
            .max_redirects(0)
            // As before: no proxy from the environment carries the key elsewhere.
            .proxy(None)
            .timeout_connect(Some(waits.connect))
            .timeout_recv_response(Some(waits.first_byte))
            .timeout_global(Some(waits.request))
            .build()
            .into();
        Ok(Endpoint {
            base,
            model: model.to_string(),
            key,
            agent,
            waits,
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
        let models = self.send(&url, None).and_then(|json| {
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
        });
        models.map_err(|e| self.redacted(e))
    }

    /// The echoed log-probs of `label` after `context` (see [`completions::read_score`]).
    pub fn score(&self, context: &str, label: &str) -> Result<Echoed> {
        self.complete(completions::score_request(context, label))
            .and_then(|(url, json)| completions::read_score(&url, &json, context, label))
            .map_err(|e| self.redacted(e))
    }

    /// A greedy completion of `prompt` (see [`completions::read_greedy`]).
    pub fn greedy(&self, prompt: &str, max_tokens: u32, stop: &[String]) -> Result<Completed> {
        self.complete(completions::greedy_request(prompt, max_tokens, stop))
            .and_then(|(url, json)| completions::read_greedy(&url, &json, max_tokens, stop))
            .map_err(|e| self.redacted(e))
    }

    /// `POST /completions` for the endpoint's model: `body` with the model id added. The answer
    /// must name that model: a server that now serves another one is refused.
    fn complete(&self, mut body: Value) -> Result<(String, Value)> {
        body["model"] = Value::String(self.model.clone());
        let url = self.url("/completions");
        let json = self.send(&url, Some(&body))?;
        match json["model"].as_str() {
            Some(m) if m == self.model => Ok((url, json)),
            Some(m) => bail!(
                "{url}: the answer comes from model {m:?}, not `{}` as registered: the server \
                 serves another model now; nothing of it is stored",
                self.model
            ),
            None => bail!(
                "{url}: the answer names no `model`, so it cannot be told to come from `{}`; \
                 nothing of it is stored",
                self.model
            ),
        }
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
            Err(f) => return Err(self.redacted(f.into_error(&url, &self.waits))),
        };
        let tokens = json["tokens"]
            .as_array()
            .with_context(|| format!("{url}: no `tokens` list in the answer"))
            .map_err(|e| self.redacted(e))?;
        tokens
            .iter()
            .map(|t| {
                t.as_u64()
                    .with_context(|| format!("{url}: a token id {t} that is not a number"))
            })
            .collect::<Result<_>>()
            .map(Some)
            .map_err(|e| self.redacted(e))
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `e` with the key and anything like a token taken out of its text (a server's words are
    /// quoted in it); unchanged when there was nothing to take out.
    pub fn redacted(&self, e: anyhow::Error) -> anyhow::Error {
        let text = format!("{e:#}");
        let clean = redact::redact(&text, self.key.as_deref());
        if clean == text {
            e
        } else {
            anyhow::anyhow!(clean)
        }
    }

    /// One request with bounded retries: a busy (429), failing (5xx) or unreachable server is
    /// asked again after a growing pause while the retry budget lasts; any other failure,
    /// a timeout included, is final.
    fn send(&self, url: &str, body: Option<&Value>) -> Result<Value> {
        let first = Instant::now();
        let mut pause = Duration::from_millis(500);
        let mut attempt = 1;
        loop {
            match self.send_once(url, body) {
                Ok(json) => return Ok(json),
                Err(f)
                    if f.retryable()
                        && attempt < ATTEMPTS
                        && first.elapsed() + pause <= RETRY_BUDGET =>
                {
                    std::thread::sleep(pause);
                    pause *= 2;
                    attempt += 1;
                }
                Err(f) => {
                    let e = f.into_error(url, &self.waits);
                    return Err(if attempt > 1 {
                        e.context(format!(
                            "{url}: gave up after {attempt} attempts in {:.1} s (retries stop \
                             after {} attempts or {} s)",
                            first.elapsed().as_secs_f64(),
                            ATTEMPTS,
                            RETRY_BUDGET.as_secs()
                        ))
                    } else {
                        e
                    });
                }
            }
        }
    }

    fn send_once(&self, url: &str, body: Option<&Value>) -> Result<Value, Failure> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let bearer = self.key.as_ref().map(|key| format!("Bearer {key}"));
        let response = match body {
            Some(b) => {
                let mut request = self
                    .agent
                    .post(url)
                    .header("Content-Type", "application/json");
                if let Some(bearer) = &bearer {
                    request = request.header("Authorization", bearer);
                }
                request.send(b.to_string())
            }
            None => {
                let mut request = self.agent.get(url);
                if let Some(bearer) = &bearer {
                    request = request.header("Authorization", bearer);
                }
                request.call()
            }
        };
        let mut response = response.map_err(Failure::from)?;
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            let location = response
                .headers()
                .get("location")
                .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned())
                .unwrap_or_default();
            return Err(Failure::Redirect(status, excerpt(&location)));
        }
        let mut bytes = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(MAX_ANSWER_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::from(ureq::Error::from(e)))?;
        if bytes.len() as u64 > MAX_ANSWER_BYTES {
            return Err(Failure::Body(format!(
                "the answer is larger than {} MiB, the most a request reads; refused",
                MAX_ANSWER_BYTES >> 20
            )));
        }
        let text = String::from_utf8_lossy(&bytes);
        if !(200..300).contains(&status) {
            return Err(Failure::Status(status, excerpt(&text)));
        }
        if let Some(key) = self.key.as_deref() {
            // A server that echoes the key would have it stored (in a generation) or printed.
            if text.contains(key) {
                return Err(Failure::Body(
                    "the answer holds the API key sent with the request; refused, nothing of it \
                     stored"
                        .to_string(),
                ));
            }
        }
        serde_json::from_str(&text)
            .map_err(|e| Failure::Body(format!("not JSON ({e}): {}", excerpt(&text))))
    }
}

/// `url` without its trailing `/`, if it is an http(s) API base a key may be sent to: no user
/// info (it would be sent as Basic auth, and stored and printed as the model's location), no
/// whitespace or control characters.
fn check_url(url: &str) -> Result<String> {
    let base = url.trim_end_matches('/');
    let Some(rest) = base
        .strip_prefix("http://")
        .or_else(|| base.strip_prefix("https://"))
    else {
        bail!(
            "{}: a served model's URL is an http:// or https:// API base (e.g. \
             http://127.0.0.1:8000/v1)",
            redact::redact(base, None)
        );
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some((_, host)) = authority.rsplit_once('@') {
        let scheme = &base[..base.len() - rest.len()];
        bail!(
            "{scheme}…@{host}: a served model's URL may not hold a user name or password (it \
             would be stored and printed with the URL): give the key with --api-key-env VAR"
        );
    }
    if authority.is_empty() {
        bail!("{base}: a served model's URL names no host");
    }
    if let Some(c) = base.chars().find(|c| c.is_whitespace() || c.is_control()) {
        bail!(
            "{}: a served model's URL holds the character {c:?}",
            base.escape_debug()
        );
    }
    Ok(base.to_string())
}

/// The API key in the environment variable `var`: refused, unprinted, unless every character is
/// one an HTTP header carries as it is (a key file with Windows line ends read by `$(cat f)`
/// ends in `\r`).
fn api_key(base: &str, var: &str) -> Result<String> {
    let key = std::env::var(var).map_err(|e| match e {
        std::env::VarError::NotPresent => anyhow::anyhow!(
            "the API key of {base} is to be read from the environment variable {var}, which is \
             not set"
        ),
        std::env::VarError::NotUnicode(_) => anyhow::anyhow!(
            "the API key of {base} in the environment variable {var} is not UTF-8; nothing was \
             sent"
        ),
    })?;
    if key.is_empty() {
        bail!("the API key of {base} in the environment variable {var} is empty; nothing was sent");
    }
    if let Some((at, c)) = key.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        let what = if c.is_control() {
            "a control character"
        } else {
            "a space or a character beyond ASCII"
        };
        bail!(
            "the API key of {base} in the environment variable {var} holds {what} ({}) at byte \
             {at}; nothing was sent (a key file with Windows line ends read with $(cat FILE) \
             ends in \\r: strip it)",
            c.escape_unicode()
        );
    }
    Ok(key)
}

/// Why one request failed.
enum Failure {
    Status(u16, String),
    /// A 3xx, never followed: where it pointed.
    Redirect(u16, String),
    Timeout(ureq::Timeout),
    Transport(String),
    Body(String),
}

impl From<ureq::Error> for Failure {
    fn from(e: ureq::Error) -> Failure {
        match e {
            ureq::Error::Timeout(t) => Failure::Timeout(t),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                Failure::Timeout(ureq::Timeout::Global)
            }
            e => Failure::Transport(e.to_string()),
        }
    }
}

impl Failure {
    fn retryable(&self) -> bool {
        match self {
            Failure::Status(code, _) => *code == 429 || *code >= 500,
            Failure::Transport(_) => true,
            Failure::Redirect(..) | Failure::Timeout(_) | Failure::Body(_) => false,
        }
    }

    fn into_error(self, url: &str, waits: &Waits) -> anyhow::Error {
        match self {
            Failure::Status(code, text) => {
                anyhow::anyhow!("{url}: the server answered HTTP {code}: {text}")
            }
            Failure::Redirect(code, location) => anyhow::anyhow!(
                "{url}: the server redirects (HTTP {code}) to {location:?}; redirects are not \
                 followed, so that the key goes only to the registered URL: register the model at \
                 the URL it means"
            ),
            Failure::Timeout(t) => {
                let (what, wait, flag) = match t {
                    ureq::Timeout::Resolve | ureq::Timeout::Connect => {
                        ("no connection", waits.connect, "--connect-timeout")
                    }
                    ureq::Timeout::RecvResponse => (
                        "no answer (its headers) after the request was sent",
                        waits.first_byte,
                        "--first-byte-timeout",
                    ),
                    _ => ("the request not done", waits.request, "--timeout"),
                };
                anyhow::anyhow!(
                    "{url}: {what} within {} s ({flag}; docs/served.md); not retried",
                    wait.as_secs_f64()
                )
            }
            Failure::Transport(why) => anyhow::anyhow!("{url}: cannot reach the server: {why}"),
            Failure::Body(why) => anyhow::anyhow!("{url}: {why}"),
        }
    }
}

/// The start of a server's text, for an error message (redacted where it is quoted).
fn excerpt(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
