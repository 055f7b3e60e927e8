//! Helpers shared by the test modules. `ByteModel` is a deterministic stand-in language model for
//! testing the cache and the prefix tree without model weights: tokens are bytes, and a token's
//! log-prob is a hash of everything before it.

use anyhow::{bail, Result};
use deltalogic::eval::{Generation, Prefill, Scoring};

pub struct ByteModel {
    pub name: &'static str,
}

impl ByteModel {
    pub fn new(name: &'static str) -> ByteModel {
        ByteModel { name }
    }

    fn logprob(&self, before: &[u32], token: u32) -> f32 {
        let mut h = blake3::Hasher::new();
        h.update(self.name.as_bytes());
        for t in before.iter().rev().take(16) {
            h.update(&t.to_le_bytes());
        }
        h.update(&token.to_le_bytes());
        -(f32::from(h.finalize().as_bytes()[0]) / 64.0) - 0.01
    }
}

impl Prefill for ByteModel {
    type State = Vec<u32>;

    fn backend(&self) -> &str {
        "test-bytes"
    }

    fn empty_state(&self) -> Vec<u32> {
        Vec::new()
    }

    fn prefill(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<u32>> {
        Ok(state.iter().chain(tokens).copied().collect())
    }
}

impl Scoring for ByteModel {
    fn split_tokens(&self, context: &str, labels: &[String]) -> Result<(Vec<u32>, Vec<Vec<u32>>)> {
        if context.is_empty() {
            bail!("empty context");
        }
        let bytes = |s: &str| s.bytes().map(u32::from).collect::<Vec<_>>();
        Ok((bytes(context), labels.iter().map(|l| bytes(l)).collect()))
    }

    fn score_continuation(&self, state: &Vec<u32>, tokens: &[u32]) -> Result<Vec<f32>> {
        let mut seen = state.clone();
        let mut out = Vec::new();
        for &t in tokens {
            out.push(self.logprob(&seen, t));
            seen.push(t);
        }
        Ok(out)
    }
}

impl Generation for ByteModel {
    fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        Ok(text.bytes().map(u32::from).collect())
    }

    /// Printable ASCII and the end token 0 are possible; every other byte is far less likely,
    /// so generated text is readable.
    fn next_logits(&self, state: &Vec<u32>) -> Result<Vec<f32>> {
        Ok((0..256u32)
            .map(|t| match t {
                0 | 32..=126 => self.logprob(state, t),
                _ => -100.0,
            })
            .collect())
    }

    fn decode(&self, tokens: &[u32]) -> Result<String> {
        Ok(tokens.iter().map(|&t| char::from(t as u8)).collect())
    }

    fn end_of_generation(&self) -> Vec<u32> {
        vec![0]
    }
}

use deltalogic::benchmarks::{self, ModelInfo};
use deltalogic::eval::{self, ModelRecord, Normalisation, Outcome, Quiet};
use deltalogic::store::{Id, Record, Store, StoredSet};

/// The stand-in model has no chat template.
pub struct NoChat;

impl ModelInfo for NoChat {
    fn chat_template(&self) -> Result<String> {
        bail!("the stand-in model has no chat template")
    }
}

/// A stand-in model's fingerprint: a hash of its name.
pub fn model_id(name: &str) -> Id {
    Id::derive(ModelRecord::KIND, name.as_bytes())
}

/// Builds the DeltaLogic set `name` from generated theories: `per_type` episodes per edit type,
/// the paper's mix, under `seed`.
pub fn generated_set(
    reg: &Store,
    name: &str,
    seed: u64,
    per_type: usize,
) -> deltalogic::benchmarks::deltalogic::BuildOutcome {
    let spec = deltalogic::benchmarks::deltalogic::BuildSpec {
        seed,
        from: deltalogic::benchmarks::deltalogic::PremiseSource::Generated,
        per_type: Some(per_type),
        extended: false,
    };
    deltalogic::benchmarks::deltalogic::build(reg, &spec, name).unwrap()
}

/// A named set.
pub fn set(reg: &Store, name: &str) -> (Id, StoredSet) {
    reg.set_by_name(name).unwrap().expect("the set exists")
}

/// The members of a named set as records of kind `R`, in id order.
pub fn members<R: Record>(reg: &Store, name: &str) -> Vec<(Id, R)>
where
    R::Archived: for<'a> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'a, rkyv::rancor::Error>>
        + rkyv::Deserialize<R, rkyv::rancor::Strategy<rkyv::de::Pool, rkyv::rancor::Error>>,
{
    benchmarks::members::<R>(reg, &set(reg, name).1).unwrap()
}

/// Scores set `set_name` with the stand-in model `model` through the runner.
pub fn score_with(
    reg: &Store,
    model: &'static str,
    set_name: &str,
    template: Option<&str>,
    norm: Normalisation,
) -> Outcome {
    let (set_id, stored) = set(reg, set_name);
    let benchmark = benchmarks::ALL.named(&stored.benchmark).unwrap();
    eval::run(
        reg,
        &eval::Run {
            benchmark,
            set_id,
            set: &stored,
            models: eval::Participants {
                subject: model_id(model),
                info: &NoChat,
                judge: None,
            },
            template: template.unwrap_or(benchmark.templates()[0]),
            norms: vec![norm],
            shard: None,
            execution: Default::default(),
        },
        |_| Ok(eval::Engine::Local(ByteModel::new(model))),
        &mut Quiet,
    )
    .unwrap()
}

/// Exports the results of `model` on `set` with everything they refer to into a new cache file.
pub fn export(
    reg: &Store,
    model: Id,
    set: &str,
    to: &std::path::Path,
) -> deltalogic::eval::cache::ExportReport {
    let (records, names) = eval::share::closure(reg, benchmarks::ALL, model, set).unwrap();
    deltalogic::eval::cache::export(reg, &records, &names, to).unwrap()
}

