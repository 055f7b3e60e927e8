//! A small OpenAI-shaped completions endpoint on 127.0.0.1 for the served-model tests: it answers
//! with [`Consistent`] (one token per character), exactly as a conforming server would, or with
//! one chosen fault, among them the hostile ones (a server that stalls, drips, redirects, echoes
//! the key, serves another model, or forges answers after the probe). It counts the completions
//! requests it answers, and every request it receives.

use crate::common::ByteModel;
use anyhow::Result;
use deltalogic::benchmarks::Decoding;
use deltalogic::eval::generate;
use deltalogic::eval::{Generation, Prefill, Scoring, StopReason};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The stand-in model made a real distribution: a label's log-prob is the log-softmax of the
/// next-token logits, as a generated token's is, so that its echo and its completions agree as
/// a real model's do (the probe's premise).
pub struct Consistent(pub ByteModel);

impl Prefill for Consistent {
    type State = Vec<u32>;

    fn backend(&self) -> &str {
        "test-consistent"
    }

    fn empty_state(&self) -> Vec<u32> {
        Vec::new()
    }

    fn prefill(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<u32>> {
        self.0.prefill(state, tokens)
    }
}

impl Scoring for Consistent {
    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)> {
        self.0.split_tokens(context, labels)
    }

    fn score_continuation(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<f32>> {
        let mut seen = state.clone();
        let mut out = Vec::new();
        for &t in tokens {
            let logits = self.0.next_logits(&seen)?;
            let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f64 = logits
                .iter()
                .map(|&x| (f64::from(x) - f64::from(max)).exp())
                .sum();
            // As the greedy pick computes its token's log-prob, to the bit.
            out.push((f64::from(logits[t as usize]) - f64::from(max) - sum.ln()) as f32);
            seen.push(t);
        }
        Ok(out)
    }
}

impl Generation for Consistent {
    fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        self.0.tokenize(text)
    }

    fn next_logits(&self, state: &Vec<u32>) -> Result<Vec<f32>> {
        self.0.next_logits(state)
    }

    fn decode(&self, tokens: &[u32]) -> Result<String> {
        self.0.decode(tokens)
    }

    fn end_of_generation(&self) -> Vec<u32> {
        self.0.end_of_generation()
    }
}

/// What the endpoint does wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// A body that is not JSON.
    NotJson,
    /// A log-prob written as `NaN`, as Python's json module writes one.
    NanLogprob,
    /// One token more in the echo than the prompt and the generated token.
    WrongCount,
    /// Tokens of two characters, so that a boundary can fall inside one.
    Pairs,
    /// Each echoed log-prob is the next token's (llama-cpp-python 0.3.36's server).
    Shifted,
    /// No log-probs at all (llama.cpp's `llama-server` refuses echo).
    NoLogprobs,
    /// Connections closed unanswered: the server is down.
    Down,
    /// Every request accepted and never answered.
    Stall,
    /// Headers sent, then a body promised and dripped a byte every half second.
    Drip,
    /// A 200 whose body is 9 MiB of JSON.
    Huge,
    /// Every request answered with a 302 to [`Fake::redirect_to`]'s target.
    Redirect,
    /// A 401 quoting the authorization header it was sent, as OpenAI's API does.
    EchoKey401,
    /// A 200 that is not JSON and quotes the authorization header it was sent.
    EchoKeyPage,
    /// `/v1/models` lists only `other`, and every answer names it: another model now.
    OtherModel,
    /// `/v1/models` still lists `byte`, but the answers name `other`.
    AnswersOtherModel,
    /// Every echoed log-prob set to -0.01, except for the probe's contexts: a server that passes
    /// the probe and forges its scores.
    ForgedAfterProbe,
    /// Every echoed log-prob 5e-4 lower, except for the probe's contexts: within the served
    /// tolerance of a check, beyond a stricter audit's.
    Drift,
    /// Every echoed log-prob 5e-4 lower, the probe's contexts included.
    DriftAll,
}

/// The probe's contexts (`deltalogic::served::probe`), which a forging server answers truly.
const PROBE_PREFIXES: [&str; 3] = [
    "The capital of France is",
    "If it rains,",
    "One, two, three,",
];

struct State {
    model: Consistent,
    fault: Mutex<Fault>,
    /// Completions requests answered; `Down` after this many more (if set).
    answered: AtomicU64,
    down_after: Mutex<Option<u64>>,
    key: Option<String>,
    stop: AtomicBool,
    /// Requests of any route received, answered or not.
    received: AtomicU64,
    redirect_to: Mutex<String>,
}

pub struct Fake {
    pub url: String,
    state: Arc<State>,
}

