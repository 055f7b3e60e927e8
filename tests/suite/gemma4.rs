//! Gemma 4 (issue 43) from both formats, both ways, and what llama.cpp's and transformers'
//! Gemma 4 loaders read that is not implemented here, refused by name. The comparisons with
//! llama.cpp and transformers themselves are in `families_llamacpp.rs`.

use std::path::{Path, PathBuf};

use deltalogic::model::block::config::Config;
use deltalogic::model::dev::family_files::{config, write_config};
use deltalogic::model::dev::gguf_write::{hf_to_gguf, GgufWriter, Meta, Store};
use deltalogic::model::family::gemma4;
use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::format::hf_export;
use deltalogic::model::inspect::inspect;
use deltalogic::model::scorer::{self, Backend, Scorer};

use super::families::{bits, refused, scores};

/// The E2B-shaped family file's config (`family_files`: a local and a global layer with keys
/// and values of their own, then one of each attending with theirs, twice as wide in their
/// MLPs) at a tiny width: heads of 16 (local) and 32 (global, 4 of 16 pairs turning), per-layer
/// inputs of 8, a window of 8 (the tests' 20 tokens cross it).
fn tiny() -> Config {
    let mut c = config("gemma4-e2b-window16").unwrap();
    (c.hidden, c.intermediate, c.heads, c.kv_heads) = (64, 96, 4, 2);
    c.embed_scale = Some(8.0);
    c.max_positions = 512;
    c.head_dim = 32;
    c.rope.rotary_dim = 32;
    c.rope.freq_factors = Some(gemma4::proportional(32, 4));
    c.rope.scaling = Some("proportional, 4 of 16 pairs turning".into());
    c.head_dim_local = Some(16);
    if let Some(local) = &mut c.rope_local {
        local.rotary_dim = 16;
    }
    c.sliding_window = Some(8);
    c.layer_intermediate = vec![96, 96, 192, 192];
    c.per_layer_input = Some(8);
    c
}

/// An edit of a file or of a config.json.
type Edit<T> = dyn Fn(&mut T);

fn tiny_gguf(dir: &Path) -> PathBuf {
    write_config(dir, "gemma4-tiny", &tiny(), Store::F32).unwrap()
}

#[test]
fn gemma4_gives_the_same_bits_from_gguf_from_its_export_and_converted_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let gguf = tiny_gguf(d);
    let want = scores(&gguf);
    assert!(want.0.iter().all(|x| x.is_finite() && *x < 0.0));
    let hf = d.join("hf");
    hf_export::export(&gguf, &hf).unwrap();
    let got = scores(&hf);
    assert_eq!(bits(&got.0), bits(&want.0), "export: label log-probs");
    assert_eq!(bits(&got.1), bits(&want.1), "export: logits");
    let back = d.join("back.gguf");
    hf_to_gguf(&hf, &back, Store::F32, None).unwrap();
    let again = scores(&back);
    assert_eq!(
        bits(&again.0),
        bits(&want.0),
        "converted back: label log-probs"
    );
    // The config.json is transformers' Gemma4TextConfig.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hf.join("config.json")).unwrap()).unwrap();
    assert_eq!(json["architectures"][0], "Gemma4ForCausalLM");
    assert_eq!(json["num_kv_shared_layers"], 2);
    assert_eq!(json["global_head_dim"], 32);
    assert_eq!(json["head_dim"], 16);
    assert_eq!(json["use_double_wide_mlp"], true);
    assert_eq!(
        json["rope_parameters"]["full_attention"]["partial_rotary_factor"],
        0.25
    );
    // A shared layer has no k or v of its own in either file.
    let g = Gguf::open(&back).unwrap();
    assert!(g.tensor_info("blk.1.attn_k.weight").is_some());
    assert!(g.tensor_info("blk.2.attn_k.weight").is_none());
    assert_eq!(
        g.get("gemma4.feed_forward_length")
            .map(|v| format!("{v:?}")),
        Some("Array([I32(96), I32(96), I32(192), I32(192)])".into())
    );
    // `model inspect` shows the family and what is its own.
    let found = inspect(&gguf);
    assert_eq!(found.not_implemented, None);
    let f = found.family.unwrap();
    assert_eq!(
        (f.family.as_str(), f.local_head_dim, f.shared_kv_layers),
        ("gemma4", Some(16), 2)
    );
    assert_eq!(
        (f.widest_intermediate, f.per_layer_input),
        (Some(192), Some(8))
    );
}

