//! Served models in the registry and the runner: registered by their identity after the
//! conformance probe, asked over HTTP with several requests in flight, their answers stored
//! through the save path local scores and generations take (`save`: committed batch by batch,
//! so an interrupted run keeps what it committed and a rerun asks only for the rest).

use super::generate::Generated;
use super::pending::Pending;
use super::records::{ModelRecord, ServedRecord, StopReason};
use super::save::{self, Computation, Computed, Progress, Saver, ScoreReport};
use crate::benchmarks::Decoding;
use crate::served::completions::{Completed, Echoed, Finish};
use crate::served::{probe, Endpoint};
use crate::store::{Id, Names, Record, Store};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Instant;

/// How scores and generations are asked: part of a served model's fingerprint, so a change of
/// protocol gives new ids.
pub const PROTOCOL: &str = "openai-completions-echo-1";

/// The backend name of a served model's records and fingerprint.
pub use super::records::SERVED_BACKEND as BACKEND;

/// Who renders a chat template, in the fingerprint.
const CHAT: &str = "rendered by deltalogic";

/// The default largest |Δ log-prob| accepted between two answers of a server: served engines are
/// not bit-reproducible (batching, kernels chosen by load), so their scores are compared within
/// a tolerance that is stated wherever one is used.
pub const TOLERANCE: f32 = 1e-3;

/// Requests in flight by default.
pub const CONCURRENCY: usize = 8;

/// A fixed text whose token ids name a tokenizer a server exposes through `/tokenize`.
const TOKENIZER_TEXT: &str = "DeltaLogic: if all birds fly and Tweety is a bird, Tweety flies. \
    Übermäßig 42 × 7 = 294; 鳥は飛ぶ 🐦.";

/// What `model add --served` is told.
pub struct Registration<'a> {
    pub url: &'a str,
    pub model_id: &'a str,
    pub revision: Option<&'a str>,
    /// A directory holding the model's tokenizer files (tokenizer.json, tokenizer_config.json).
    pub tokenizer: Option<&'a Path>,
    pub api_key_env: Option<&'a str>,
    pub name: Option<&'a str>,
    pub tolerance: f32,
}

/// What registering a served model found.
#[derive(Debug, serde::Serialize)]
pub struct Registered {
    pub model: Id,
    pub name: String,
    pub identity: Id,
    pub probe: String,
    pub tokenizer: String,
}

/// Registers a served model after checking that the server serves `model_id` and passes the
/// conformance probe. The same identity registered again (at another URL, say) is the same model.
pub fn add(reg: &Store, r: &Registration) -> Result<Registered> {
    let endpoint = Endpoint::new(r.url, r.model_id, r.api_key_env)?;
    let served = endpoint.served_models()?;
    if !served.iter().any(|m| m == r.model_id) {
        bail!(
            "{}: serves no model `{}` (it serves: {})",
            endpoint.base(),
            r.model_id,
            served.join(", ")
        );
    }
    let probed = probe::run(&endpoint, r.tolerance)?;
    let (tokenizer, chat_template) = tokenizer_identity(&endpoint, r.tokenizer)?;
    let identity = ServedRecord {
        model_id: r.model_id.to_string(),
        revision: r.revision.unwrap_or_default().to_string(),
        tokenizer: tokenizer.clone(),
        protocol: PROTOCOL.to_string(),
        chat: CHAT.to_string(),
        chat_template,
        probe: probed.to_string(),
        api_key_env: r.api_key_env.map(str::to_string),
    };
    let record = ModelRecord {
        files_blake3: identity.id().hex(),
        backend: BACKEND.to_string(),
        dtype: "server".to_string(),
        scorer_version: PROTOCOL.to_string(),
        format: "served".to_string(),
        architecture: r.model_id.to_string(),
        path: endpoint.base().to_string(),
        bytes: 0,
    };
    let name = r.name.unwrap_or(r.model_id).to_string();
    let here = Location {
        url: endpoint.base().to_string(),
        api_key_env: r.api_key_env.map(str::to_string),
        tolerance: r.tolerance,
    };
    let model = reg.write(|w| {
        // The latest registration's probe, key variable and URL are kept (provenance); where it
        // is asked is this store's own (`Location`).
        w.replace(&identity)?;
        let model = w.replace(&record)?;
        w.name(Names::Models, &name, model)?;
        w.set_served_at(model, &serde_json::to_vec(&here)?)?;
        Ok(model)
    })?;
    Ok(Registered {
        model,
        name,
        identity: identity.id(),
        probe: identity.probe,
        tokenizer,
    })
}