impl Fake {
    /// A conforming endpoint serving the stand-in model `name` as model id `byte`; with `key`,
    /// every request must carry it as a bearer token.
    pub fn start(name: &'static str, key: Option<&str>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let state = Arc::new(State {
            model: Consistent(ByteModel::new(name)),
            fault: Mutex::new(Fault::None),
            answered: AtomicU64::new(0),
            down_after: Mutex::new(None),
            key: key.map(str::to_string),
            stop: AtomicBool::new(false),
            received: AtomicU64::new(0),
            redirect_to: Mutex::new(String::new()),
        });
        let s = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(&s, stream);
                });
            }
        });
        Fake { url, state }
    }

    pub fn set_fault(&self, fault: Fault) {
        *self.state.fault.lock().unwrap() = fault;
    }

    /// Goes down after answering `n` more completions requests.
    pub fn down_after(&self, n: u64) {
        *self.state.down_after.lock().unwrap() = Some(self.requests() + n);
    }

    /// Back up, conforming.
    pub fn restart(&self) {
        *self.state.down_after.lock().unwrap() = None;
        self.set_fault(Fault::None);
    }

    /// Completions requests answered so far.
    pub fn requests(&self) -> u64 {
        self.state.answered.load(Ordering::Relaxed)
    }

    /// Requests of any route received so far, answered or not.
    pub fn received(&self) -> u64 {
        self.state.received.load(Ordering::Relaxed)
    }

    /// Answers every request with a 302 to `target`.
    pub fn redirect_to(&self, target: &str) {
        *self.state.redirect_to.lock().unwrap() = target.to_string();
        self.set_fault(Fault::Redirect);
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(
            self.url
                .trim_start_matches("http://")
                .trim_end_matches("/v1"),
        );
    }
}

