//! The GGUF reader on small files written here: a good file reads back exactly, and every kind
//! of bad file gives an error that names the file and says what is wrong, never a panic.

use std::path::{Path, PathBuf};

use deltalogic::model::dev::gguf_write::{GgufWriter, Meta};
use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::scorer::{Backend, Scorer};
use deltalogic::model::tokenize::Tokenizer;
use deltalogic::model::ModelError;

const F32: u32 = 0;
const Q8_0: u32 = 8;
const Q2_K: u32 = 10;

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One Q8_0 block: scale 0.5 (f16 0x3800), quants -16..16.
fn q8_block() -> Vec<u8> {
    let mut b = vec![0x00, 0x38];
    b.extend((0..32).map(|i| (i - 16) as i8 as u8));
    b
}

/// A well-formed little model file: llama architecture, a 4-token BPE vocabulary, two tensors.
fn good() -> GgufWriter {
    let strs = |v: &[&str]| Meta::Strs(v.iter().map(|s| s.to_string()).collect());
    let mut w = GgufWriter::default();
    w.kv("general.architecture", Meta::Str("llama".into()))
        .kv("llama.block_count", Meta::U32(1))
        .kv("tokenizer.ggml.model", Meta::Str("gpt2".into()))
        .kv("tokenizer.ggml.pre", Meta::Str("smollm".into()))
        .kv(
            "tokenizer.ggml.tokens",
            strs(&["<|endoftext|>", "a", "b", "ab", "Ġ", "Ġab", "1"]),
        )
        .kv(
            "tokenizer.ggml.token_type",
            Meta::I32s(vec![3, 1, 1, 1, 1, 1, 1]),
        )
        .kv("tokenizer.ggml.merges", strs(&["a b", "Ġ ab"]))
        .kv("tokenizer.ggml.bos_token_id", Meta::U32(0))
        .kv("tokenizer.ggml.add_bos_token", Meta::Bool(false));
    w.raw_tensor(
        "w",
        &[2, 3],
        F32,
        f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    );
    w.raw_tensor("q", &[1, 32], Q8_0, q8_block());
    w
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write test file");
    path
}

/// The error's message, checked to name the file and to contain `what`.
fn message(err: ModelError, path: &Path, what: &str) -> String {
    let msg = err.to_string();
    assert!(
        msg.contains(&path.display().to_string()),
        "message does not name the file: {msg}"
    );
    assert!(msg.contains(what), "message does not say {what:?}: {msg}");
    msg
}

fn open_err(path: &Path) -> ModelError {
    Gguf::open(path).expect_err("opened a bad file")
}

#[test]
fn good_file_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "good.gguf", &good().bytes());
    let g = Gguf::open(&path).unwrap();
    assert_eq!(g.architecture().unwrap(), "llama");
    assert_eq!(g.get_u32("llama.block_count").unwrap(), 1);
    assert_eq!(g.tensor_names().collect::<Vec<_>>(), ["w", "q"]);
    // ne = [3, 2]: two rows of three, given outermost first.
    let (shape, data) = g.tensor_f32("w").unwrap();
    assert_eq!(shape, [2, 3]);
    assert_eq!(data, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let (shape, data) = g.tensor_f32("q").unwrap();
    assert_eq!(shape, [1, 32]);
    assert_eq!(
        data,
        (0..32).map(|i| (i - 16) as f32 * 0.5).collect::<Vec<_>>()
    );

    let tok = Tokenizer::from_gguf(&g).unwrap();
    // " ab" merges to "Ġab"; digits split alone; special-token text is matched whole.
    assert_eq!(tok.encode(" ab").unwrap(), [5]);
    assert_eq!(tok.encode("ab1ba").unwrap(), [3, 6, 2, 1]);
    assert_eq!(tok.encode("<|endoftext|>a").unwrap(), [0, 1]);
    assert_eq!(tok.bos_id(), Some(0));
}

#[test]
fn truncated_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = good().bytes();
    // The last tensor's 34 bytes end 30 bytes of alignment before the end of the file.
    let data_end = bytes.len() - 30;
    for cut in [0, 3, 10, 30, 200, data_end - 10, data_end - 1] {
        let path = write(dir.path(), &format!("cut{cut}.gguf"), &bytes[..cut]);
        message(open_err(&path), &path, "truncated");
    }
    // Cut inside the last tensor's data: the message names the tensor.
    let path = write(dir.path(), "cut-data.gguf", &bytes[..data_end - 1]);
    message(open_err(&path), &path, "tensor q");
}

#[test]
fn corrupt_magic_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = good().bytes();
    bytes[..4].copy_from_slice(b"GGML");
    let path = write(dir.path(), "magic.gguf", &bytes);
    message(open_err(&path), &path, "not a GGUF file");

    let mut bytes = good().bytes();
    bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
    let path = write(dir.path(), "v1.gguf", &bytes);
    message(open_err(&path), &path, "version 1");
}