/// E4B's form (`gemma4-e4b-window16`: one MLP width on every layer, `use_double_wide_mlp`
/// false) at the same tiny widths, through its export and back.
#[test]
fn gemma4_e4b_form_gives_the_same_bits_from_gguf_from_its_export_and_converted_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e4b = config("gemma4-e4b-window16").unwrap();
    assert!(e4b.layer_intermediate.is_empty() && e4b.kv_heads == 2);
    let cfg = Config {
        layer_intermediate: Vec::new(),
        ..tiny()
    };
    let gguf = write_config(d, "gemma4-e4b-tiny", &cfg, Store::F32).unwrap();
    assert_eq!(
        Gguf::open(&gguf)
            .unwrap()
            .get("gemma4.feed_forward_length")
            .map(|v| format!("{v:?}")),
        Some("U32(96)".into())
    );
    let want = scores(&gguf);
    let hf = d.join("hf");
    hf_export::export(&gguf, &hf).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hf.join("config.json")).unwrap()).unwrap();
    assert_eq!(json["use_double_wide_mlp"], false);
    let got = scores(&hf);
    assert_eq!(bits(&got.0), bits(&want.0), "export: label log-probs");
    assert_eq!(bits(&got.1), bits(&want.1), "export: logits");
    let back = d.join("back.gguf");
    hf_to_gguf(&hf, &back, Store::F32, None).unwrap();
    assert_eq!(bits(&scores(&back).0), bits(&want.0), "converted back");
}

/// What each of Gemma 4's own features does: without it the scores move.
#[test]
fn gemma4_features_each_change_the_scores() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let want = bits(&scores(&tiny_gguf(d)).0);
    let g = Gguf::open(tiny_gguf(d)).unwrap();
    let variants: [(&str, &Edit<GgufWriter>); 3] = [
        // Every pair of the global layers turning.
        ("rope_freqs", &|w| {
            w.remove_tensor("rope_freqs.weight");
        }),
        // Unit layer scales.
        ("layer scale", &|w| {
            for l in 0..4 {
                w.remove_tensor(&format!("blk.{l}.layer_output_scale.weight"));
                w.tensor(
                    format!("blk.{l}.layer_output_scale.weight"),
                    &[1],
                    &[1.0],
                    Store::F32,
                );
            }
        }),
        // The local layers at the global base.
        ("local base", &|w| {
            w.kv("gemma4.rope.freq_base_swa", Meta::F32(1_000_000.0));
        }),
    ];
    for (what, edit) in variants {
        let mut w = GgufWriter::from_gguf(&g).unwrap();
        edit(&mut w);
        let path = d.join("variant.gguf");
        w.write(&path).unwrap();
        assert_ne!(bits(&scores(&path).0), want, "{what} changes nothing");
    }
}