fn serve(s: &State, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut length, mut auth) = (0usize, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "authorization" => auth = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    s.received.fetch_add(1, Ordering::Relaxed);
    let completions = path == "/v1/completions";
    let mut fault = *s.fault.lock().unwrap();
    if completions {
        if let Some(after) = *s.down_after.lock().unwrap() {
            if s.answered.load(Ordering::Relaxed) >= after {
                fault = Fault::Down;
            }
        }
    }
    let mut stream = stream;
    match fault {
        Fault::Down => return Ok(()), // closed unanswered
        Fault::Stall => {
            while !s.stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            return Ok(());
        }
        Fault::Drip => {
            write!(
                stream,
                "HTTP/1.1 200 X\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
            )?;
            while !s.stop.load(Ordering::Relaxed) {
                stream.write_all(b" ")?;
                stream.flush()?;
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            return Ok(());
        }
        Fault::Redirect => {
            let target = s.redirect_to.lock().unwrap().clone();
            write!(
                stream,
                "HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )?;
            return stream.flush();
        }
        Fault::Huge => {
            let text = format!("{{\"data\": [{{\"id\": \"{}\"}}]}}", "x".repeat(9 << 20));
            write!(
                stream,
                "HTTP/1.1 200 X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            )?;
            return stream.flush();
        }
        _ => {}
    }
    let sent = auth.clone().unwrap_or_default();
    let (status, text) = if fault == Fault::EchoKey401 {
        let said = format!("Incorrect API key provided: {sent}");
        (401, json!({"error": {"message": said}}).to_string())
    } else if fault == Fault::EchoKeyPage {
        (200, format!("<html>Welcome, {sent}</html>"))
    } else if s
        .key
        .as_ref()
        .is_some_and(|k| auth.as_deref() != Some(&format!("Bearer {k}")))
    {
        (401, json!({"error": "bad key"}).to_string())
    } else {
        match path.as_str() {
            "/v1/models" if fault == Fault::OtherModel => {
                (200, json!({"data": [{"id": "other"}]}).to_string())
            }
            "/v1/models" => (200, json!({"data": [{"id": "byte"}]}).to_string()),
            "/v1/completions" => {
                s.answered.fetch_add(1, Ordering::Relaxed);
                let request: Value = serde_json::from_slice(&body).unwrap();
                (200, complete(&s.model, &request, fault))
            }
            _ => (404, json!({"error": "no such route"}).to_string()),
        }
    };
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    stream.flush()
}

fn tokens(text: &str) -> Vec<u32> {
    text.chars().map(u32::from).collect()
}

/// The answer to a completions request, as text (a fault may make it invalid JSON).
fn complete(model: &Consistent, request: &Value, fault: Fault) -> String {
    let prompt = request["prompt"].as_str().unwrap();
    assert_eq!(request["model"], "byte");
    assert_eq!(request["temperature"], 0);
    let ids = tokens(prompt);
    let max_tokens = request["max_tokens"].as_u64().unwrap() as u32;
    let stop: Vec<String> = request["stop"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    let state = model.prefill(&model.empty_state(), &ids).unwrap();
    let generated = generate::greedy(
        model,
        &state,
        &Decoding {
            max_tokens,
            stop: stop.clone(),
        },
        true,
    )
    .unwrap();
    let piece = |t: &u32| {
        char::from_u32(*t)
            .filter(|_| *t != 0)
            .map(String::from)
            .unwrap_or_default()
    };
    let gen_tokens: Vec<String> = generated.tokens.iter().map(piece).collect();
    let gen_logprobs: Vec<Value> = generated.logprobs.iter().map(|&x| json!(x)).collect();
    let (finish, stop_reason) = match generated.stop {
        StopReason::MaxTokens => ("length", Value::Null),
        StopReason::EndToken => ("stop", Value::Null),
        StopReason::StopString => {
            let s = stop.iter().find(|s| {
                let full: String = gen_tokens.concat();
                full.contains(s.as_str())
            });
            ("stop", json!(s.unwrap()))
        }
    };
    let mut logprobs = if request["echo"] == true {
        let mut lps: Vec<Value> = vec![Value::Null];
        for i in 1..ids.len() {
            let state = model.prefill(&model.empty_state(), &ids[..i]).unwrap();
            lps.push(json!(
                model.score_continuation(&state, &ids[i..=i]).unwrap()[0]
            ));
        }
        let mut toks: Vec<String> = ids.iter().map(piece).collect();
        // The echo's generated token: one, as asked.
        toks.push(gen_tokens[0].clone());
        lps.push(gen_logprobs[0].clone());
        json!({"tokens": toks, "token_logprobs": lps})
    } else {
        json!({"tokens": gen_tokens, "token_logprobs": gen_logprobs})
    };
    match fault {
        Fault::Shifted => {
            let lps = logprobs["token_logprobs"].as_array_mut().unwrap();
            let n = lps.len();
            if n > 1 {
                let shifted: Vec<Value> = lps[2..].to_vec();
                for (i, v) in shifted.into_iter().enumerate() {
                    lps[i + 1] = v;
                }
                lps[n - 1] = json!(-11.6);
            }
            // A one-token completion is the model's own.
        }
        Fault::WrongCount => {
            logprobs["tokens"].as_array_mut().unwrap().push(json!("x"));
            logprobs["token_logprobs"]
                .as_array_mut()
                .unwrap()
                .push(json!(-1.0));
        }
        Fault::Pairs if request["echo"] == true => {
            // The prompt's characters in pairs, then the generated token.
            let (toks, lps) = (&logprobs["tokens"], &logprobs["token_logprobs"]);
            let (toks, lps) = (toks.as_array().unwrap(), lps.as_array().unwrap());
            let n = ids.len();
            let mut paired: Vec<String> = toks[..n]
                .chunks(2)
                .map(|c| c.iter().map(|t| t.as_str().unwrap()).collect())
                .collect();
            let mut paired_lps: Vec<Value> = lps[..n]
                .chunks(2)
                .map(|c| c.last().unwrap().clone())
                .collect();
            paired_lps[0] = Value::Null;
            paired.push(toks[n].as_str().unwrap().to_string());
            paired_lps.push(lps[n].clone());
            logprobs = json!({"tokens": paired, "token_logprobs": paired_lps});
        }
        _ => {}
    }
    let probe = PROBE_PREFIXES.iter().any(|p| prompt.starts_with(p));
    let forged = match fault {
        Fault::ForgedAfterProbe | Fault::Drift => !probe,
        Fault::DriftAll => true,
        _ => false,
    };
    if request["echo"] == true && forged {
        let lps = logprobs["token_logprobs"].as_array_mut().unwrap();
        for lp in lps.iter_mut().filter(|lp| !lp.is_null()) {
            *lp = match fault {
                Fault::Drift | Fault::DriftAll => json!(lp.as_f64().unwrap() - 5e-4),
                _ => json!(-0.01),
            };
        }
    }
    // Offsets from the tokens, in characters as Python counts them.
    let mut at = 0;
    let offsets: Vec<u64> = logprobs["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let o = at;
            at += t.as_str().unwrap().chars().count() as u64;
            o
        })
        .collect();
    logprobs["text_offset"] = json!(offsets);
    let prompt_tokens = match fault {
        Fault::Pairs => ids.len().div_ceil(2),
        _ => ids.len(),
    };
    let text = if request["echo"] == true {
        String::new()
    } else {
        generated.text.clone()
    };
    let mut choice = json!({"index": 0, "text": text, "finish_reason": finish,
        "stop_reason": stop_reason, "logprobs": logprobs});
    if fault == Fault::NoLogprobs {
        choice["logprobs"] = Value::Null;
    }
    let model = match fault {
        Fault::OtherModel | Fault::AnswersOtherModel => "other",
        _ => "byte",
    };
    let answer =
        json!({"model": model, "choices": [choice], "usage": {"prompt_tokens": prompt_tokens}})
            .to_string();
    match fault {
        Fault::NotJson => format!("<html>{answer}"),
        Fault::NanLogprob => {
            answer
                .replacen("-0.", "NaN, \"x\": -0.", 1)
                .replacen("[null,", "[null,NaN,", 1)
        }
        _ => answer,
    }
}
