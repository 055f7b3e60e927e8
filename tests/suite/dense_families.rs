//! SmolLM3, OLMo 2 and Mistral 3 (issue 43) from both formats, and what each family's llama.cpp
//! loader reads that is not implemented here, refused by name. The comparison with llama.cpp
//! itself is in `families_llamacpp.rs` (`fixtures/golden/families-dense-llamacpp.json`).

use std::path::Path;

use deltalogic::model::dev::fixtures::{self, SEED};
use deltalogic::model::dev::gguf_write::{GgufWriter, Meta, Store};
use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::scorer::{Backend, Scorer};

use super::families::{bits, both, edited_fixture, refused, same_bits, scores, spoiled, tokens};

/// `arch`'s fixture directory with its config.json edited, scored.
fn edited(dir: &Path, arch: &'static str, edit: &dyn Fn(&mut serde_json::Value)) -> Vec<f32> {
    scores(&edited_fixture(dir, arch, edit)).0
}

#[test]
fn smollm3_gives_the_same_bits_from_both_formats_and_skips_rope_on_every_fourth_layer() {
    let (lp, _) = same_bits("smollm3");
    // The no-rope layer matters: with RoPE on every layer the scores differ.
    let dir = tempfile::tempdir().unwrap();
    let all_rope = edited(dir.path(), "smollm3", &|j| {
        j["no_rope_layers"] = serde_json::json!([1, 1, 1, 1]);
    });
    assert_ne!(bits(&all_rope), bits(&lp));
    // And `no_rope_layers` is read: the default pattern written out changes nothing.
    let spelled = edited(dir.path(), "smollm3", &|j| {
        j["no_rope_layers"] = serde_json::json!([1, 1, 1, 0]);
    });
    assert_eq!(bits(&spelled), bits(&lp));
}

#[test]
fn olmo2_gives_the_same_bits_from_both_formats() {
    same_bits("olmo2");
    let dir = tempfile::tempdir().unwrap();
    let (_, gguf) = both(dir.path(), "olmo2");
    let g = Gguf::open(&gguf).unwrap();
    // As llama.cpp reads olmo2: no input norms, q/k norms as wide as the projections, the
    // output matrix its own.
    assert!(g.tensor_info("blk.0.attn_norm.weight").is_none());
    assert!(g.tensor_info("blk.0.ffn_norm.weight").is_none());
    assert_eq!(
        g.tensor_info("blk.0.attn_q_norm.weight").unwrap().shape(),
        [64]
    );
    assert_eq!(
        g.tensor_info("blk.0.attn_k_norm.weight").unwrap().shape(),
        [32]
    );
    assert!(g.tensor_info("blk.0.post_ffw_norm.weight").is_some());
    assert!(g.tensor_info("output.weight").is_some());
}

#[test]
fn ministral3_gives_the_same_bits_from_both_formats_with_yarn_and_the_attention_temperature() {
    let (lp, _) = same_bits("ministral3");
    let dir = tempfile::tempdir().unwrap();
    let (_, gguf) = both(dir.path(), "ministral3");
    let g = Gguf::open(&gguf).unwrap();
    assert_eq!(g.get_str("mistral3.rope.scaling.type").unwrap(), "yarn");
    assert_eq!(g.get_f32("mistral3.rope.scaling.factor").unwrap(), 64.0);
    assert_eq!(
        g.get_u32("mistral3.rope.scaling.original_context_length")
            .unwrap(),
        8
    );
    assert_eq!(
        g.get_f32("mistral3.attention.temperature_scale").unwrap(),
        0.1
    );
    // The temperature matters only past the original window of 8: scored from position 12 on,
    // every label token differs without it.
    let cold = edited(dir.path(), "ministral3", &|j| {
        j["rope_parameters"]
            .as_object_mut()
            .unwrap()
            .remove("llama_4_scaling_beta");
    });
    assert!(lp
        .iter()
        .zip(&cold)
        .all(|(a, b)| a.to_bits() != b.to_bits()));
    // Before the window's end it changes nothing.
    let t = &tokens()[..8];
    let run = |p: &Path| {
        let s = Scorer::open(p, Backend::Flex).unwrap();
        let st = s.prefill(&s.empty_state(), &t[..4]).unwrap();
        bits(&s.score_continuation(&st, &t[4..]).unwrap())
    };
    let hf = dir.path().join("ministral3");
    let without = run(&hf);
    fixtures::write_one(dir.path(), "ministral3", SEED).unwrap();
    assert_eq!(run(&hf), without);
    // YaRN matters: without the scaling (the same base) the scores differ.
    let plain = edited(dir.path(), "ministral3", &|j| {
        let p = j["rope_parameters"].as_object_mut().unwrap();
        p.insert("rope_type".into(), "default".into());
    });
    assert_ne!(bits(&plain), bits(&lp));
}