#[test]
fn what_llama_cpp_reads_for_gemma4_and_is_not_implemented_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = Gguf::open(tiny_gguf(d)).unwrap();
    let base = || GgufWriter::from_gguf(&g).unwrap();

    // The 26B-A4B's experts.
    let mut w = base();
    w.kv("gemma4.expert_count", Meta::U32(4));
    refused(d, "moe.gguf", &w, "mixture-of-experts");
    let mut w = base();
    w.tensor(
        "blk.0.ffn_gate_inp.weight",
        &[4, 64],
        &[0.0; 256],
        Store::F32,
    );
    refused(d, "router.gguf", &w, "mixture-of-experts");
    // q, k and v fused.
    let mut w = base();
    w.tensor(
        "blk.0.attn_qkv.weight",
        &[96, 64],
        &[0.0; 96 * 64],
        Store::F32,
    );
    refused(d, "qkv.gguf", &w, "blk.0.attn_qkv.weight");
    // Keys used as values (the 31B's global layers).
    let mut w = base();
    w.remove_tensor("blk.1.attn_v.weight");
    refused(d, "k-eq-v.gguf", &w, "attention_k_eq_v");
    // kv heads per layer, differing.
    let mut w = base();
    w.kv(
        "gemma4.attention.head_count_kv",
        Meta::I32s(vec![2, 1, 2, 1]),
    );
    refused(d, "kv-heads.gguf", &w, "differs between layers");
    // The pattern as a count: llama.cpp requires a list.
    let mut w = base();
    w.kv("gemma4.attention.sliding_window_pattern", Meta::U32(2));
    refused(d, "pattern.gguf", &w, "list of flags");
    // One shared layer: llama.cpp's rule (layer n − 1 = 2, a local one, for global layer 3)
    // and transformers' (layer 1) differ.
    let mut w = base();
    w.kv("gemma4.attention.shared_kv_layers", Meta::U32(1));
    refused(d, "shared.gguf", &w, "shared-KV layer 3");
    // A key llama.cpp reads for the experts.
    let mut w = base();
    w.kv("gemma4.expert_feed_forward_length", Meta::U32(32));
    refused(d, "ff-exp.gguf", &w, "gemma4.expert_feed_forward_length");
    // llama.cpp's gemma4 reads a missing final soft-cap as 30 (not none), and 0 as none.
    let capped = |w: &GgufWriter, name: &str| {
        let path = d.join(name);
        w.write(&path).unwrap();
        inspect(&path).family.unwrap().final_softcap
    };
    let mut w = base();
    w.remove_kv("gemma4.final_logit_softcapping");
    assert_eq!(capped(&w, "cap-missing.gguf"), Some(30.0));
    w.kv("gemma4.final_logit_softcapping", Meta::F32(0.0));
    assert_eq!(capped(&w, "cap-zero.gguf"), None);
    // A shared layer's own k and v, which llama.cpp loads and never uses, are read past.
    let mut w = base();
    w.tensor(
        "blk.2.attn_k.weight",
        &[32, 64],
        &[0.0; 32 * 64],
        Store::F32,
    );
    let path = d.join("unused-k.gguf");
    w.write(&path).unwrap();
    scorer::check(&path).unwrap();
}

#[test]
fn what_transformers_reads_for_gemma4_and_is_not_implemented_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hf = d.join("hf");
    hf_export::export(&tiny_gguf(d), &hf).unwrap();
    let config = hf.join("config.json");
    let text = std::fs::read_to_string(&config).unwrap();
    let edits: [(&str, &Edit<serde_json::Value>); 6] = [
        ("mixture-of-experts", &|j| {
            j["enable_moe_block"] = true.into()
        }),
        ("attention_k_eq_v", &|j| j["attention_k_eq_v"] = true.into()),
        ("use_bidirectional_attention", &|j| {
            j["use_bidirectional_attention"] = "vision".into()
        }),
        ("num_key_value_heads", &|j| {
            j["per_layer_config"] = serde_json::json!({"1": {"num_key_value_heads": 1}})
        }),
        ("rope_parameters.sliding_attention", &|j| {
            j["rope_parameters"]["sliding_attention"]["partial_rotary_factor"] = 0.5.into()
        }),
        ("Gemma4ForConditionalGeneration", &|j| {
            j["architectures"] = serde_json::json!(["Gemma4ForConditionalGeneration"])
        }),
    ];
    for (what, edit) in edits {
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(&mut json);
        std::fs::write(&config, json.to_string()).unwrap();
        let e = match Scorer::open(&hf, Backend::Flex) {
            Ok(_) => panic!("{what}: loaded"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(what), "{what}: {e}");
    }
    // transformers' own layout of the global head size (`per_layer_config`, which it writes in
    // place of `global_head_dim`) reads as the same model.
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json.as_object_mut().unwrap().remove("global_head_dim");
    json["per_layer_config"] = serde_json::json!({"1": {"head_dim": 32}, "3": {"head_dim": 32}});
    std::fs::write(&config, json.to_string()).unwrap();
    assert_eq!(bits(&scores(&hf).0), bits(&scores(&tiny_gguf(d)).0));
}
