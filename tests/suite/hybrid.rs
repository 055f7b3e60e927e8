//! Qwen3.5's hybrid of gated delta-net and attention layers in the prefix tree (issue 44). The
//! tree keeps each recurrent layer's state and convolution window at its branch points beside
//! the attention layers' keys and values (`transformer::State`), so a score's bits are the same
//! from the tree, from a straight run of its prompt, from a shard and at any thread count, and
//! the tree runs each of its distinct tokens once. The vector units are checked in
//! `numerics::a_hybrid_model_gives_the_same_bits_on_every_path_thread_count_and_vector_unit`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::dl;
use deltalogic::eval::{PromptRecord, ScoreRecord};
use deltalogic::model::block::config::{Config, Rope, Shape};
use deltalogic::model::block::delta_net::DeltaNet;
use deltalogic::model::dev::family_files;
use deltalogic::model::dev::gguf_write::Store as Stored;
use deltalogic::model::scorer::{Backend, Scorer};
use deltalogic::store::{Id, Store};

/// A small Qwen3.5: five layers, three gated delta-net layers, one attention layer and one more
/// delta-net layer after it (so a recurrent layer reads attention's output); 2 key heads and 4
/// value heads, so value head `h` reads key head `h mod 2`.
pub fn tiny_qwen35() -> Config {
    let shape = Shape {
        vocab_size: 320,
        hidden: 64,
        intermediate: 128,
        layers: 5,
        heads: 4,
        kv_heads: 2,
        head_dim: 32,
        norm_eps: 1e-6,
        rope_theta: 10_000_000.0,
        max_positions: 32_768,
    };
    let plain = Config::plain("qwen35", shape);
    Config {
        tied_embeddings: true,
        qk_norm: true,
        attn_gate: true,
        rope: Rope {
            rotary_dim: 8,
            ..plain.rope.clone()
        },
        delta_net: Some(DeltaNet {
            conv_kernel: 4,
            k_heads: 2,
            v_heads: 4,
            head_dim: 16,
            recurrent: vec![true, true, true, false, true],
            rope_sections: vec![2, 1, 1, 0],
        }),
        ..plain
    }
}

/// The tiny Qwen3.5 written as a GGUF file in `dir`.
pub fn tiny_qwen35_file(dir: &Path, store: Stored) -> PathBuf {
    family_files::write_config(dir, "tiny-qwen35", &tiny_qwen35(), store).unwrap()
}

fn copy(from: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to
}

/// Every stored score's log-prob bits, by key.
fn bits(path: &Path) -> BTreeMap<Id, Vec<u32>> {
    Store::open_write(path)
        .unwrap()
        .all::<ScoreRecord>()
        .unwrap()
        .into_iter()
        .map(|(k, s)| (k, s.logprobs.iter().map(|x| x.to_bits()).collect()))
        .collect()
}

