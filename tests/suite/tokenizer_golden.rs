//! Our GGUF tokenizers must give exactly llama.cpp's ids (`llama-tokenize`) on every string of
//! fixtures/tokens/<model>.jsonl, made by scripts/make_token_goldens.py (byte-level BPE) and
//! scripts/llamacpp_vocab_goldens.py (SentencePiece, and the settings written into copies of
//! the fetched vocabularies: the same strings).
//!
//! Models are looked up in $DELTALOGIC_MODELS or models/ (scripts/fetch_models.sh); without them
//! these tests are ignored (build.rs), and under CI=true a missing model fails.

use std::path::PathBuf;

use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::tokenize::Tokenizer;

struct Golden {
    text: String,
    ids: Vec<u32>,
}

fn goldens(name: &str) -> Vec<Golden> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/tokens/{name}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            let ids = v["ids"].as_array().expect("ids array");
            Golden {
                text: v["text"].as_str().expect("text string").to_string(),
                ids: ids
                    .iter()
                    .map(|id| id.as_u64().expect("id") as u32)
                    .collect(),
            }
        })
        .collect()
}

/// The tokenizer of a fetched model file.
fn tokenizer(file: &str) -> Tokenizer {
    let gguf = Gguf::open(crate::common::fetched_model(file)).unwrap_or_else(|e| panic!("{e}"));
    Tokenizer::from_gguf(&gguf).unwrap_or_else(|e| panic!("{e}"))
}

fn check(name: &str, file: &str) {
    check_tokenizer(name, &tokenizer(file));
}

fn check_tokenizer(name: &str, tok: &Tokenizer) {
    let goldens = goldens(name);
    assert!(
        goldens.len() >= 500,
        "{name}: only {} golden strings",
        goldens.len()
    );
    let mut wrong = Vec::new();
    for g in &goldens {
        let ids = tok.encode(&g.text).unwrap_or_else(|e| panic!("{e}"));
        if ids != g.ids {
            wrong.push(format!(
                "{:?}\n  llama.cpp {:?}\n  ours      {:?}",
                g.text, g.ids, ids
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{name}: {} of {} strings tokenized differently from llama.cpp:\n{}",
        wrong.len(),
        goldens.len(),
        wrong
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "{name}: {} golden strings identical to llama.cpp",
        goldens.len()
    );
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn smollm2_matches_llama_cpp() {
    check(
        "smollm2-135m-instruct-q4_1",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
    );
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn qwen2_5_matches_llama_cpp() {
    check(
        "qwen2.5-coder-0.5b-instruct",
        "Qwen2.5-Coder-0.5B-Instruct.gguf",
    );
}

/// Llama 3's vocabulary: the llama-bpe pre-tokenizer, merges ignored for whole-word tokens, and a
/// BOS added because the file says so.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn llama3_vocab_matches_llama_cpp() {
    check("llama3-vocab", "ggml-vocab-llama-bpe.gguf");
}

/// Llama 2's SentencePiece vocabulary: merges by score, byte fallback, the space prefix, BOS.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn llama_spm_vocab_matches_llama_cpp() {
    check("llama-spm-vocab", "ggml-vocab-llama-spm.gguf");
}

/// Phi-3's: whitespace after its chat tokens dropped, `</s>` user-defined.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn phi3_vocab_matches_llama_cpp() {
    check("phi3-vocab", "ggml-vocab-phi-3.gguf");
}

/// Gemma's files say `tokenizer.ggml.add_space_prefix = false`; no Gemma vocabulary is
/// fetched, so the key is written into a copy of Llama 2's (llama.cpp's golden set it by a
/// key override).
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn spm_without_space_prefix_matches_llama_cpp() {
    let dir = tempfile::tempdir().expect("temp dir");
    let gguf = crate::common::vocab_with(
        "ggml-vocab-llama-spm.gguf",
        dir.path(),
        "tokenizer.ggml.add_space_prefix",
        deltalogic::model::dev::gguf_write::Meta::Bool(false),
    );
    let tok = Tokenizer::from_gguf(&gguf).unwrap_or_else(|e| panic!("{e}"));
    check_tokenizer("llama-spm-vocab-no-space-prefix", &tok);
}

/// GPT-4o's split (`tokenizer.ggml.pre = "gpt-4o"`, Phi-4-mini's): no o200k vocabulary is
/// fetched, so the key is written into copies of Qwen2's and Llama 3's vocabularies (llama.cpp's
/// goldens set it by a key override). The split decides the pieces, the merges inside them are
/// each vocabulary's; Llama 3's has the 2- and 3-digit tokens that show the digit runs.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn gpt4o_split_matches_llama_cpp() {
    for (golden, file) in [
        ("gpt-4o-vocab", "ggml-vocab-qwen2.gguf"),
        ("gpt-4o-llama3-vocab", "ggml-vocab-llama-bpe.gguf"),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let gguf = crate::common::vocab_with(
            file,
            dir.path(),
            "tokenizer.ggml.pre",
            deltalogic::model::dev::gguf_write::Meta::Str("gpt-4o".into()),
        );
        let tok = Tokenizer::from_gguf(&gguf).unwrap_or_else(|e| panic!("{e}"));
        check_tokenizer(golden, &tok);
    }
}

/// Byte-level BPE loses nothing: decoding gives back the text.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn decode_inverts_encode() {
    let tok = tokenizer("SmolLM2-135M-Instruct.Q4_1.gguf");
    for g in goldens("smollm2-135m-instruct-q4_1") {
        let ids = tok.encode(&g.text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tok.decode(&ids).unwrap_or_else(|e| panic!("{e}")), g.text);
    }
}

/// A tokenizer.json written from the GGUF tokenizer loads through the Hugging Face path and
/// tokenizes the same.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn hf_file_round_trip() {
    let tok = tokenizer("Qwen2.5-Coder-0.5B-Instruct.gguf");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tokenizer.json");
    tok.inner().save(&path, false).expect("save tokenizer.json");
    let hf = Tokenizer::from_hf_file(&path).unwrap_or_else(|e| panic!("{e}"));
    for g in goldens("qwen2.5-coder-0.5b-instruct").iter().step_by(7) {
        assert_eq!(
            hf.encode(&g.text).unwrap_or_else(|e| panic!("{e}")),
            g.ids,
            "{:?}",
            g.text
        );
    }
}