/// The tokenizer's identity and chat template: from the files given, else from the server's
/// `/tokenize` of a fixed text, else unknown (said in the fingerprint).
fn tokenizer_identity(endpoint: &Endpoint, dir: Option<&Path>) -> Result<(String, Option<String>)> {
    if let Some(dir) = dir {
        let mut hasher =
            blake3::Hasher::new_derive_key("deltalogic 2026-11-26 served tokenizer files v1");
        let mut found = 0;
        for name in ["tokenizer.json", "tokenizer_config.json", "tokenizer.model"] {
            let path = dir.join(name);
            if path.is_file() {
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                hasher.update(name.as_bytes());
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(&bytes);
                found += 1;
            }
        }
        if found == 0 {
            bail!(
                "{}: no tokenizer.json, tokenizer_config.json or tokenizer.model",
                dir.display()
            );
        }
        let config = dir.join("tokenizer_config.json");
        let chat = match std::fs::read_to_string(&config) {
            Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
                .with_context(|| format!("{}: not JSON", config.display()))?["chat_template"]
                .as_str()
                .map(str::to_string),
            Err(_) => None,
        };
        return Ok((format!("files:{}", hasher.finalize().to_hex()), chat));
    }
    Ok((
        tokenized_identity(endpoint)?.unwrap_or_else(|| "unknown".to_string()),
        None,
    ))
}

/// The tokenizer's identity from the server's `/tokenize` of a fixed text; `None` when it has no
/// such route.
fn tokenized_identity(endpoint: &Endpoint) -> Result<Option<String>> {
    Ok(endpoint.tokenize(TOKENIZER_TEXT)?.map(|ids| {
        let mut hasher =
            blake3::Hasher::new_derive_key("deltalogic 2026-11-26 served tokenize ids v1");
        for id in ids {
            hasher.update(&id.to_le_bytes());
        }
        format!("tokenize:{}", hasher.finalize().to_hex())
    }))
}

/// The identity record of a served model.
pub fn identity(reg: &Store, record: &ModelRecord) -> Result<ServedRecord> {
    let id = record.served_identity().with_context(|| {
        format!(
            "model {} is not served, or its identity is malformed",
            record.id().short()
        )
    })?;
    reg.get::<ServedRecord>(&id)?.with_context(|| {
        format!(
            "served model {} ({}) has no identity record {} in {}",
            record.id().short(),
            record.path,
            id.short(),
            reg.path().display()
        )
    })
}

impl crate::benchmarks::ModelInfo for ServedRecord {
    fn chat_template(&self) -> Result<String> {
        self.chat_template.clone().with_context(|| {
            format!(
                "served model `{}` has no chat template: register it with `model add --served \
                 ... --tokenizer DIR`, DIR holding its tokenizer_config.json",
                self.model_id
            )
        })
    }
}

/// Where this store asks a served model, written by `model add --served` into the store's own
/// table (`Store::served_at`): never exported nor merged, so a URL or key variable in a cache
/// file, or in a store merged by an earlier version, is never acted on.
#[derive(serde::Serialize, serde::Deserialize)]
struct Location {
    url: String,
    /// The environment variable holding the key, if any.
    api_key_env: Option<String>,
    tolerance: f32,
}

impl Location {
    fn of(reg: &Store, model: &Id) -> Result<Option<Location>> {
        reg.served_at(model)?
            .map(|bytes| {
                serde_json::from_slice(&bytes).with_context(|| {
                    format!(
                        "{}: the registration of served model {} is malformed",
                        reg.path().display(),
                        model.short()
                    )
                })
            })
            .transpose()
    }
}

