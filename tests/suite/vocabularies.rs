//! llama.cpp's own tokenizer tests, run on our tokenizer: for each vocabulary-only GGUF that
//! llama.cpp ships (`models/ggml-vocab-<name>.gguf`), every input of its `.gguf.inp` must give
//! exactly the ids of its `.gguf.out`. llama.cpp's `tests/test-tokenizer-0.cpp` makes those
//! with `common_tokenize(ctx, text, add_special = false, parse_special = false)`: no BOS, control
//! tokens read as text, user-defined tokens matched. Our `encode_plain` reads control tokens as
//! text too and adds the BOS the file asks for, so that BOS is expected in front.
//!
//! The files come from the llama-cpp-python 0.3.36 sdist (scripts/fetch_models.sh); without them
//! these tests are ignored (build.rs), and under CI=true a missing file fails.

use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::tokenize::Tokenizer;

/// The cases of `ggml-vocab-<name>.gguf.inp` / `.out`, read as test-tokenizer-0.cpp reads them:
/// inputs separated by a marker line, one line of space-separated ids per input. It keeps them in
/// a map by input, so a repeated input is one case.
fn cases(name: &str) -> Vec<(String, Vec<u32>)> {
    let read = |ext: &str| {
        let path = crate::common::fetched_model(&format!("ggml-vocab-{name}.gguf.{ext}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let (inp, out) = (read("inp"), read("out"));
    const SEP: &str = "\n__ggml_vocab_test__\n";
    let mut inputs = Vec::new();
    let mut rest = inp.as_str();
    while !rest.is_empty() {
        match rest.find(SEP) {
            Some(at) => {
                inputs.push(rest[..at].to_string());
                rest = &rest[at + SEP.len()..];
            }
            None => {
                inputs.push(rest.to_string());
                rest = "";
            }
        }
    }
    let outputs: Vec<&str> = out.lines().collect();
    assert_eq!(
        inputs.len(),
        outputs.len(),
        "ggml-vocab-{name}: {} inputs, {} outputs",
        inputs.len(),
        outputs.len()
    );
    let mut cases: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    for (i, (text, ids)) in inputs.into_iter().zip(outputs).enumerate() {
        let ids = ids
            .split_whitespace()
            .map(|id| {
                id.parse()
                    .unwrap_or_else(|e| panic!("ggml-vocab-{name}.gguf.out:{}: {e}", i + 1))
            })
            .collect();
        cases.insert(text, ids);
    }
    cases.into_iter().collect()
}

fn tokenizer(name: &str) -> Tokenizer {
    let path = crate::common::fetched_model(&format!("ggml-vocab-{name}.gguf"));
    let gguf = Gguf::open(path).unwrap_or_else(|e| panic!("{e}"));
    Tokenizer::from_gguf(&gguf).unwrap_or_else(|e| panic!("{e}"))
}

/// Every case of vocabulary `name` tokenized as llama.cpp does; `bos`: the BOS id the file
/// makes llama.cpp add (checked with llama-cpp-python's `tokenize(add_bos=True)`).
fn check(name: &str, bos: Option<u32>) {
    let tok = tokenizer(name);
    let cases = cases(name);
    let mut wrong = Vec::new();
    for (text, ids) in &cases {
        let expected: Vec<u32> = bos.into_iter().chain(ids.iter().copied()).collect();
        let ours = tok.encode_plain(text).unwrap_or_else(|e| panic!("{e}"));
        if ours != expected {
            wrong.push(format!(
                "{text:?}\n  llama.cpp {expected:?}\n  ours      {ours:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "ggml-vocab-{name}: {} of {} cases differ from llama.cpp:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    eprintln!(
        "ggml-vocab-{name}: {} cases identical to llama.cpp",
        cases.len()
    );
}

/// Llama 2's SentencePiece vocabulary: scores as merge order, byte fallback, a space prefix.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn llama_spm() {
    check("llama-spm", Some(1));
}

/// Phi-3's SentencePiece vocabulary (Llama 2's with chat tokens; `</s>` is user-defined, so it
/// is matched even in plain text).
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn phi_3() {
    check("phi-3", Some(1));
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn llama_bpe() {
    check("llama-bpe", Some(128000));
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn qwen2() {
    check("qwen2", None);
}

/// Qwen3.5's vocabulary (`tokenizer.ggml.pre = "qwen35"`): Qwen2's split with combining marks
/// kept in a run of letters; its test text is the common one plus decomposed accents (`é`,
/// `résumé`, a long run of `à`, `Vieết Nam`).
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn qwen35() {
    check("qwen35", None);
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn gpt_2() {
    check("gpt-2", None);
}

/// Gemma 4's vocabulary (`tokenizer.ggml.model = "gemma4"`): SentencePiece's spaces and byte
/// tokens over merges of its own, a run of newlines that is a token taken whole, and the BOS
/// llama.cpp always adds for it.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn gemma_4() {
    check("gemma-4", Some(2));
}

/// llama.cpp's rule for Gemma 4 (its PR 21343): a run of newlines that is a token is taken
/// whole, not merged. The fetched vocabulary's merges reach every newline token anyway (runs of
/// 1 to 39 checked with Hugging Face's `tokenizers` on its merges), so a copy without the merges
/// that hold a newline shows the rule: `\n\n\n` stays one token, and a run longer than every
/// newline token falls back to merging.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn gemma_4_takes_a_run_of_newlines_that_is_a_token_whole() {
    use deltalogic::model::dev::gguf_write::Meta;
    let src = Gguf::open(crate::common::fetched_model("ggml-vocab-gemma-4.gguf"))
        .unwrap_or_else(|e| panic!("{e}"));
    let merges: Vec<String> = src
        .get_str_array("tokenizer.ggml.merges")
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|m| !m.contains('\n'))
        .map(str::to_string)
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let gguf = crate::common::vocab_with(
        "ggml-vocab-gemma-4.gguf",
        dir.path(),
        "tokenizer.ggml.merges",
        Meta::Strs(merges),
    );
    let tok = Tokenizer::from_gguf(&gguf).unwrap_or_else(|e| panic!("{e}"));
    let id = |t: &str| {
        tok.token_to_id(t)
            .unwrap_or_else(|| panic!("{t:?} is no token"))
    };
    let ids = tok
        .encode_plain("a\n\n\nb")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ids, [2, id("a"), id("\n\n\n"), id("b")]);
    // Longer than the longest newline token (31): no whole token, and no merges left.
    let run = "\n".repeat(40);
    let ids = tok.encode_plain(&run).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ids.len(), 41, "{ids:?}");
    assert!(ids[1..].iter().all(|&i| i == id("\n")), "{ids:?}");
}

/// Gemma 4's tokenizer is read, but its model is not implemented yet (per-layer embeddings,
/// shared-KV layers, two head sizes): a `gemma4` file is refused by its architecture's name.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn gemma_4_model_is_refused_by_name() {
    let path = crate::common::fetched_model("ggml-vocab-gemma-4.gguf");
    let e = deltalogic::model::scorer::check(&path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&path.display().to_string()) && e.contains("unknown architecture \"gemma4\""),
        "{e}"
    );
}

/// With control tokens read (`encode`, `llama-tokenize`'s default): Phi-3's files drop the
/// whitespace after a special token, except after `<s>` and `<unk>`, and a text run after one
/// gets the space prefix; Llama 2's do neither; unknown-type tokens (`<unk>`, `[PAD32011]`) are
/// read as control tokens. The ids are llama-cpp-python 0.3.36's
/// `tokenize(text, add_bos=True, special=True)`.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn special_tokens_and_whitespace() {
    let text = "<|user|>\n  Hi</s>  x<s> y<unk>z [PAD32011] ";
    for (name, ids) in [
        (
            "phi-3",
            vec![1, 32010, 6324, 2, 921, 1, 29871, 343, 0, 503, 29871, 32011],
        ),
        (
            "llama-spm",
            vec![
                1, 529, 29989, 1792, 29989, 29958, 13, 29871, 6324, 2, 259, 921, 1, 29871, 343, 0,
                503, 518, 29925, 3035, 29941, 29906, 29900, 29896, 29896, 29962, 29871,
            ],
        ),
    ] {
        let ours = tokenizer(name)
            .encode(text)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ours, ids, "ggml-vocab-{name}: {text:?}");
    }
}