/// A family's converted fixture as a writer, to be spoiled one feature at a time.
fn writer(dir: &Path, arch: &'static str) -> GgufWriter {
    let (_, gguf) = both(dir, arch);
    GgufWriter::from_gguf(&Gguf::open(&gguf).unwrap()).unwrap()
}

#[test]
fn what_llama_cpp_reads_for_smollm3_olmo2_and_mistral3_and_is_not_implemented_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // q, k and v fused: llama.cpp's create_tensor_qkv reads attn_qkv first.
    for arch in ["smollm3", "olmo2", "ministral3"] {
        let mut w = writer(d, arch);
        w.tensor(
            "blk.0.attn_qkv.weight",
            &[128, 64],
            &[0.0; 128 * 64],
            Store::F32,
        );
        refused(
            d,
            &format!("{arch}-qkv.gguf"),
            &w,
            "tensor blk.0.attn_qkv.weight (q, k and v fused) is not implemented",
        );
    }

    // SmolLM3: a partial rotary dimension, which its graph asserts away.
    let mut w = writer(d, "smollm3");
    w.kv("smollm3.rope.dimension_count", Meta::U32(8));
    refused(
        d,
        "smollm3-nrot.gguf",
        &w,
        "smollm3.rope.dimension_count 8 differs from the head dim 16",
    );

    // OLMo 3's sliding window (written as olmo2) and its own local base.
    let mut w = writer(d, "olmo2");
    w.kv("olmo2.attention.sliding_window", Meta::U32(4));
    refused(
        d,
        "olmo2-swa.gguf",
        &w,
        "metadata key olmo2.attention.sliding_window",
    );
    let mut w = writer(d, "olmo2");
    w.kv("olmo2.rope.freq_base_swa", Meta::F32(10_000.0));
    refused(
        d,
        "olmo2-swa-base.gguf",
        &w,
        "metadata key olmo2.rope.freq_base_swa",
    );
    // llama.cpp requires olmo2's output matrix.
    let mut w = writer(d, "olmo2");
    w.remove_tensor("output.weight");
    refused(d, "olmo2-tied.gguf", &w, "tensor output.weight is missing");

    // Mistral 3: experts, the output projection's and the MLP's biases, longrope, YaRN's
    // attention factor and extrapolation keys, rope_freqs.weight with YaRN, a zero window.
    let mut w = writer(d, "ministral3");
    w.kv("mistral3.expert_count", Meta::U32(8));
    refused(
        d,
        "m3-experts.gguf",
        &w,
        "metadata key mistral3.expert_count",
    );
    let mut w = writer(d, "ministral3");
    w.tensor("blk.0.attn_output.bias", &[64], &[0.0; 64], Store::F32);
    refused(
        d,
        "m3-wo-bias.gguf",
        &w,
        "tensor blk.0.attn_output.bias is not implemented for mistral3",
    );
    let mut w = writer(d, "ministral3");
    w.tensor("blk.1.ffn_down.bias", &[64], &[0.0; 64], Store::F32);
    refused(
        d,
        "m3-ffn-bias.gguf",
        &w,
        "tensor blk.1.ffn_down.bias is not implemented for mistral3",
    );
    let mut w = writer(d, "ministral3");
    w.kv("mistral3.rope.scaling.type", Meta::Str("longrope".into()));
    refused(
        d,
        "m3-longrope.gguf",
        &w,
        "mistral3.rope.scaling.type \"longrope\" is not implemented for mistral3",
    );
    for key in [
        "rope.scaling.yarn_attn_factor",
        "rope.scaling.yarn_ext_factor",
        "attention.temperature_length",
    ] {
        let mut w = writer(d, "ministral3");
        w.kv(format!("mistral3.{key}"), Meta::F32(2.0));
        refused(
            d,
            "m3-key.gguf",
            &w,
            &format!("metadata key mistral3.{key}"),
        );
    }
    let mut w = writer(d, "ministral3");
    w.tensor("rope_freqs.weight", &[8], &[1.0; 8], Store::F32);
    refused(
        d,
        "m3-freqs.gguf",
        &w,
        "rope_freqs.weight together with linear or yarn rope scaling is not implemented",
    );
    let mut w = writer(d, "ministral3");
    w.kv(
        "mistral3.rope.scaling.original_context_length",
        Meta::U32(0),
    );
    refused(d, "m3-window0.gguf", &w, "original context 0");
    // An output scale (llama.cpp's `wo_s`), which no family reads here.
    let mut w = writer(d, "ministral3");
    w.tensor("blk.0.attn_output.scale", &[1], &[1.0], Store::F32);
    refused(
        d,
        "m3-scale.gguf",
        &w,
        "tensor blk.0.attn_output.scale is not implemented for mistral3",
    );
}

