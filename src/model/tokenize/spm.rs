//! SentencePiece vocabularies in GGUF files (`tokenizer.ggml.model = "llama"`: Llama 1/2,
//! Phi-3, Gemma 2/3), tokenized as llama.cpp's `llm_tokenizer_spm` does; and Gemma 4's
//! (`"gemma4"`), SentencePiece's conventions over merges of its own ([`gemma4`]).
//!
//! Such a file has tokens, scores and token types but no merges. llama.cpp splits the text into
//! characters and keeps merging the adjacent pair whose concatenation is a token of the highest
//! score (the leftmost pair on a tie); a character that is no token is written as its UTF-8
//! bytes, `<0xXX>`. The same procedure is a byte-level-free BPE whose merge ranks are the scores
//! of the merged tokens, as Hugging Face's SentencePiece converters build it, so it is built
//! here as a `tokenizers` BPE with byte fallback: the encoder, decoder and `tokenizer.json`
//! export stay one code path for every vocabulary.
//!
//! Where the two could part: BPE ranks are distinct, so two *different* tokens of equal score
//! that are both mergeable at once are merged in rank order (here: lower token id first), where
//! llama.cpp takes the leftmost. Real vocabularies give merged tokens distinct scores; the
//! llama.cpp vocabulary tests in `tests/suite/vocabularies.rs` check it.
//!
//! Spaces become `▁` (U+2581); with `tokenizer.ggml.add_space_prefix` (default true, false in
//! Gemma's files) a `▁` is put before each text run that starts the prompt or follows a special
//! token, as llama.cpp does.

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{DecoderWrapper, SplitDelimiterBehavior};

use crate::model::format::gguf::Gguf;
use crate::model::ModelError;

/// llama.cpp's token type of a byte-fallback token (`<0xXX>`).
const TOKEN_BYTE: i32 = 6;

/// SentencePiece's space.
const SPACE: &str = "\u{2581}";

/// A SentencePiece vocabulary as a `tokenizers` tokenizer (no added tokens, no BOS: the caller
/// adds those for every kind of vocabulary alike). `vocab` is the token-to-id map, last id
/// winning on a repeated string as in llama.cpp.
pub fn tokenizer(
    gguf: &Gguf,
    tokens: &[&str],
    types: &[i32],
    vocab: Vocab,
) -> Result<tokenizers::Tokenizer, ModelError> {
    let err = |detail: String| ModelError::Tokenizer {
        path: gguf.path().to_path_buf(),
        detail,
    };
    let scores = gguf.get_f32_array("tokenizer.ggml.scores")?;
    if scores.len() != tokens.len() {
        return Err(err(format!(
            "{} scores for {} tokens",
            scores.len(),
            tokens.len()
        )));
    }
    all_byte_tokens(gguf, &vocab)?;
    let add_space_prefix = match gguf.get("tokenizer.ggml.add_space_prefix") {
        Some(_) => gguf.get_bool("tokenizer.ggml.add_space_prefix")?,
        None => true,
    };
    if gguf
        .get("tokenizer.ggml.remove_extra_whitespaces")
        .is_some()
        && gguf.get_bool("tokenizer.ggml.remove_extra_whitespaces")?
    {
        return Err(err(
            "tokenizer.ggml.remove_extra_whitespaces is not supported".into(),
        ));
    }

    let bpe = BPE::builder()
        .vocab_and_merges(vocab.clone(), merges(tokens, types, &scores, &vocab))
        .byte_fallback(true)
        .build()
        .map_err(|e| err(format!("SentencePiece merges: {e}")))?;
    let mut inner = tokenizers::Tokenizer::new(bpe);

    let replace = Replace::new(" ", SPACE).map_err(|e| err(format!("normalizer: {e}")))?;
    let mut normalizers = vec![replace.into()];
    let mut decoders = spaces_and_bytes_decoders(gguf)?;
    if add_space_prefix {
        normalizers.insert(0, Prepend::new(SPACE.into()).into());
        // The prefix is not part of the text (llama.cpp's detokenizer drops it too).
        decoders.push(Strip::new(' ', 1, 0).into());
    }
    inner.with_normalizer(Some(NormalizerSequence::new(normalizers)));
    inner.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok(inner)
}