/// The `deltalogic` binary on `store`, to be given its arguments (and environment).
pub fn deltalogic(store: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_deltalogic"));
    c.arg("--store").arg(store);
    c
}

/// Runs the `deltalogic` binary on `store` and requires success.
pub fn dl(store: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = deltalogic(store).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "deltalogic {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Builds the set `name` of DeltaLogic episodes from generated theories in `store`: `per_type`
/// episodes of each cell, from `seed`.
pub fn build_generated(store: &std::path::Path, seed: &str, per_type: &str, name: &str) {
    dl(
        store,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            seed,
            "--per-type",
            per_type,
            "--name",
            name,
        ],
    );
}

/// A model file fetched by scripts/fetch_models.sh (into `DELTALOGIC_MODELS` or `models/`). A test
/// that reads one carries `#[cfg_attr(models_missing, ignore = "...")]`: build.rs sets
/// `models_missing` when the files are absent outside CI, so such a test is reported as ignored,
/// never as a pass; here, a missing file is a failure naming it.
pub fn fetched_model(file: &str) -> std::path::PathBuf {
    let dir = std::env::var_os("DELTALOGIC_MODELS").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models"),
        std::path::PathBuf::from,
    );
    let p = dir.join(file);
    assert!(
        p.is_file(),
        "{} is missing: run scripts/fetch_models.sh",
        p.display()
    );
    p
}

/// `rel` (a dataset's folder of `deltalogic::datasets::home::DATASETS`, or a path inside one) in
/// the datasets folder the commands use (`home::find`: DELTALOGIC_DATASETS, else
/// ../shared/datasets beside the checkout, else the XDG one). A test that reads a dataset
/// carries `#[cfg_attr(dataset_missing = "FOLDER", ignore = "...")]`: build.rs sets it when that
/// dataset's files are absent outside CI, so such a test is reported as ignored, never as a
/// pass; here, a missing path is a failure naming it and the folder.
pub fn dataset(rel: &str) -> std::path::PathBuf {
    use deltalogic::datasets::home;
    let home = home::find(None).unwrap_or_else(|e| panic!("{e}"));
    let p = home.dir.join(rel);
    assert!(
        p.exists(),
        "{} is missing: the datasets folder {} is {}; the README's \"Before you start\" says \
         where each dataset comes from, `deltalogic datasets where` checks them",
        p.display(),
        home.dir.display(),
        home.chosen.reason()
    );
    p
}

/// A copy in `dir` of a fetched vocabulary file (llama.cpp's `ggml-vocab-*.gguf`) with the
/// metadata `key` set to `value`, opened: the tokenizer tests' way to make the settings and the
/// malformed vocabularies no fetched file has.
pub fn vocab_with(
    file: &str,
    dir: &std::path::Path,
    key: &str,
    value: deltalogic::model::dev::gguf_write::Meta,
) -> deltalogic::model::format::gguf::Gguf {
    use deltalogic::model::format::gguf::Gguf;
    let src = Gguf::open(fetched_model(file)).unwrap_or_else(|e| panic!("{e}"));
    let mut w = deltalogic::model::dev::gguf_write::GgufWriter::from_gguf(&src)
        .unwrap_or_else(|e| panic!("{e}"));
    w.kv(key, value);
    let path = dir.join(format!("{}.gguf", key.replace('.', "-")));
    w.write(&path).unwrap_or_else(|e| panic!("{e}"));
    Gguf::open(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The fetched SmolLM2 file (`fetched_model`).
pub fn smollm2() -> std::path::PathBuf {
    fetched_model("SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// The project's root: fixtures, goldens and the fetched models are found from it.
pub fn root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A label-scoring golden of `fixtures/golden/` (written by scripts/reference.py and
/// scripts/llamacpp_golden.py): per context, each label's tokens and per-token log-probs.
#[derive(serde::Deserialize)]
pub struct Golden {
    pub cases: Vec<GoldenCase>,
}

#[derive(serde::Deserialize)]
pub struct GoldenCase {
    pub context: String,
    pub context_tokens: Vec<u32>,
    pub labels: Vec<GoldenLabel>,
}

#[derive(serde::Deserialize)]
pub struct GoldenLabel {
    pub label: String,
    pub tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
}

/// The golden `fixtures/golden/<name>`; a missing or malformed file fails naming it.
pub fn golden(name: &str) -> Golden {
    let path = root().join("fixtures/golden").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The tiny Hugging Face llama fixture, copied to `to` with room for DeltaLogic's prompts (its
/// 512 positions are only a number in its config: rotary positions take any length).
pub fn tiny_llama(to: &std::path::Path) -> std::path::PathBuf {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hf/llama");
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    let config = to.join("config.json");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "\"max_position_embeddings\": 512",
            "\"max_position_embeddings\": 8192",
        ),
    )
    .unwrap();
    to.to_path_buf()
}

/// A file held in memory (`memfd_create`), opened by path through `/proc/self/fd`: the
/// multi-GB random-weight files the llama.cpp goldens were made from (issue 45) are written,
/// mapped and dropped without the disk's write-back, which took most of their tests' time.
/// The memory goes when the returned file and every map of it are dropped.
pub fn memory_file(name: &str) -> (std::fs::File, std::path::PathBuf) {
    use std::os::fd::FromRawFd;
    let c = std::ffi::CString::new(name).unwrap();
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    let fd = unsafe { libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    (
        file,
        std::path::PathBuf::from(format!("/proc/self/fd/{fd}")),
    )
}

/// Standard base64 (a browser's screenshots, tiktoken's ranks files); panics on other text.
pub fn base64(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("not base64: {e}"))
}