#[test]
fn corrupt_counts_and_values() {
    let dir = tempfile::tempdir().unwrap();
    // A metadata count far beyond the file.
    let mut bytes = good().bytes();
    bytes[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let path = write(dir.path(), "count.gguf", &bytes);
    message(open_err(&path), &path, "metadata count");

    // The first key's value type (right after its 8-byte length and 20-byte name) made unknown.
    let mut bytes = good().bytes();
    let at = 24 + 8 + "general.architecture".len();
    bytes[at..at + 4].copy_from_slice(&99u32.to_le_bytes());
    let path = write(dir.path(), "vtype.gguf", &bytes);
    message(open_err(&path), &path, "unknown metadata value type 99");
}

#[test]
fn unsupported_tensor_type() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = good();
    w.raw_tensor("k", &[256], Q2_K, vec![0; 84]);
    let bytes = w.bytes();
    let path = write(dir.path(), "q2k.gguf", &bytes);
    let g = Gguf::open(&path).unwrap();
    let msg = message(
        g.tensor_f32("k").unwrap_err(),
        &path,
        "unsupported type Q2_K",
    );
    assert!(msg.contains("tensor k"), "{msg}");
}

#[test]
fn shape_not_whole_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = good();
    w.raw_tensor("odd", &[33], Q8_0, vec![0; 68]);
    let bytes = w.bytes();
    let path = write(dir.path(), "odd.gguf", &bytes);
    message(
        open_err(&path),
        &path,
        "tensor odd: dims [33] do not fit Q8_0",
    );
}

#[test]
fn missing_tensor_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "good.gguf", &good().bytes());
    let g = Gguf::open(&path).unwrap();
    message(
        g.tensor_f32("nope").unwrap_err(),
        &path,
        "tensor nope is missing",
    );
    message(
        g.get_u32("llama.context_length").unwrap_err(),
        &path,
        "llama.context_length is missing",
    );
    message(
        g.get_u32("general.architecture").unwrap_err(),
        &path,
        "is string, expected uint32",
    );
}

#[test]
fn missing_or_unsupported_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = good();
    w.remove_kv("tokenizer.ggml.tokens");
    let path = write(dir.path(), "notok.gguf", &w.bytes());
    let g = Gguf::open(&path).unwrap();
    message(
        Tokenizer::from_gguf(&g).unwrap_err(),
        &path,
        "tokenizer.ggml.tokens is missing",
    );

    let mut w = good();
    w.kv("tokenizer.ggml.pre", Meta::Str("mystery".into()));
    let path = write(dir.path(), "pre.gguf", &w.bytes());
    let g = Gguf::open(&path).unwrap();
    message(
        Tokenizer::from_gguf(&g).unwrap_err(),
        &path,
        "pre-tokenizer \"mystery\" is not supported",
    );

    let path = dir.path().join("tokenizer.json");
    message(
        Tokenizer::from_hf_file(&path).unwrap_err(),
        &path,
        "file not found",
    );
}

#[test]
fn unknown_architecture() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = good();
    w.kv("general.architecture", Meta::Str("mamba".into()));
    let path = write(dir.path(), "mamba.gguf", &w.bytes());
    let Err(err) = Scorer::open(&path, Backend::Flex) else {
        panic!("opened an unknown architecture");
    };
    message(err, &path, "unknown architecture \"mamba\"");
}

#[test]
fn missing_file() {
    let path = PathBuf::from("/nonexistent/model.gguf");
    message(open_err(&path), &path, "No such file");
}

const F16_INF: [u8; 2] = [0x00, 0x7C];

/// `good()` made a whole one-layer llama (hidden size 32, two heads, vocabulary of 7) that loads
/// and scores; every tensor is F32 except `blk.0.ffn_down.weight`, which is Q8_0. The final
/// norm's weights and the output matrix's values are multiplied by `head_scale`.
fn tiny_llama(head_scale: f32) -> GgufWriter {
    let d = 32;
    let filled = |n: usize, v: f32| f32_bytes(&vec![v; n]);
    let varied = |n: usize, scale: f32| {
        f32_bytes(
            &(0..n)
                .map(|i| ((i * 7 % 13) as f32 - 6.0) / 16.0 * scale)
                .collect::<Vec<_>>(),
        )
    };
    let mut w = good();
    w.remove_tensor("w").remove_tensor("q");
    w.kv("llama.embedding_length", Meta::U32(32))
        .kv("llama.feed_forward_length", Meta::U32(32))
        .kv("llama.attention.head_count", Meta::U32(2))
        .kv("llama.context_length", Meta::U32(64))
        .kv("llama.attention.layer_norm_rms_epsilon", Meta::F32(1e-5));
    w.raw_tensor("token_embd.weight", &[7, d], F32, varied(7 * 32, 1.0));
    w.raw_tensor("output_norm.weight", &[d], F32, filled(32, head_scale));
    w.raw_tensor("output.weight", &[7, d], F32, varied(7 * 32, head_scale));
    w.raw_tensor("blk.0.attn_norm.weight", &[d], F32, filled(32, 1.0));
    for name in ["attn_q", "attn_k", "attn_v", "attn_output"] {
        let name = format!("blk.0.{name}.weight");
        w.raw_tensor(name, &[d, d], F32, varied(32 * 32, 1.0));
    }
    w.raw_tensor("blk.0.ffn_norm.weight", &[d], F32, filled(32, 1.0));
    for name in ["ffn_gate", "ffn_up"] {
        let name = format!("blk.0.{name}.weight");
        w.raw_tensor(name, &[d, d], F32, varied(32 * 32, 1.0));
    }
    w.raw_tensor(
        "blk.0.ffn_down.weight",
        &[d, d],
        Q8_0,
        q8_block().repeat(32),
    );
    w
}

