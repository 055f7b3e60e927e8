//! Tokenizers for GGUF files and Hugging Face `tokenizer.json` files, built on the `tokenizers`
//! crate.
//!
//! A GGUF file carries either a byte-level BPE vocabulary, merges and token types, naming its
//! pre-tokenizer (`tokenizer.ggml.pre`), or a SentencePiece vocabulary with scores, or Gemma 4's
//! SentencePiece-style vocabulary with merges ([`spm`]); this module rebuilds what llama.cpp does
//! from them so that ids match
//! `llama-tokenize` exactly (checked against golden files in `tests/suite/tokenizer_golden.rs`
//! and llama.cpp's own vocabulary tests in `tests/suite/vocabularies.rs`).
//!
//! # Control tokens come from templates only
//! A prompt is a template's text around content: items, labels, generations. The text of a
//! control token (`<|im_end|>`, `<|endoftext|>`) in the content must stay text, or a dataset
//! could end a chat turn. So [`Tokenizer::encode_prompt`] reads control tokens only inside the
//! template's own markup, which a template marks with [`markup`] (the chat renderer marks
//! everything of its output but the messages' content); everything else is plain text, as
//! `llama-tokenize` without `--parse-special` reads it (user-defined tokens are still matched).
//! The marks are two Unicode noncharacters, never part of interchange text; [`plain`] strips
//! them from content, and tokenizing drops them. [`Tokenizer::encode`] reads control tokens
//! everywhere, as `llama-tokenize` does by default.

mod spm;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, Encoding, SplitDelimiterBehavior};

use crate::model::format::gguf::Gguf;
use crate::model::ModelError;

/// llama.cpp's token types (`llama_token_type`) that are matched as whole added tokens. It
/// reads unknown-type tokens (SentencePiece's `<unk>`, Phi-3's `[PAD…]`) as control tokens.
const TOKEN_UNKNOWN: i32 = 2;
const TOKEN_CONTROL: i32 = 3;
const TOKEN_USER_DEFINED: i32 = 4;

/// GPT-2's split, as llama.cpp writes it.
const GPT2_REGEX: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
/// Llama 3's split (digits in runs of up to three), case-insensitive contractions spelled out
/// as llama.cpp does.
const LLAMA3_REGEX: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's split: as Llama 3's, but every digit alone.
const QWEN2_REGEX: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen3.5's split: as Qwen2's, but a run of letters takes combining marks (`\p{M}`) with it, and
/// the punctuation run stops at one.
const QWEN35_REGEX: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GPT-4o's split (`o200k`: Phi-4-mini), as llama.cpp rewrites tokenizer.json's: upper and
/// lower case by lookahead and ASCII ranges rather than `\p{Lu}`/`\p{Ll}`, so that a non-ASCII
/// letter counts as both (as in llama.cpp's collapsed matching), contractions spelled out.
const GPT4O_REGEX: &str = r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Mistral's `tekken` split (Mistral Nemo, Ministral 3), as llama.cpp rewrites tekken.json's:
/// GPT-4o's case classes by lookahead, but no contractions and every digit alone.
const TEKKEN_REGEX: &str = r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The `tokenizer.ggml.pre` values understood, and llama.cpp's regex sequence for each.
/// `ignore_merges`: a piece that is itself a vocabulary entry is taken whole (Llama 3).
/// `add_bos`: llama.cpp's default when the file has no `tokenizer.ggml.add_bos_token`.
struct PreTokenizer {
    regexes: &'static [&'static str],
    ignore_merges: bool,
    add_bos: bool,
}