/// SentencePiece decoding gives back the text: spaces for `▁`, bytes joined, the prefix gone
/// (Llama 2's), and the same with Gemma 4's merges.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn spm_decode_inverts_encode() {
    for name in ["llama-spm", "gemma-4"] {
        let tok = tokenizer(name);
        for (text, _) in cases(name) {
            let ids = tok.encode_plain(&text).unwrap_or_else(|e| panic!("{e}"));
            let back = tok.decode(&ids[1..]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(back, text, "{name}: {ids:?}");
        }
    }
}

/// What the SentencePiece reader does not implement is refused by name: a vocabulary without
/// all 256 byte tokens, `remove_extra_whitespaces`, and tokenizer models other than byte-level
/// BPE, SentencePiece and Gemma 4's (T5's Unigram `t5` among them).
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn spm_refusals() {
    use deltalogic::model::dev::gguf_write::Meta;
    let src = Gguf::open(crate::common::fetched_model("ggml-vocab-llama-spm.gguf"))
        .unwrap_or_else(|e| panic!("{e}"));
    let tokens: Vec<String> = src
        .get_str_array("tokenizer.ggml.tokens")
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|t| t.replace("<0x41>", "<0x41 renamed>"))
        .collect();
    for (case, key, value, message) in [
        (
            "bytes",
            "tokenizer.ggml.tokens",
            Meta::Strs(tokens),
            "without the byte token <0x41> is not supported",
        ),
        (
            "whitespace",
            "tokenizer.ggml.remove_extra_whitespaces",
            Meta::Bool(true),
            "tokenizer.ggml.remove_extra_whitespaces is not supported",
        ),
        (
            "t5",
            "tokenizer.ggml.model",
            Meta::Str("t5".into()),
            "tokenizer.ggml.model \"t5\" is not supported",
        ),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let gguf = crate::common::vocab_with("ggml-vocab-llama-spm.gguf", dir.path(), key, value);
        let e = Tokenizer::from_gguf(&gguf).unwrap_err().to_string();
        assert!(
            e.contains(&gguf.path().display().to_string()) && e.contains(message),
            "{case}: {e}"
        );
    }
}