/// config.json features of the three families that are not implemented, refused by name.
#[test]
fn unimplemented_config_keys_of_smollm3_olmo2_and_ministral3_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let spoil = |arch: &'static str, edit: &dyn Fn(&mut serde_json::Value), what: &str| {
        spoiled(dir.path(), arch, edit, what)
    };
    let yarn = |j: &mut serde_json::Value| j["rope_parameters"].as_object_mut().unwrap().clone();
    spoil(
        "smollm3",
        &|j| j["no_rope_layers"] = serde_json::json!([1, 2, 1, 0]),
        "no_rope_layers [1,2,1,0] is not a list of 4 flags 0 or 1",
    );
    spoil(
        "smollm3",
        &|j| {
            j["use_sliding_window"] = true.into();
            j["sliding_window"] = 16.into();
        },
        "use_sliding_window with sliding_window 16 is not implemented for smollm3",
    );
    spoil(
        "smollm3",
        &|j| {
            j.as_object_mut().unwrap().remove("rope_theta");
            j["rope_parameters"] = serde_json::json!({"rope_type": "yarn", "rope_theta": 1e6});
        },
        "rope_parameters type yarn is not implemented for smollm3",
    );
    spoil(
        "olmo2",
        &|j| j["sliding_window"] = 4096.into(),
        "sliding_window 4096 is not implemented for olmo2",
    );
    spoil(
        "olmo2",
        &|j| j["head_dim"] = 8.into(),
        "4 heads of 8 differ from the hidden size 64",
    );
    spoil(
        "ministral3",
        &|j| {
            let mut p = yarn(j);
            p.insert("attention_factor".into(), 1.5.into());
            j["rope_parameters"] = p.into();
        },
        "yarn attention_factor 1.5 is not implemented for mistral3",
    );
    spoil(
        "ministral3",
        &|j| {
            let mut p = yarn(j);
            p.insert("factor".into(), 16.0.into());
            j["rope_parameters"] = p.into();
        },
        "yarn factor 16 differs from max_position_embeddings 512 over \
         original_max_position_embeddings 8",
    );
    spoil(
        "ministral3",
        &|j| {
            let mut p = yarn(j);
            p.insert("rope_type".into(), "dynamic".into());
            j["rope_parameters"] = p.into();
        },
        "rope scaling type dynamic is not implemented for mistral3",
    );
    spoil(
        "ministral3",
        &|j| j["rope_scaling"] = serde_json::json!({"rope_type": "linear", "factor": 2.0}),
        "rope_parameters together with rope_scaling",
    );
    spoil(
        "ministral3",
        &|j| j["sliding_window"] = 4096.into(),
        "sliding_window 4096 is not implemented for mistral3",
    );
    spoil(
        "ministral3",
        &|j| j["architectures"] = serde_json::json!(["Mistral3ForConditionalGeneration"]),
        "Mistral3ForConditionalGeneration is not read",
    );
}

/// `model inspect` describes the three families.
#[test]
fn model_inspect_shows_smollm3_olmo2_and_mistral3() {
    let dir = tempfile::tempdir().unwrap();
    let inspect = |path: &Path| -> serde_json::Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_deltalogic"))
            .args(["--json", "model", "inspect", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for (arch, family) in [
        ("smollm3", "smollm3"),
        ("olmo2", "olmo2"),
        ("ministral3", "mistral3"),
    ] {
        let (hf, gguf) = both(dir.path(), arch);
        for path in [hf, gguf] {
            let v = inspect(&path);
            assert_eq!(v["family"]["family"], family, "{}", path.display());
            let f = &v["family"];
            match arch {
                "smollm3" => assert_eq!(f["no_rope_layers"], 1),
                "olmo2" => {
                    assert_eq!(f["pre_norms"], false);
                    assert_eq!(f["qk_norm_whole"], true);
                }
                _ => {
                    assert_eq!(f["rope_scaling"], "yarn 64");
                    assert_eq!(f["attn_temperature"], "0.1 over 8 positions");
                }
            }
        }
    }
}