fn pre_tokenizer(pre: &str) -> Option<PreTokenizer> {
    let (regexes, ignore_merges): (&'static [&'static str], bool) = match pre {
        "llama3" | "llama-v3" | "llama-bpe" => (&[LLAMA3_REGEX], true),
        "qwen2" | "deepseek-r1-qwen" | "megrez" => (&[QWEN2_REGEX], false),
        "qwen35" => (&[QWEN35_REGEX], false),
        "smollm" | "starcoder" | "refact" => (&[r"\p{N}", GPT2_REGEX], false),
        "gpt-2" => (&[GPT2_REGEX], false),
        "gpt-4o" => (&[GPT4O_REGEX], false),
        "tekken" => (&[TEKKEN_REGEX], true),
        _ => return None,
    };
    // Llama 3 and tekken, the two that take vocabulary pieces whole, are also the two that
    // llama.cpp gives a BOS by default.
    Some(PreTokenizer {
        regexes,
        ignore_merges,
        add_bos: ignore_merges,
    })
}

const SUPPORTED_PRE: &str = "llama3, llama-v3, llama-bpe, qwen2, deepseek-r1-qwen, megrez, qwen35, smollm, starcoder, refact, gpt-2, gpt-4o, tekken";

/// `tokenizer.ggml.merges` as pairs. Byte-level tokens never contain a space, so the first space
/// after the first character separates the pair (as in llama.cpp).
fn merges(gguf: &Gguf) -> Result<Vec<(String, String)>, ModelError> {
    let merges = gguf.get_str_array("tokenizer.ggml.merges")?;
    merges
        .into_iter()
        .map(|m| {
            let at = m.char_indices().skip(1).find(|&(_, c)| c == ' ');
            at.map(|(i, _)| (m[..i].to_string(), m[i + 1..].to_string()))
                .ok_or_else(|| ModelError::Tokenizer {
                    path: gguf.path().to_path_buf(),
                    detail: format!("merge {m:?} has no space"),
                })
        })
        .collect()
}