/// Gemma 4's vocabulary (`tokenizer.ggml.model = "gemma4"`, llama.cpp's `gemma4` pre-tokenizer):
/// SentencePiece's conventions (spaces as `▁`, no space prefix, `<0xXX>` byte fallback) over a
/// BPE with the file's own merges (`tokenizer.ggml.merges`, ranked in file order) on raw UTF-8,
/// not GPT-2's byte alphabet. llama.cpp merges within runs of newlines and runs of anything else
/// (its split `[^\n]+|[\n]+`); a run of newlines that is itself a token is taken whole, which
/// [`super::tokenizer::Tokenizer`] does before this tokenizer sees the run.
pub fn gemma4(
    gguf: &Gguf,
    vocab: Vocab,
    merges: Vec<(String, String)>,
) -> Result<tokenizers::Tokenizer, ModelError> {
    let err = |detail: String| ModelError::Tokenizer {
        path: gguf.path().to_path_buf(),
        detail,
    };
    all_byte_tokens(gguf, &vocab)?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(true)
        .build()
        .map_err(|e| err(format!("gemma4 BPE: {e}")))?;
    let mut inner = tokenizers::Tokenizer::new(bpe);
    let replace = Replace::new(" ", SPACE).map_err(|e| err(format!("normalizer: {e}")))?;
    inner.with_normalizer(Some(replace));
    let split = Split::new(
        SplitPattern::Regex(NEWLINE_RUNS.into()),
        SplitDelimiterBehavior::Isolated,
        false,
    )
    .map_err(|e| err(format!("regex {NEWLINE_RUNS:?}: {e}")))?;
    inner.with_pre_tokenizer(Some(split));
    inner.with_decoder(Some(DecoderSequence::new(spaces_and_bytes_decoders(gguf)?)));
    Ok(inner)
}

/// llama.cpp's split for the `gemma4` pre-tokenizer.
const NEWLINE_RUNS: &str = "[^\n]+|[\n]+";

/// llama.cpp falls back to `<0xXX>` tokens, then to a one-byte token, then fails (BPE: drops
/// the byte); every real vocabulary of this kind has all 256 byte tokens, and only that case is
/// built.
fn all_byte_tokens(gguf: &Gguf, vocab: &Vocab) -> Result<(), ModelError> {
    match (0..=255u8).find(|b| !vocab.contains_key(&format!("<0x{b:02X}>"))) {
        Some(b) => Err(ModelError::Tokenizer {
            path: gguf.path().to_path_buf(),
            detail: format!(
                "SentencePiece vocabulary without the byte token <0x{b:02X}> is not supported \
                 (byte fallback needs all 256)"
            ),
        }),
        None => Ok(()),
    }
}

/// `▁` back to a space, `<0xXX>` tokens back to their bytes, joined.
fn spaces_and_bytes_decoders(gguf: &Gguf) -> Result<Vec<DecoderWrapper>, ModelError> {
    let space = Replace::new(SPACE, " ").map_err(|e| ModelError::Tokenizer {
        path: gguf.path().to_path_buf(),
        detail: format!("decoder: {e}"),
    })?;
    Ok(vec![
        space.into(),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ])
}

/// Every split of a token into two tokens, as a merge, highest score of the merged token first
/// (lower id first on equal scores). Byte tokens take no part: llama.cpp merges text, and a
/// byte token's text `<0xXX>` is not the byte.
fn merges(tokens: &[&str], types: &[i32], scores: &[f32], vocab: &Vocab) -> Vec<(String, String)> {
    let mergeable = |t: &str| {
        vocab
            .get(t)
            .is_some_and(|&id| types[id as usize] != TOKEN_BYTE)
    };
    let mut ranked: Vec<(f32, u32, String, String)> = Vec::new();
    for (id, token) in tokens.iter().enumerate() {
        // A repeated string is merged into the id the map gives it.
        if types[id] == TOKEN_BYTE || vocab.get(*token) != Some(&(id as u32)) {
            continue;
        }
        for (at, _) in token.char_indices().skip(1) {
            let (left, right) = token.split_at(at);
            if mergeable(left) && mergeable(right) {
                ranked.push((scores[id], id as u32, left.into(), right.into()));
            }
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().map(|(_, _, l, r)| (l, r)).collect()
}
