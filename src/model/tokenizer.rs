//! Tokenizers for GGUF files and Hugging Face `tokenizer.json` files, built on the `tokenizers`
//! crate.
//!
//! A GGUF file carries its byte-level BPE vocabulary, merges and token types, and names its
//! pre-tokenizer (`tokenizer.ggml.pre`); this module rebuilds what llama.cpp does from them so
//! that ids match `llama-tokenize` exactly (checked against golden files in
//! `tests/tokenizer_golden.rs`).

use std::path::{Path, PathBuf};

use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, SplitDelimiterBehavior};

use super::gguf::Gguf;
use super::ModelError;

/// llama.cpp's token types (`llama_token_type`) that are matched as whole added tokens.
const TOKEN_CONTROL: i32 = 3;
const TOKEN_USER_DEFINED: i32 = 4;

/// GPT-2's split, as llama.cpp writes it.
const GPT2_REGEX: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
/// Llama 3's split (digits in runs of up to three), case-insensitive contractions spelled out
/// as llama.cpp does.
const LLAMA3_REGEX: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's split: as Llama 3's, but every digit alone.
const QWEN2_REGEX: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

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
        "smollm" | "starcoder" | "refact" => (&[r"\p{N}", GPT2_REGEX], false),
        "gpt-2" => (&[GPT2_REGEX], false),
        _ => return None,
    };
    // Llama 3 is the family among these that llama.cpp gives a BOS by default.
    Some(PreTokenizer {
        regexes,
        ignore_merges,
        add_bos: ignore_merges,
    })
}

const SUPPORTED_PRE: &str = "llama3, llama-v3, llama-bpe, qwen2, deepseek-r1-qwen, megrez, smollm, starcoder, refact, gpt-2";

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

/// A tokenizer and the special-token facts the scorer needs.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    source: PathBuf,
    bos: Option<u32>,
    eos: Option<u32>,
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
    /// Builds the tokenizer described by a GGUF file's `tokenizer.ggml.*` metadata.
    /// Only byte-level BPE (`tokenizer.ggml.model = "gpt2"`) is supported.
    pub fn from_gguf(gguf: &Gguf) -> Result<Tokenizer, ModelError> {
        let path = gguf.path();
        let err = |detail: String| ModelError::Tokenizer {
            path: path.to_path_buf(),
            detail,
        };
        let model = gguf.get_str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(err(format!(
                "tokenizer.ggml.model {model:?} is not supported (only \"gpt2\", byte-level BPE)"
            )));
        }
        let pre_name = gguf.get_str("tokenizer.ggml.pre")?;
        let pre = pre_tokenizer(pre_name).ok_or_else(|| {
            err(format!(
                "pre-tokenizer {pre_name:?} is not supported ({SUPPORTED_PRE})"
            ))
        })?;
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
        let merges = merges(gguf)?;

        let id = |i: usize| u32::try_from(i).map_err(|_| err("too many tokens".into()));
        // Where a string repeats, the last id wins, as in llama.cpp's token-to-id map.
        let mut vocab = Vocab::default();
        for (i, t) in tokens.iter().enumerate() {
            vocab.insert(t.to_string(), id(i)?);
        }
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
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

        // Control and user-defined tokens are matched whole wherever their text appears, as
        // llama-tokenize does (it parses special tokens by default); control ones are special.
        let added: Vec<AddedToken> = tokens
            .iter()
            .zip(&types)
            .filter(|(_, &ty)| ty == TOKEN_CONTROL || ty == TOKEN_USER_DEFINED)
            .map(|(t, &ty)| AddedToken::from(t.to_string(), ty == TOKEN_CONTROL).normalized(false))
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
        let add_bos = match gguf.get("tokenizer.ggml.add_bos_token") {
            Some(_) => gguf.get_bool("tokenizer.ggml.add_bos_token")?,
            None => pre.add_bos,
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
        Ok(Tokenizer {
            inner,
            source: path.to_path_buf(),
            bos,
            eos,
        })
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
        Ok(Tokenizer {
            inner,
            source: path.to_path_buf(),
            bos,
            eos,
        })
    }

    /// Token ids for `text`, with BOS only where the model adds one. Special-token text such as
    /// `<|im_start|>` is matched as that token.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let encoding = self.inner.encode(text, true).map_err(|e| self.error(e))?;
        Ok(encoding.get_ids().to_vec())
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