/// A byte-level BPE from `tokenizer.ggml.merges`, split first by the pre-tokenizer's regexes.
fn byte_level_bpe(
    gguf: &Gguf,
    pre: &PreTokenizer,
    vocab: Vocab,
) -> Result<tokenizers::Tokenizer, ModelError> {
    let err = |detail: String| ModelError::Tokenizer {
        path: gguf.path().to_path_buf(),
        detail,
    };
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges(gguf)?)
        .ignore_merges(pre.ignore_merges)
        .build()
        .map_err(|e| err(format!("BPE: {e}")))?;
    let mut inner = tokenizers::Tokenizer::new(bpe);
    let mut splits = pre
        .regexes
        .iter()
        .map(|re| {
            Split::new(
                SplitPattern::Regex(re.to_string()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map(PreTokenizerWrapper::Split)
            .map_err(|e| err(format!("regex {re:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    splits.push(ByteLevel::new(false, false, false).into());
    inner.with_pre_tokenizer(Some(Sequence::new(splits)));
    inner.with_decoder(Some(ByteLevelDecoder::default()));
    Ok(inner)
}

/// Which special tokens drop the whitespace after them. llama.cpp (`llama_vocab::impl::load`)
/// does so for the control and user-defined tokens of a file whose `general.name` says Phi-3
/// (but not `<unk>`, `<s>`, `<|endoftext|>`), as Phi-3's own tokenizer.json does; for no other.
fn rstrip_after_special(gguf: &Gguf) -> Result<impl Fn(&str) -> bool, ModelError> {
    let name = match gguf.get("general.name") {
        Some(_) => gguf.get_str("general.name")?.to_lowercase(),
        None => String::new(),
    };
    let phi3 = name.contains("phi-3") || name.contains("phi3");
    Ok(move |token: &str| phi3 && !matches!(token, "<unk>" | "<s>" | "<|endoftext|>"))
}

/// `pieces` with the leading whitespace (C's `isspace`, as llama.cpp strips it) taken off each
/// text run that follows a control token with `rstrip`; a run left empty is dropped.
fn rstrip<'a>(pieces: Vec<Piece<'a>>) -> Vec<Piece<'a>> {
    let mut out = Vec::with_capacity(pieces.len());
    let mut strip = false;
    for piece in pieces {
        match piece {
            Piece::Text(text) if strip => {
                let kept = text.trim_start_matches([' ', '\t', '\n', '\x0B', '\x0C', '\r']);
                if !kept.is_empty() {
                    out.push(Piece::Text(Cow::Owned(kept.to_string())));
                }
                strip = false;
            }
            Piece::Text(text) => out.push(Piece::Text(text)),
            Piece::Control(token) => {
                strip = token.rstrip;
                out.push(Piece::Control(token));
            }
        }
    }
    out
}

/// The encoding of the one token `id`, whose text is `text`.
fn one_token(id: u32, text: &str) -> Encoding {
    Encoding::new(
        vec![id],
        vec![0],
        vec![text.to_string()],
        vec![None],
        vec![(0, 0)],
        vec![1],
        vec![1],
        Vec::new(),
        Default::default(),
    )
}

/// Where a template's markup begins in a prompt: only inside it is control-token text read as
/// the control token (module docs). A Unicode noncharacter (U+FDD0).
pub const MARKUP_OPEN: char = '\u{FDD0}';
/// Where a template's markup ends (U+FDD1).
pub const MARKUP_CLOSE: char = '\u{FDD1}';

/// `text` as a template's own markup: control-token text in it is read as control tokens.
pub fn markup(text: &str) -> String {
    format!("{MARKUP_OPEN}{}{MARKUP_CLOSE}", plain(text))
}

/// `text` as content: without markup marks, so nothing in it is read as a control token.
pub fn plain(text: &str) -> Cow<'_, str> {
    if text.contains([MARKUP_OPEN, MARKUP_CLOSE]) {
        Cow::Owned(text.replace([MARKUP_OPEN, MARKUP_CLOSE], ""))
    } else {
        Cow::Borrowed(text)
    }
}

/// A tokenizer and the special-token facts the scorer needs.
pub struct Tokenizer {
    /// Encodes control-token text as text (`encode_special_tokens`): control tokens are found
    /// by [`Tokenizer::pieces`], where they may be.
    inner: tokenizers::Tokenizer,
    source: PathBuf,
    kind: String,
    bos: Option<u32>,
    eos: Option<u32>,
    /// The control tokens by first character, each list longest first.
    control: BTreeMap<char, Vec<Control>>,
    /// A run of newlines that is a token is that token, not its merges (llama.cpp's rule for
    /// Gemma 4, see `spm::gemma4`).
    newline_runs: bool,
}

/// A control token: its text, its id, and whether the whitespace after it is dropped (the
/// added token's `rstrip`, as Phi-3's files ask).
struct Control {
    text: String,
    id: u32,
    rstrip: bool,
}

/// A run of a prompt: text, or a control token.
enum Piece<'a> {
    Text(Cow<'a, str>),
    Control(&'a Control),
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("source", &self.source)
            .field("vocab", &self.inner.get_vocab_size(true))
            .field("bos", &self.bos)
            .field("eos", &self.eos)
            .finish()
    }
}

impl Tokenizer {
    /// Builds the tokenizer described by a GGUF file's `tokenizer.ggml.*` metadata: byte-level
    /// BPE (`tokenizer.ggml.model = "gpt2"`) with the pre-tokenizers listed in [`SUPPORTED_PRE`],
    /// SentencePiece (`"llama"`, module [`spm`]) or Gemma 4's BPE (`"gemma4"`, the same
    /// module). Anything else is refused by name.
    pub fn from_gguf(gguf: &Gguf) -> Result<Tokenizer, ModelError> {
        let path = gguf.path();
        let err = |detail: String| ModelError::Tokenizer {
            path: path.to_path_buf(),
            detail,
        };
        let model = gguf.get_str("tokenizer.ggml.model")?;
        let tokens = gguf.get_str_array("tokenizer.ggml.tokens")?;
        let types = match gguf.get("tokenizer.ggml.token_type") {
            Some(_) => gguf.get_i32_array("tokenizer.ggml.token_type")?,
            None => vec![1; tokens.len()],
        };
        if types.len() != tokens.len() {
            return Err(err(format!(
                "{} token types for {} tokens",
                types.len(),
                tokens.len()
            )));
        }
        let id = |i: usize| u32::try_from(i).map_err(|_| err("too many tokens".into()));
        // Where a string repeats, the last id wins, as in llama.cpp's token-to-id map.
        let mut vocab = Vocab::default();
        for (i, t) in tokens.iter().enumerate() {
            vocab.insert(t.to_string(), id(i)?);
        }

        let (mut inner, default_add_bos, kind) = match model {
            "gpt2" => {
                let pre_name = gguf.get_str("tokenizer.ggml.pre")?;
                let pre = pre_tokenizer(pre_name).ok_or_else(|| {
                    err(format!(
                        "pre-tokenizer {pre_name:?} is not supported ({SUPPORTED_PRE})"
                    ))
                })?;
                let kind = format!("byte-level BPE (gpt2, pre-tokenizer {pre_name})");
                (byte_level_bpe(gguf, &pre, vocab)?, pre.add_bos, kind)
            }
            // llama.cpp gives every SentencePiece vocabulary a BOS unless the file says not.
            "llama" => (
                spm::tokenizer(gguf, &tokens, &types, vocab)?,
                true,
                "SentencePiece (llama: scores, byte fallback)".to_string(),
            ),
            "gemma4" => (
                spm::gemma4(gguf, vocab, merges(gguf)?)?,
                true,
                "BPE (gemma4: SentencePiece spaces and bytes, its own merges)".to_string(),
            ),
            _ => {
                return Err(err(format!(
                    "tokenizer.ggml.model {model:?} is not supported (\"gpt2\": byte-level BPE, \
                     \"llama\": SentencePiece, \"gemma4\")"
                )))
            }
        };

        // Control, unknown and user-defined tokens are matched whole wherever their text
        // appears, as llama-tokenize does (it parses special tokens by default); all but the
        // user-defined ones are special, read only where control tokens are.
        let rstrip = rstrip_after_special(gguf)?;
        let added: Vec<AddedToken> = tokens
            .iter()
            .zip(&types)
            .filter(|(_, &ty)| matches!(ty, TOKEN_UNKNOWN | TOKEN_CONTROL | TOKEN_USER_DEFINED))
            .map(|(t, &ty)| {
                AddedToken::from(t.to_string(), ty != TOKEN_USER_DEFINED)
                    .normalized(false)
                    .rstrip(rstrip(t))
            })
            .collect();
        inner.add_special_tokens(&added);

        let special_id = |key: &str| -> Result<Option<u32>, ModelError> {
            match gguf.get(key) {
                None => Ok(None),
                Some(_) => {
                    let id = gguf.get_u32(key)?;
                    match tokens.get(id as usize) {
                        Some(_) => Ok(Some(id)),
                        None => Err(err(format!(
                            "{key} = {id} is outside the vocabulary of {}",
                            tokens.len()
                        ))),
                    }
                }
            }
        };
        let bos = special_id("tokenizer.ggml.bos_token_id")?;
        let eos = special_id("tokenizer.ggml.eos_token_id")?;
        // llama.cpp adds Gemma 4's BOS even where the file says not.
        let add_bos = model == "gemma4"
            || match gguf.get("tokenizer.ggml.add_bos_token") {
                Some(_) => gguf.get_bool("tokenizer.ggml.add_bos_token")?,
                None => default_add_bos,
            };
        if add_bos {
            let bos = bos.ok_or_else(|| err("add_bos_token is set but no bos_token_id".into()))?;
            let bos_text = tokens[bos as usize].to_string();
            let template = TemplateProcessing::builder()
                .try_single(format!("{bos_text} $A"))
                .and_then(|b| {
                    b.special_tokens(vec![(bos_text, bos)])
                        .build()
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| err(format!("BOS template: {e}")))?;
            inner.with_post_processor(Some(template));
        }
        let mut tokenizer = Tokenizer::new(inner, path, kind, bos, eos);
        tokenizer.newline_runs = model == "gemma4";
        Ok(tokenizer)
    }

    /// Loads a Hugging Face `tokenizer.json`. BOS/EOS come from a `tokenizer_config.json` beside
    /// it when there is one; whether BOS is added is the file's own post-processor's business.
    pub fn from_hf_file(path: impl AsRef<Path>) -> Result<Tokenizer, ModelError> {
        let path = path.as_ref();
        let err = |detail: String| ModelError::Tokenizer {
            path: path.to_path_buf(),
            detail,
        };
        if !path.is_file() {
            return Err(err("file not found".into()));
        }
        let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| err(e.to_string()))?;
        let config = path.with_file_name("tokenizer_config.json");
        let (bos, eos) = if config.is_file() {
            let cfg_err = |detail: String| ModelError::Tokenizer {
                path: config.clone(),
                detail,
            };
            let text = std::fs::read_to_string(&config).map_err(|e| cfg_err(e.to_string()))?;
            let json: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| cfg_err(e.to_string()))?;
            let special = |key: &str| {
                let v = &json[key];
                v.as_str()
                    .or_else(|| v["content"].as_str())
                    .and_then(|t| inner.token_to_id(t))
            };
            (special("bos_token"), special("eos_token"))
        } else {
            (None, None)
        };
        Ok(Tokenizer::new(
            inner,
            path,
            "tokenizer.json".into(),
            bos,
            eos,
        ))
    }

    /// The tokenizer around `inner`, whose special (control) tokens it then finds itself.
    fn new(
        mut inner: tokenizers::Tokenizer,
        path: &Path,
        kind: String,
        bos: Option<u32>,
        eos: Option<u32>,
    ) -> Tokenizer {
        let mut control: BTreeMap<char, Vec<Control>> = BTreeMap::new();
        for (id, token) in inner.get_added_tokens_decoder() {
            if let (true, Some(first)) = (token.special, token.content.chars().next()) {
                control.entry(first).or_default().push(Control {
                    text: token.content,
                    id,
                    rstrip: token.rstrip,
                });
            }
        }
        for tokens in control.values_mut() {
            tokens.sort_by(|a, b| b.text.len().cmp(&a.text.len()).then(a.id.cmp(&b.id)));
        }
        inner.set_encode_special_tokens(true);
        Tokenizer {
            inner,
            source: path.to_path_buf(),
            kind,
            bos,
            eos,
            control,
            newline_runs: false,
        }
    }

    /// What kind of tokenizer this is, for `model inspect`: the GGUF model and pre-tokenizer,
    /// or "tokenizer.json".
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Token ids for `text`, with BOS only where the model adds one. Control-token text such as
    /// `<|im_start|>` is matched as that token anywhere (`llama-tokenize`'s default).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.ids(self.pieces(text, true))
    }

    /// Token ids for a prompt: control-token text is matched as that token only inside the
    /// template's markup ([`markup`]); everything else is plain text. The marks are dropped.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.ids(self.pieces(text, false))
    }

    /// Token ids for plain text: no control token at all.
    pub fn encode_plain(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.ids(vec![Piece::Text(Cow::Borrowed(text))])
    }

    /// `text` cut into plain runs and control tokens: control tokens everywhere when
    /// `everywhere`, else only inside markup (whose marks are dropped).
    fn pieces<'a>(&'a self, text: &'a str, everywhere: bool) -> Vec<Piece<'a>> {
        let mut pieces = Vec::new();
        let mut run = String::new();
        let mut in_markup = everywhere;
        let mut at = 0;
        while at < text.len() {
            if !in_markup {
                // Plain text up to the next opening mark, whole.
                let end = text[at..].find(MARKUP_OPEN).map_or(text.len(), |i| at + i);
                run.extend(text[at..end].split(MARKUP_CLOSE));
                at = end
                    + if end < text.len() {
                        MARKUP_OPEN.len_utf8()
                    } else {
                        0
                    };
                in_markup = end < text.len();
                continue;
            }
            let c = text[at..].chars().next().expect("inside the text");
            if !everywhere && c == MARKUP_CLOSE {
                in_markup = false;
                at += c.len_utf8();
                continue;
            }
            let found = self.control.get(&c).and_then(|tokens| {
                tokens
                    .iter()
                    .find(|t| text[at..].starts_with(t.text.as_str()))
            });
            match found {
                Some(token) => {
                    if !run.is_empty() {
                        pieces.push(Piece::Text(Cow::Owned(std::mem::take(&mut run))));
                    }
                    pieces.push(Piece::Control(token));
                    at += token.text.len();
                }
                None => {
                    if everywhere || c != MARKUP_OPEN {
                        run.push(c);
                    }
                    at += c.len_utf8();
                }
            }
        }
        if !run.is_empty() {
            pieces.push(Piece::Text(Cow::Owned(run)));
        }
        rstrip(pieces)
    }

    /// The ids of `pieces`: each text run encoded alone (as the library does between added
    /// tokens), control tokens as they are, then the model's post-processing (BOS) once.
    fn ids(&self, pieces: Vec<Piece<'_>>) -> Result<Vec<u32>, ModelError> {
        let mut encodings = Vec::with_capacity(pieces.len());
        for piece in pieces {
            match piece {
                Piece::Text(text) if self.newline_runs => {
                    self.encode_by_runs(&text, &mut encodings)?
                }
                Piece::Text(text) => encodings.push(
                    self.inner
                        .encode_fast(text.as_ref(), false)
                        .map_err(|e| self.error(e))?,
                ),
                Piece::Control(token) => encodings.push(one_token(token.id, &token.text)),
            }
        }
        let encoding = self
            .inner
            .post_process(Encoding::merge(encodings, false), None, true)
            .map_err(|e| self.error(e))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// `text` encoded run by run: a run of newlines that is a token as that token, anything
    /// else by the tokenizer (`newline_runs`).
    fn encode_by_runs(&self, text: &str, out: &mut Vec<Encoding>) -> Result<(), ModelError> {
        let mut rest = text;
        while !rest.is_empty() {
            let newlines = rest.len() - rest.trim_start_matches('\n').len();
            let end = match newlines {
                0 => rest.find('\n').unwrap_or(rest.len()),
                n => n,
            };
            let (run, tail) = rest.split_at(end);
            match self.inner.token_to_id(run).filter(|_| newlines > 0) {
                Some(id) => out.push(one_token(id, run)),
                None => out.push(
                    self.inner
                        .encode_fast(run, false)
                        .map_err(|e| self.error(e))?,
                ),
            }
            rest = tail;
        }
        Ok(())
    }

    /// The control tokens of the vocabulary, by id.
    pub fn control_tokens(&self) -> Vec<(u32, String)> {
        let mut out: Vec<(u32, String)> = self
            .control
            .values()
            .flatten()
            .map(|t| (t.id, t.text.clone()))
            .collect();
        out.sort();
        out
    }

    /// Text for `ids`, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.inner.decode(ids, false).map_err(|e| self.error(e))
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    pub fn bos_id(&self) -> Option<u32> {
        self.bos
    }

    pub fn eos_id(&self) -> Option<u32> {
        self.eos
    }

    /// The tokens that end a generation: the end-of-sequence token and the end-of-turn tokens
    /// of the chat formats llama.cpp also treats as end of generation (its `special_eog_ids`),
    /// where the vocabulary has them. Sorted, without repeats.
    pub fn end_of_generation(&self) -> Vec<u32> {
        const END_OF_TURN: [&str; 5] = [
            "<|im_end|>",
            "<|endoftext|>",
            "<|eot_id|>",
            "<|end|>",
            "<end_of_turn>",
        ];
        let mut ids: Vec<u32> = END_OF_TURN
            .iter()
            .filter_map(|t| self.token_to_id(t))
            .chain(self.eos)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    fn error(&self, e: tokenizers::Error) -> ModelError {
        ModelError::Tokenizer {
            path: self.source.clone(),
            detail: e.to_string(),
        }
    }
}