#[test]
fn tree_straight_runs_shards_and_thread_counts_give_the_same_bits_on_a_hybrid_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_qwen35_file(dir.path(), Stored::F32);
    let base = dir.path().join("base.redb");
    dl(
        &base,
        &["model", "add", model.to_str().unwrap(), "--name", "q"],
    );
    dl(
        &base,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            "1",
            "--per-type",
            "2",
            "--name",
            "small",
        ],
    );
    let score = ["--json", "score", "--model", "q", "--set", "small"];
    let json = |store: &Path, extra: &[&str]| -> serde_json::Value {
        let args = [&score[..], extra].concat();
        serde_json::from_slice(&dl(store, &args).stdout).unwrap()
    };

    let single = copy(&base, dir.path(), "single.redb");
    let one = json(&single, &[]);
    // The tree's lower bound: every distinct token of the tree once, recurrent layers included.
    assert_eq!(one["forward_tokens"], one["tree_tokens"], "{one}");
    assert!(one["forward_tokens"].as_u64().unwrap() > 0, "{one}");

    let one_thread = copy(&base, dir.path(), "one-thread.redb");
    let by_one = json(&one_thread, &["--threads", "1"]);
    assert_eq!(by_one["result"], one["result"]);

    let merged = copy(&base, dir.path(), "merged.redb");
    for index in 0..2 {
        let part = copy(&base, dir.path(), &format!("part{index}.redb"));
        let shard = format!("{index}/2");
        json(&part, &["--shard", &shard]);
        dl(&merged, &["cache", "merge", part.to_str().unwrap()]);
    }
    let after = json(&merged, &[]);
    assert_eq!(after["scores_computed"], 0, "{after}");
    assert_eq!(after["result"], one["result"]);

    let want = bits(&single);
    assert!(want.len() >= 12, "{} scores", want.len());
    assert_eq!(bits(&one_thread), want, "1 thread against 2");
    assert_eq!(bits(&merged), want, "two shards merged against one run");

    // Each score again from a straight run of its prompt: one prefill from the empty state.
    let store = Store::open_write(&single).unwrap();
    let scorer = Scorer::open(&model, Backend::Flex).unwrap();
    for (key, s) in store.all::<ScoreRecord>().unwrap() {
        let text = store
            .get::<PromptRecord>(&Id(s.prompt))
            .unwrap()
            .unwrap()
            .text;
        let (ctx, labels) = scorer
            .split_tokens(&text, std::slice::from_ref(&s.label))
            .unwrap();
        let state = scorer.prefill(&scorer.empty_state(), &ctx).unwrap();
        let got = scorer.score_continuation(&state, &labels[0]).unwrap();
        let got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
        assert_eq!(got, want[&key], "straight run of {:?}", s.label);
    }
}

/// Greedy generation on a hybrid model (the dialogue template's explanations): stored with the
/// same cache, and an audit recomputes every score and generation from the empty state, bit for
/// bit, though the runner decoded them stepped together from states in the tree.
#[test]
fn generations_on_a_hybrid_model_are_audited_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_qwen35_file(dir.path(), Stored::F32);
    let store = dir.path().join("s.redb");
    dl(
        &store,
        &["model", "add", model.to_str().unwrap(), "--name", "q"],
    );
    dl(
        &store,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            "2",
            "--per-type",
            "1",
            "--name",
            "one",
        ],
    );
    let run = |args: &[&str]| -> serde_json::Value {
        serde_json::from_slice(&dl(&store, args).stdout).unwrap()
    };
    let scored = run(&[
        "--json",
        "score",
        "--model",
        "q",
        "--set",
        "one",
        "--template",
        "dialogue",
    ]);
    let generated = scored["generations_computed"].as_u64().unwrap();
    assert!(generated > 0, "{scored}");
    let result = scored["result"].as_str().unwrap().to_string();
    let audit = run(&["--json", "audit", &result, "--verify", "100000"]);
    let verify = &audit["verify"];
    let generations = audit["audit"]["generations"].as_array().unwrap().len() as u64;
    assert_eq!(generations, generated, "{audit}");
    let checked = verify["checked"].as_u64().unwrap();
    assert!(
        checked > generations,
        "scores and generations checked: {verify}"
    );
    assert_eq!(verify["identical"].as_u64().unwrap(), checked, "{verify}");
    assert!(
        verify["differing"].as_array().unwrap().is_empty(),
        "{verify}"
    );
}

/// The other hybrid architectures llama.cpp reads are refused by name, not run as something else.
#[test]
fn other_hybrid_architectures_are_refused_by_name() {
    use deltalogic::model::dev::gguf_write::{GgufWriter, Meta};
    let dir = tempfile::tempdir().unwrap();
    for arch in [
        "granitehybrid",
        "lfm2",
        "falcon-h1",
        "qwen3next",
        "qwen35moe",
    ] {
        let path = dir.path().join(format!("{arch}.gguf"));
        let mut w = GgufWriter::default();
        w.kv("general.architecture", Meta::Str(arch.into()));
        w.write(&path).unwrap();
        let err = match Scorer::open(&path, Backend::Flex) {
            Ok(_) => panic!("{arch} loaded"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains(&format!("unknown architecture {arch:?}")) && err.contains("qwen35"),
            "{err}"
        );
    }
}