/// The URL where this store asks served model `model`; `None` when it is not registered here.
pub fn registered_url(reg: &Store, model: &Id) -> Result<Option<String>> {
    Ok(Location::of(reg, model)?.map(|l| l.url))
}

/// A served model ready to be asked.
pub struct Served {
    /// Boxed: an engine is a local model or this, and should not be twice the size of one.
    endpoint: Box<Endpoint>,
    /// The tokenizer's identity as registered (`tokenize:…` is checked again).
    tokenizer: String,
    /// The largest |Δ log-prob| its probe and cross-checks accept, as registered.
    tolerance: f32,
    concurrency: usize,
    /// Whether the server is still the model registered, found before its first request is
    /// sent (an error's text, shared by every request that waits on it).
    unchanged: OnceLock<Result<(), String>>,
    /// Scores asked so far: the first and one in [`probe::CROSS_CHECK_EVERY`] are cross-checked.
    scores_asked: AtomicU64,
}

impl Served {
    /// The served model of `record`, asked at its recorded URL with `concurrency` requests in
    /// flight (at most [`crate::served::MAX_CONCURRENCY`]). Nothing is sent until something is
    /// asked.
    pub fn open(reg: &Store, record: &ModelRecord, concurrency: usize) -> Result<Served> {
        let identity = identity(reg, record)?;
        let Some(here) = Location::of(reg, &record.id())? else {
            bail!(
                "served model {} (`{}`) is not registered in {}: it came from a cache file, or \
                 was registered by a version that kept its URL in the shared record. A URL \
                 written in a record is never asked; register its server here with \
                 `deltalogic model add --served URL --model-id {}`",
                record.id().short(),
                identity.model_id,
                reg.path().display(),
                identity.model_id
            );
        };
        Ok(Served {
            endpoint: Box::new(Endpoint::new(
                &here.url,
                &identity.model_id,
                here.api_key_env.as_deref(),
            )?),
            tolerance: here.tolerance,
            tokenizer: identity.tokenizer,
            concurrency: concurrency.clamp(1, crate::served::MAX_CONCURRENCY),
            unchanged: OnceLock::new(),
            scores_asked: AtomicU64::new(0),
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Checked once, before the first request: the server still lists the model, its tokenizer
    /// (when registered from its `/tokenize`) still gives the same ids, and it still passes the
    /// conformance probe. A server that changed is refused before anything is asked or stored.
    fn check_unchanged(&self) -> Result<()> {
        let outcome = self.unchanged.get_or_init(|| {
            self.unchanged_now().map_err(|e| {
                format!(
                    "{e:#}; {} does not answer as when `{}` was registered (checked before the \
                     first request): nothing was asked",
                    self.endpoint.base(),
                    self.endpoint.model()
                )
            })
        });
        outcome.clone().map_err(anyhow::Error::msg)
    }

    fn unchanged_now(&self) -> Result<()> {
        let base = self.endpoint.base();
        let model_id = self.endpoint.model();
        let served = self.endpoint.served_models()?;
        if !served.iter().any(|m| m == model_id) {
            bail!(
                "{base}: serves no model `{model_id}` now (it serves: {})",
                served.join(", ")
            );
        }
        if self.tokenizer.starts_with("tokenize:") {
            let now = tokenized_identity(&self.endpoint)?;
            if now.as_deref() != Some(self.tokenizer.as_str()) {
                bail!(
                    "{base}: its /tokenize gives other ids than when `{model_id}` was registered \
                     ({} then, {} now)",
                    self.tokenizer,
                    now.as_deref().unwrap_or("no /tokenize route")
                );
            }
        }
        probe::run(&self.endpoint, self.tolerance)?;
        Ok(())
    }

    /// The echoed log-probs of `label` after `context`; the first answer and one in
    /// [`probe::CROSS_CHECK_EVERY`] cross-checked before they are returned.
    pub fn score(&self, context: &str, label: &str) -> Result<Echoed> {
        let asked = self.scores_asked.fetch_add(1, Ordering::Relaxed);
        self.score_checked(
            context,
            label,
            asked.is_multiple_of(probe::CROSS_CHECK_EVERY),
        )
    }

    /// The echoed log-probs of `label` after `context`, cross-checked before they are returned
    /// if `check`.
    fn score_checked(&self, context: &str, label: &str, check: bool) -> Result<Echoed> {
        self.check_unchanged()?;
        let echoed = self.endpoint.score(context, label)?;
        if check {
            self.cross_check(&echoed, context, label)?;
        }
        Ok(echoed)
    }

    /// Cross-checks the answer `echoed` to `label` after `context` (`probe::cross_check`) at a
    /// position the server cannot tell in advance.
    fn cross_check(&self, echoed: &Echoed, context: &str, label: &str) -> Result<()> {
        let pick = blake3::hash(format!("{context}\u{0}{label}").as_bytes());
        let pick = u64::from_le_bytes(pick.as_bytes()[..8].try_into().expect("8 bytes"));
        probe::cross_check(&self.endpoint, echoed, pick, self.tolerance)
    }

    /// A greedy completion of `prompt`.
    pub fn generate(&self, prompt: &str, decoding: &Decoding) -> Result<Completed> {
        super::generate::check(decoding)?;
        if prompt.is_empty() {
            bail!("an empty prompt conditions nothing");
        }
        self.check_unchanged()?;
        self.endpoint
            .greedy(prompt, decoding.max_tokens, &decoding.stop)
    }

    /// A generation as the runner stores it: the server's tokens are text, so no token ids.
    pub fn regenerate(&self, prompt: &str, decoding: &Decoding) -> Result<Generated> {
        let c = self.generate(prompt, decoding)?;
        Ok(Generated {
            tokens: Vec::new(),
            logprobs: c.logprobs,
            text: c.text,
            stop: stop_reason(c.finish),
            forward_tokens: 0,
        })
    }
}

fn stop_reason(f: Finish) -> StopReason {
    match f {
        Finish::EndToken => StopReason::EndToken,
        Finish::StopString => StopReason::StopString,
        Finish::MaxTokens => StopReason::MaxTokens,
    }
}

/// One request to send: a label of a score request (cross-checked if `check`), or a generation.
enum Ask {
    Score {
        req: usize,
        slot: usize,
        check: bool,
    },
    Generate {
        req: usize,
    },
}

/// An answer on its way to the save path, held until it is vouched for: a cross-check of an
/// answer asked no earlier passed (its own included).
struct Held {
    req: usize,
    computed: Computed,
}

/// Computes the missing slots of `reqs` with a served model: `concurrency` requests in flight,
/// records committed every [`save::BATCH`]. The first score asked and one in
/// [`probe::CROSS_CHECK_EVERY`] after it, and the last, are cross-checked (in the order asked,
/// whatever the order answered), and an answer is saved only once the check of an answer asked
/// no earlier has passed (generations after the last score, which no check can vouch for, at
/// the end). On the first failure no new request is sent, the answers vouched for are
/// committed, those not yet vouched for are dropped (a server that fails a check may have lied
/// in all of them), and the failure is reported.
pub(super) fn compute(
    reg: &Store,
    served: &Served,
    model_id: Id,
    reqs: &[Pending],
    missing: &[(usize, Vec<usize>)],
    report: &mut ScoreReport,
    progress: &mut dyn Progress,
) -> Result<()> {
    let all = missing
        .iter()
        .filter(|(req, _)| matches!(reqs[*req], Pending::Score { .. }))
        .map(|(_, slots)| slots.len() as u64)
        .sum::<u64>();
    let mut scores = 0u64;
    let asks: Vec<Ask> = missing
        .iter()
        .flat_map(|(req, slots)| match &reqs[*req] {
            Pending::Score { .. } => slots
                .iter()
                .map(|&slot| {
                    scores += 1;
                    let check =
                        (scores - 1).is_multiple_of(probe::CROSS_CHECK_EVERY) || scores == all;
                    Ask::Score {
                        req: *req,
                        slot,
                        check,
                    }
                })
                .collect::<Vec<_>>(),
            Pending::Generate { .. } => vec![Ask::Generate { req: *req }],
        })
        .collect();
    // A server has no files of ours to check before a commit.
    let files = |_| Ok(());
    let mut saver = Saver::start(reg, reqs, &files, asks.len(), report, progress);
    let now = save::now();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let (send, receive) = mpsc::channel::<(usize, Result<Held>)>();
    let mut first_error = None;
    // Answers not yet vouched for, by the position they were asked at, and the last position a
    // passed check vouched for.
    let mut held = std::collections::BTreeMap::<usize, Held>::new();
    let mut vouched_to = None;
    std::thread::scope(|scope| {
        for _ in 0..served.concurrency.min(asks.len()) {
            let send = send.clone();
            let (next, failed, asks) = (&next, &failed, &asks);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= asks.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                let answer = ask(served, model_id, reqs, &asks[i], now);
                if answer.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                if send.send((i, answer)).is_err() {
                    break;
                }
            });
        }
        drop(send);
        for (i, answer) in receive {
            let vouched = answer.and_then(|h| {
                held.insert(i, h);
                if matches!(asks[i], Ask::Score { check: true, .. }) {
                    vouched_to = vouched_to.max(Some(i));
                    saver.report().cross_checks += 1;
                }
                let Some(to) = vouched_to else {
                    return Ok(());
                };
                let later = held.split_off(&(to + 1));
                // The server's tokens are not counted: it runs them, not us.
                std::mem::replace(&mut held, later)
                    .into_values()
                    .try_for_each(|h| saver.take(h.req, h.computed, 0))
            });
            if let Err(e) = vouched {
                failed.store(true, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
        }
    });
    if first_error.is_none() {
        // What follows the last score: generations, which no check can vouch for.
        for h in std::mem::take(&mut held).into_values() {
            saver.take(h.req, h.computed, 0)?;
        }
    }
    let dropped = held.len();
    let stored = {
        let r = saver.report();
        r.scores_computed + r.generations_computed
    };
    saver.finish()?;
    match first_error {
        Some(e) => Err(e.context(format!(
            "asking served model {} at {} (the {stored} answer(s) a passed cross-check vouched \
             for were stored, the {dropped} received since were not; a rerun asks only for the \
             rest)",
            model_id.short(),
            served.endpoint.base()
        ))),
        None => Ok(()),
    }
}

/// Sends one request and builds its record.
fn ask(served: &Served, model_id: Id, reqs: &[Pending], ask: &Ask, now: u64) -> Result<Held> {
    let t = Instant::now();
    Ok(match *ask {
        Ask::Score { req, slot, check } => {
            let Pending::Score {
                prompt,
                prompt_id,
                labels,
                ..
            } = &reqs[req]
            else {
                unreachable!("score asks come from score requests")
            };
            let label = &labels[slot];
            let echoed = served
                .score_checked(prompt, label, check)
                .with_context(|| format!("label {label:?} after prompt {}", prompt_id.short()))?;
            // The server's tokens are text: a served score holds no token ids.
            let by = Computation::of(model_id, BACKEND, t, now);
            Held {
                req,
                computed: Computed::Score(by.score(*prompt_id, label, Vec::new(), echoed.logprobs)),
            }
        }
        Ask::Generate { req } => {
            let Pending::Generate {
                prompt,
                prompt_id,
                decoding,
                ..
            } = &reqs[req]
            else {
                unreachable!("generation asks come from generation requests")
            };
            let g = served
                .regenerate(prompt, decoding)
                .with_context(|| format!("generating after prompt {}", prompt_id.short()))?;
            let by = Computation::of(model_id, BACKEND, t, now);
            Held {
                req,
                computed: Computed::Generation(by.generation(*prompt_id, decoding, g)),
            }
        }
    })
}

/// Whether a registered model is served (its `path` a URL, its fingerprint an identity).
pub fn is_served(record: &ModelRecord) -> bool {
    record.backend == BACKEND
}
