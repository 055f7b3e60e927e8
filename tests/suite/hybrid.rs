//! Qwen3.5's hybrid of gated delta-net and attention layers in the prefix tree (issue 44). The
//! tree keeps each recurrent layer's state and convolution window at its branch points beside
//! the attention layers' keys and values (`transformer::State`), so a score's bits are the same
//! from the tree, from a straight run of its prompt, from a shard, at any thread count and with
//! no snapshot kept (`--snapshot-budget 0`: branches replayed from the start, the replayed
//! tokens counted), and the tree runs each of its distinct tokens once. The vector units are checked in
//! `numerics::a_hybrid_model_gives_the_same_bits_on_every_path_thread_count_and_vector_unit`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{build_generated, dl};
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

/// The tiny Qwen3.5 (f32) added to `store` as `q`, and the set `small` of DeltaLogic episodes
/// from generated theories, `per_type` of each cell (seed 1). Returns the model file.
fn tiny_qwen35_with_set(dir: &Path, store: &Path, per_type: &str) -> PathBuf {
    let model = tiny_qwen35_file(dir, Stored::F32);
    dl(
        store,
        &["model", "add", model.to_str().unwrap(), "--name", "q"],
    );
    build_generated(store, "1", per_type, "small");
    model
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
fn tree_straight_runs_shards_threads_and_snapshot_budgets_give_the_same_bits_on_a_hybrid_model() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.redb");
    let model = tiny_qwen35_with_set(dir.path(), &base, "2");
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
    assert_eq!(one["replayed_tokens"], 0, "{one}");
    assert!(one["snapshot_peak_bytes"].as_u64().unwrap() > 0, "{one}");

    // No snapshot kept: every branch runs again from the empty state to its branch point.
    let unkept = copy(&base, dir.path(), "unkept.redb");
    let replayed = json(&unkept, &["--snapshot-budget", "0"]);
    assert_eq!(replayed["result"], one["result"]);
    assert_eq!(replayed["tree_tokens"], one["tree_tokens"], "{replayed}");
    assert_eq!(replayed["snapshot_peak_bytes"], 0, "{replayed}");
    let extra = replayed["replayed_tokens"].as_u64().unwrap();
    assert!(extra > 0, "{replayed}");
    assert_eq!(
        replayed["forward_tokens"].as_u64().unwrap(),
        one["tree_tokens"].as_u64().unwrap() + extra,
        "{replayed}"
    );

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
    assert_eq!(bits(&unkept), want, "no snapshot kept against the tree's");
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
    build_generated(&store, "2", "1", "one");
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

/// Qwen3.5 from a Hugging Face directory: the tiny hybrid (fewer key than value heads, so its
/// value heads are reordered between the two layouts) written by `model export-hf` and read
/// back gives the GGUF file's bits, and so does that directory converted to GGUF again.
#[test]
fn a_hybrid_model_gives_the_same_bits_from_gguf_and_hugging_face() {
    use deltalogic::model::dev::gguf_write::hf_to_gguf;
    use deltalogic::model::format::hf_export;
    let dir = tempfile::tempdir().unwrap();
    let gguf = tiny_qwen35_file(dir.path(), Stored::F32);
    let hf = dir.path().join("hf");
    hf_export::export(&gguf, &hf).unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(hf.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["architectures"][0], "Qwen3_5ForCausalLM", "{config}");
    assert_eq!(config["linear_num_value_heads"], 4, "{config}");
    let again = dir.path().join("again.gguf");
    hf_to_gguf(&hf, &again, Stored::F32, None).unwrap();

    let context: Vec<u32> = (0..40u32).map(|i| (i * 37 + 11) % 320).collect();
    let labels = [vec![5u32], vec![300, 7, 64]];
    let bits_of = |path: &Path| -> Vec<Vec<u32>> {
        let scorer = Scorer::open(path, Backend::Flex).unwrap();
        let state = scorer.prefill(&scorer.empty_state(), &context).unwrap();
        let mut out: Vec<Vec<u32>> = labels
            .iter()
            .map(|l| {
                let lp = scorer.score_continuation(&state, l).unwrap();
                lp.iter().map(|x| x.to_bits()).collect()
            })
            .collect();
        let logits = scorer.next_logits(&state).unwrap();
        out.push(logits.iter().map(|x| x.to_bits()).collect());
        out
    };
    let want = bits_of(&gguf);
    assert_eq!(bits_of(&hf), want, "Hugging Face directory against GGUF");
    assert_eq!(bits_of(&again), want, "converted back to GGUF");
}

/// What llama.cpp's qwen35 reads and this engine does not implement is refused by name, from
/// GGUF and from config.json.
#[test]
fn what_qwen35_does_not_implement_is_refused_by_name() {
    use deltalogic::model::dev::gguf_write::{GgufWriter, Meta};
    use deltalogic::model::format::gguf::Gguf;
    let dir = tempfile::tempdir().unwrap();
    let gguf = tiny_qwen35_file(dir.path(), Stored::F32);
    let refused = |path: &Path| match Scorer::open(path, Backend::Flex) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => e.to_string(),
    };
    for (key, value, says) in [
        (
            "qwen35.attention.sliding_window",
            Meta::U32(8),
            "qwen35.attention.sliding_window",
        ),
        (
            "qwen35.nextn_predict_layers",
            Meta::U32(5),
            "qwen35.nextn_predict_layers 5",
        ),
        (
            "qwen35.attention.scale",
            Meta::F32(0.5),
            "qwen35.attention.scale",
        ),
        (
            "qwen35.ssm.inner_size",
            Meta::U32(48),
            "qwen35.ssm.inner_size 48",
        ),
        (
            "qwen35.full_attention_interval",
            Meta::U32(0),
            "full_attention_interval is 0",
        ),
    ] {
        let mut w = GgufWriter::from_gguf(&Gguf::open(&gguf).unwrap()).unwrap();
        w.remove_kv(key).kv(key, value);
        // Without the per-layer flags, so that the interval is what is read.
        w.remove_kv("qwen35.attention.recurrent_layers");
        let path = dir.path().join("edited.gguf");
        w.write(&path).unwrap();
        let err = refused(&path);
        assert!(
            err.contains(says) && err.contains("edited.gguf"),
            "{key}: {err}"
        );
    }

    let hf = dir.path().join("hf");
    deltalogic::model::format::hf_export::export(&gguf, &hf).unwrap();
    let config = hf.join("config.json");
    let original = std::fs::read_to_string(&config).unwrap();
    for (edit, says) in [
        (r#""attn_output_gate": false"#, "attn_output_gate false"),
        (r#""linear_value_head_dim": 32"#, "linear_value_head_dim 32"),
        (r#""sliding_window": 8"#, "\"sliding_window\""),
        (r#""layer_types": ["linear_attention"]"#, "layer_types"),
    ] {
        let mut json: serde_json::Value = serde_json::from_str(&original).unwrap();
        let (k, v) = edit.split_once(": ").unwrap();
        json[k.trim_matches('"')] = serde_json::from_str(v).unwrap();
        std::fs::write(&config, json.to_string()).unwrap();
        let err = refused(&hf);
        assert!(
            err.contains(says) && err.contains("config.json"),
            "{edit}: {err}"
        );
    }
}

/// A file with an MTP draft layer after the model's own (as convert_hf_to_gguf writes Qwen3.5
/// by default: `nextn_predict_layers`, counted in `block_count`) scores with the bits of the same
/// file without it: the draft layer is not run, as in llama.cpp's main pass.
#[test]
fn the_mtp_draft_layers_are_skipped() {
    use deltalogic::model::dev::gguf_write::{GgufWriter, Meta};
    use deltalogic::model::format::gguf::Gguf;
    let dir = tempfile::tempdir().unwrap();
    let gguf = tiny_qwen35_file(dir.path(), Stored::F32);
    let mut w = GgufWriter::from_gguf(&Gguf::open(&gguf).unwrap()).unwrap();
    w.kv("qwen35.block_count", Meta::U32(6))
        .kv("qwen35.nextn_predict_layers", Meta::U32(1));
    let mut flags = tiny_qwen35().delta_net.unwrap().recurrent;
    flags.push(false);
    w.kv("qwen35.attention.recurrent_layers", Meta::Bools(flags));
    for name in ["blk.5.attn_norm.weight", "blk.5.nextn.enorm.weight"] {
        w.tensor(name, &[64], &[0.5; 64], Stored::F32);
    }
    w.tensor(
        "blk.5.nextn.eh_proj.weight",
        &[64, 128],
        &[0.25; 64 * 128],
        Stored::F32,
    );
    let with_draft = dir.path().join("mtp.gguf");
    w.write(&with_draft).unwrap();
    let context: Vec<u32> = (0..30u32).map(|i| (i * 91 + 3) % 320).collect();
    let bits = |path: &Path| -> Vec<u32> {
        let scorer = Scorer::open(path, Backend::Flex).unwrap();
        assert_eq!(scorer.model().config().layers, 5);
        let state = scorer.prefill(&scorer.empty_state(), &context).unwrap();
        let logits = scorer.next_logits(&state).unwrap();
        logits.iter().map(|x| x.to_bits()).collect()
    };
    assert_eq!(bits(&with_draft), bits(&gguf));
}

/// `bench --tree-from`: the scores a `score` run stored, computed again through the prefix tree
/// and straight (each prompt prefilled from the empty state), give the stored bits both ways
/// (bench fails otherwise), the tree forwarding fewer tokens than the straight runs, recurrent
/// layers included. A store holding two models' scores is refused. A stand-in llama-bench prints
/// its JSON.
#[test]
fn bench_scores_a_stored_set_through_the_tree_and_straight_with_the_same_bits() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let model = tiny_qwen35_with_set(dir.path(), &store, "1");
    let scored: serde_json::Value = serde_json::from_slice(
        &dl(
            &store,
            &["--json", "score", "--model", "q", "--set", "small"],
        )
        .stdout,
    )
    .unwrap();
    let llama = dir.path().join("llama-bench");
    std::fs::write(
        &llama,
        "#!/bin/sh\ncat <<'END'\n[{\"n_prompt\": 8, \"n_gen\": 0, \"avg_ts\": 1.0, \
         \"samples_ts\": [1.0]}, {\"n_prompt\": 0, \"n_gen\": 2, \"avg_ts\": 1.0, \
         \"samples_ts\": [1.0]}]\nEND\n",
    )
    .unwrap();
    std::fs::set_permissions(&llama, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bench = |from: &Path| {
        crate::common::deltalogic(&dir.path().join("bench.redb"))
            .args([
                "--json",
                "bench",
                "--model",
                model.to_str().unwrap(),
                "--backend",
                "flex",
                "--tokens",
                "8",
                "--decode",
                "2",
                "--parallel",
                "1",
                "--generate",
                "0",
                "--reps",
                "1",
                "--llama-bench",
                llama.to_str().unwrap(),
                "--tree-from",
                from.to_str().unwrap(),
            ])
            .output()
            .unwrap()
    };
    let out = bench(&store);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tree = &report["rows"][0]["tree"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    assert_eq!(n(&tree["scores"]) as usize, bits(&store).len(), "{tree}");
    // One tree over every stored prompt: at most what `score`'s trees, one per turn, forwarded.
    assert!(
        n(&tree["tree_tokens"]) <= n(&scored["forward_tokens"]),
        "{tree} {scored}"
    );
    assert!(
        n(&tree["straight_tokens"]) > n(&tree["tree_tokens"]),
        "{tree}"
    );

    // A second model's scores in the same store: refused, not mixed.
    let other =
        family_files::write_config(dir.path(), "tiny-qwen35-b", &tiny_qwen35(), Stored::F32)
            .unwrap();
    dl(
        &store,
        &["model", "add", other.to_str().unwrap(), "--name", "b"],
    );
    dl(&store, &["score", "--model", "b", "--set", "small"]);
    let out = bench(&store);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("scores of 2 models"), "{err}");
    assert!(
        err.contains(store.to_str().unwrap()),
        "names the store: {err}"
    );
}