/// `tiny_llama`'s square matrix `name` replaced by one of type `ty` (it moves to the end of the
/// file).
fn replace_matrix(mut w: GgufWriter, name: &str, ty: u32, data: Vec<u8>) -> GgufWriter {
    assert!(w.has_tensor(name));
    w.remove_tensor(name);
    w.raw_tensor(name, &[32, 32], ty, data);
    w
}

#[test]
fn non_finite_weights_are_refused_by_tensor_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "fine.gguf", &tiny_llama(1.0).bytes());
    let scorer = Scorer::open(&path, Backend::Flex).unwrap();
    let scores = scorer.score("ab", &[" ab".into(), "1".into()]).unwrap();
    assert!(scores.iter().all(|s| s.sum().is_finite() && s.sum() < 0.0));
    assert_eq!(
        Gguf::open(&path)
            .unwrap()
            .tensor_info("blk.0.ffn_down.weight")
            .unwrap()
            .type_id,
        Q8_0
    );

    // A NaN in a float tensor.
    let mut q = f32_bytes(&[0.25; 32 * 32]);
    q[4 * 100..4 * 101].copy_from_slice(&f32::NAN.to_le_bytes());
    let w = replace_matrix(tiny_llama(1.0), "blk.0.attn_q.weight", F32, q);
    let path = write(dir.path(), "nan.gguf", &w.bytes());
    let Err(err) = Scorer::open(&path, Backend::Flex) else {
        panic!("loaded a NaN weight");
    };
    message(
        err,
        &path,
        "tensor blk.0.attn_q.weight holds a non-finite weight (NaN at element 100)",
    );

    // An infinite block scale in a quantised tensor: block 3 of Q8_0.
    let mut blocks = q8_block().repeat(32);
    blocks[3 * 34..3 * 34 + 2].copy_from_slice(&F16_INF);
    let w = replace_matrix(tiny_llama(1.0), "blk.0.ffn_down.weight", Q8_0, blocks);
    let path = write(dir.path(), "inf.gguf", &w.bytes());
    let Err(err) = Scorer::open(&path, Backend::Flex) else {
        panic!("loaded an infinite block scale");
    };
    message(
        err,
        &path,
        "tensor blk.0.ffn_down.weight holds a non-finite weight",
    );
}

#[test]
fn a_non_finite_log_prob_is_an_error_not_a_score() {
    // Finite weights so large that the logits overflow (products of about 1e20 * 1e19).
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "huge.gguf", &tiny_llama(1e20).bytes());
    let scorer = Scorer::open(&path, Backend::Flex).unwrap();
    let err = scorer.score("ab", &[" ab".into()]).unwrap_err().to_string();
    assert!(err.contains("non-finite"), "{err}");
    let state = scorer.prefill(&scorer.empty_state(), &[1]).unwrap();
    let err = scorer.next_logits(&state).unwrap_err().to_string();
    assert!(err.contains("non-finite"), "{err}");
}

/// Without `--backend`, a file with quantised matrices runs in the integer mode (llama.cpp's
/// arithmetic) and one of float weights in f32, as does a Hugging Face directory; an explicit
/// choice is kept, and a file that cannot be read is an error naming it.
#[test]
fn the_default_numerics_follow_the_file() {
    use deltalogic::eval::models::backend_for;
    let dir = tempfile::tempdir().unwrap();
    let quantised = write(dir.path(), "q.gguf", &tiny_llama(1.0).bytes());
    assert_eq!(backend_for(&quantised, None).unwrap(), Backend::Int8);
    assert_eq!(
        backend_for(&quantised, Some(Backend::Flex)).unwrap(),
        Backend::Flex
    );
    let float = replace_matrix(
        tiny_llama(1.0),
        "blk.0.ffn_down.weight",
        F32,
        f32_bytes(&[0.125; 32 * 32]),
    );
    let float = write(dir.path(), "f.gguf", &float.bytes());
    assert_eq!(backend_for(&float, None).unwrap(), Backend::Flex);
    let hf = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hf/llama");
    assert_eq!(backend_for(&hf, None).unwrap(), Backend::Flex);
    let missing = dir.path().join("missing.gguf");
    let err = backend_for(&missing, None).unwrap_err();
    assert!(format!("{err:#}").contains("missing.gguf"), "{err:#}");
}
