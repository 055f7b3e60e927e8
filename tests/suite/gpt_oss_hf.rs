//! gpt-oss from Hugging Face directories (issue 45): `model export-hf` writes a gpt-oss GGUF
//! file as transformers' `GptOssForCausalLM` stores it (the experts fused, gate and up
//! interleaved, `x · W`), and the directory scores to the file's bits; the released
//! checkpoints' MXFP4 form (`_blocks` and `_scales`) scores to the bits of the GGUF file with
//! the same MXFP4 experts; what is malformed or not implemented is refused by name.
//! transformers' own agreement with the export is `families_llamacpp`'s
//! `gpt_oss_exported_to_hugging_face_agrees_with_transformers_in_f32`.

use std::path::{Path, PathBuf};

use deltalogic::model::block::config::Config;
use deltalogic::model::dev::family_files::{config, write_config};
use deltalogic::model::dev::gguf_write::{quantize_mxfp4, GgufWriter, Store};
use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::format::hf_export;
use deltalogic::model::scorer::{Backend, Scorer};
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use super::families::{bits, scores, tokens};

/// gpt-oss-20b's family file cut to test size: two layers (one local, one full), 4 experts of
/// width 32, 2 used per token, with its YaRN, sinks, biases and clamped SwiGLU.
pub(super) fn tiny_config() -> Config {
    let mut cfg = config("gpt-oss-20b-window16").unwrap();
    cfg.hidden = 64;
    cfg.intermediate = 32;
    cfg.heads = 4;
    cfg.kv_heads = 2;
    cfg.head_dim = 16;
    cfg.rope.rotary_dim = 16;
    cfg.layers = 2;
    cfg.local_layers = vec![true, false];
    if let Some(m) = &mut cfg.moe {
        (m.experts, m.experts_used, m.expert_intermediate) = (4, 2, 32);
    }
    cfg
}

/// The tiny file in f32, and the same with its experts' matrices rounded to MXFP4 (ggml type
/// 39) as llama-quantize's `MXFP4_MOE` stores them.
fn tiny_files(d: &Path) -> (PathBuf, PathBuf) {
    let f32s = write_config(d, "gpt-oss-tiny", &tiny_config(), Store::F32).unwrap();
    let g = Gguf::open(&f32s).unwrap();
    let mut w = GgufWriter::from_gguf(&g).unwrap();
    for l in 0..2 {
        for proj in ["gate", "up", "down"] {
            let name = format!("blk.{l}.ffn_{proj}_exps.weight");
            let (shape, data) = g.tensor_f32(&name).unwrap();
            w.remove_tensor(&name);
            w.raw_tensor(&name, &shape, 39, quantize_mxfp4(&data));
        }
    }
    let mx = d.join("gpt-oss-tiny-mxfp4.gguf");
    w.write(&mx).unwrap();
    (f32s, mx)
}

fn export(gguf: &Path, out: &Path) -> PathBuf {
    hf_export::export(gguf, out).unwrap();
    out.to_path_buf()
}

/// `scores` in the integer mode.
fn int8_scores(model: &Path) -> (Vec<u32>, Vec<u32>) {
    let s = Scorer::open(model, Backend::Int8).unwrap();
    let t = tokens();
    let state = s.prefill(&s.empty_state(), &t[..12]).unwrap();
    (
        bits(&s.score_continuation(&state, &t[12..]).unwrap()),
        bits(&s.next_logits(&state).unwrap()),
    )
}

/// A safetensors file's tensors: name, dtype, shape and bytes.
type Tensors = Vec<(String, Dtype, Vec<usize>, Vec<u8>)>;

fn read_tensors(path: &Path) -> Tensors {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Tensors = st
        .tensors()
        .into_iter()
        .map(|(n, v)| (n, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn write_tensors(path: &Path, tensors: &Tensors) {
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(n, t, s, b)| (n.clone(), TensorView::new(*t, s.clone(), b).unwrap()))
        .collect();
    std::fs::write(path, safetensors::serialize(views, None).unwrap()).unwrap();
}

/// The exported directory `dir` of the MXFP4 file `mx` rewritten in the released checkpoints'
/// form: each layer's `gate_up_proj` and `down_proj` as `_blocks` and `_scales` made from the
/// GGUF file's MXFP4 blocks (rows interleaved gate, up; values two a byte, the earlier low),
/// `quantization_config` saying so.
fn mxfp4_checkpoint(mx: &Path, dir: &Path) {
    let g = Gguf::open(mx).unwrap();
    let weights = dir.join("model.safetensors");
    let mut tensors = read_tensors(&weights);
    for l in 0..2 {
        // Each expert's GGUF rows ([experts, rows, cols] of 17-byte blocks), listed per expert.
        let rows = |proj: &str| -> (Vec<usize>, Vec<Vec<Vec<u8>>>) {
            let name = format!("blk.{l}.ffn_{proj}_exps.weight");
            let (shape, _, bytes) = g.tensor_blocks(&name).unwrap();
            let row = shape[2] / 32 * 17;
            let experts = bytes
                .chunks(shape[1] * row)
                .map(|e| e.chunks(row).map(<[u8]>::to_vec).collect())
                .collect();
            (shape, experts)
        };
        let ((gs, gate), (_, up), (ds, down)) = (rows("gate"), rows("up"), rows("down"));
        let gate_up: Vec<Vec<u8>> = (0..gs[0])
            .flat_map(|e| (0..2 * gs[1]).map(move |r| (e, r)))
            .map(|(e, r)| [&gate, &up][r % 2][e][r / 2].clone())
            .collect();
        let down: Vec<Vec<u8>> = down.into_iter().flatten().collect();
        for (stored, rows_of, [e, r, c]) in [
            ("gate_up_proj", gate_up, [gs[0], 2 * gs[1], gs[2]]),
            ("down_proj", down, [ds[0], ds[1], ds[2]]),
        ] {
            let (mut blocks, mut scales) = (Vec::new(), Vec::new());
            for b in rows_of.iter().flat_map(|row| row.chunks(17)) {
                scales.push(b[0]);
                let value = |k: usize| (b[1 + k % 16] >> (4 * (k / 16))) & 0x0f;
                blocks.extend((0..16).map(|j| value(2 * j) | (value(2 * j + 1) << 4)));
            }
            let name = format!("model.layers.{l}.mlp.experts.{stored}");
            tensors.retain(|t| t.0 != name);
            tensors.push((
                format!("{name}_blocks"),
                Dtype::U8,
                vec![e, r, c / 32, 16],
                blocks,
            ));
            tensors.push((
                format!("{name}_scales"),
                Dtype::U8,
                vec![e, r, c / 32],
                scales,
            ));
        }
    }
    write_tensors(&weights, &tensors);
    edit_config(dir, |c| {
        c["quantization_config"] = serde_json::json!({"quant_method": "mxfp4",
            "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
            "model.embed_tokens", "lm_head"]});
    });
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("config.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut c);
    std::fs::write(&path, serde_json::to_string_pretty(&c).unwrap()).unwrap();
}

/// A copy of the directory `src` in `dst`.
fn copy_dir(src: &Path, dst: &Path) -> PathBuf {
    std::fs::create_dir_all(dst).unwrap();
    for f in std::fs::read_dir(src).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dst.join(f.file_name())).unwrap();
    }
    dst.to_path_buf()
}

/// The error of opening `dir` as a model.
fn open_error(dir: &Path) -> String {
    match Scorer::open(dir, Backend::Flex) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn gpt_oss_exported_to_hugging_face_gives_the_gguf_files_bits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (f32s, _) = tiny_files(d);
    let hf = export(&f32s, &d.join("hf"));
    // transformers' layout: every expert's gate and up fused and interleaved, `x · W`.
    let tensors = read_tensors(&hf.join("model.safetensors"));
    let shape = |name: &str| {
        let t = tensors
            .iter()
            .find(|t| t.0 == name)
            .unwrap_or_else(|| panic!("{name}"));
        t.2.clone()
    };
    let x = |s: &str| format!("model.layers.1.mlp.experts.{s}");
    assert_eq!(shape(&x("gate_up_proj")), [4, 64, 64]);
    assert_eq!(shape(&x("gate_up_proj_bias")), [4, 64]);
    assert_eq!(shape(&x("down_proj")), [4, 32, 64]);
    assert_eq!(shape(&x("down_proj_bias")), [4, 64]);
    assert_eq!(shape("model.layers.0.mlp.router.weight"), [4, 64]);
    assert_eq!(shape("model.layers.0.self_attn.sinks"), [4]);
    // Expert 1's gate row 2, column 5 is the GGUF file's (interleaved: column 2 · 2 + 0).
    let g = Gguf::open(&f32s).unwrap();
    let (_, gate) = g.tensor_f32("blk.1.ffn_gate_exps.weight").unwrap();
    let (_, up) = g.tensor_f32("blk.1.ffn_up_exps.weight").unwrap();
    let fused = &tensors.iter().find(|t| t.0 == x("gate_up_proj")).unwrap().3;
    let at = |i: usize| f32::from_le_bytes(fused[4 * i..4 * i + 4].try_into().unwrap());
    let (e, j, c) = (1, 2, 5);
    assert_eq!(
        at(e * 64 * 64 + c * 64 + 2 * j),
        gate[(e * 32 + j) * 64 + c]
    );
    assert_eq!(
        at(e * 64 * 64 + c * 64 + 2 * j + 1),
        up[(e * 32 + j) * 64 + c]
    );
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hf.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["architectures"][0], "GptOssForCausalLM");
    assert_eq!(
        config["layer_types"],
        serde_json::json!(["sliding_attention", "full_attention"])
    );
    assert_eq!(config["rope_scaling"]["rope_type"], "yarn");

    let (a, b) = (scores(&f32s), scores(&hf));
    assert_eq!(bits(&a.0), bits(&b.0), "label log-probs");
    assert_eq!(bits(&a.1), bits(&b.1), "logits");
    // f32 weights both ways, so the integer mode's too.
    assert_eq!(int8_scores(&f32s), int8_scores(&hf));
    // A bf16 checkpoint (as transformers saves one) is gathered in its own type: the same bits
    // as an f32 one holding the same values, widened.
    let narrowed = |name: &str, widen: bool| {
        let dir = copy_dir(&hf, &d.join(name));
        let weights = dir.join("model.safetensors");
        let t: Tensors = read_tensors(&weights)
            .into_iter()
            .map(|(n, _, s, b)| match widen {
                true => (
                    n,
                    Dtype::F32,
                    s,
                    b.chunks(4).flat_map(|x| [0, 0, x[2], x[3]]).collect(),
                ),
                false => (
                    n,
                    Dtype::BF16,
                    s,
                    b.chunks(4).flat_map(|x| [x[2], x[3]]).collect(),
                ),
            })
            .collect();
        write_tensors(&weights, &t);
        scores(&dir)
    };
    let (bf16, widened) = (narrowed("bf16", false), narrowed("widened", true));
    assert_eq!(bits(&bf16.0), bits(&widened.0));
    assert_eq!(bits(&bf16.1), bits(&widened.1));
    assert_ne!(bits(&bf16.0), bits(&a.0), "bf16 rounds");
}

#[test]
fn an_mxfp4_checkpoint_gives_the_bits_of_the_gguf_file_with_the_same_experts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, mx) = tiny_files(d);
    let dense = export(&mx, &d.join("dense"));
    let released = copy_dir(&dense, &d.join("mxfp4"));
    mxfp4_checkpoint(&mx, &released);
    let names: Vec<String> = read_tensors(&released.join("model.safetensors"))
        .into_iter()
        .map(|t| t.0)
        .collect();
    assert!(names.contains(&"model.layers.0.mlp.experts.gate_up_proj_blocks".to_string()));
    assert!(!names.contains(&"model.layers.0.mlp.experts.gate_up_proj".to_string()));
    let (a, b, c) = (scores(&mx), scores(&released), scores(&dense));
    assert_eq!(bits(&a.0), bits(&b.0), "label log-probs");
    assert_eq!(bits(&a.1), bits(&b.1), "logits");
    // The dense export holds the same values in f32.
    assert_eq!(bits(&c.0), bits(&b.0));
    // MXFP4 experts both ways: llama.cpp's integer MXFP4 product gives the same bits too.
    assert_eq!(int8_scores(&mx), int8_scores(&released));
    let s = Scorer::open(&released, Backend::Int8).unwrap();
    let t = tokens();
    s.prefill(&s.empty_state(), &t[..12]).unwrap();
    assert!(
        s.model().experts_held().1 > 0,
        "the MXFP4 experts were repacked"
    );
    // `model inspect` shows the experts, the parameters a token runs through and the storage:
    // each layer's two expert matrices MXFP4, its two biases f32.
    let info = deltalogic::model::inspect::inspect(&released);
    assert_eq!(info.not_implemented, None);
    let experts = info.family.unwrap().experts.unwrap();
    assert_eq!((experts.experts, experts.experts_used), (4, 2));
    let dense = deltalogic::model::inspect::inspect(&dense).family.unwrap();
    assert_eq!(
        experts.active_parameters,
        dense.experts.unwrap().active_parameters
    );
    assert_eq!(
        experts.storage,
        [("F32".to_string(), 4), ("MXFP4".to_string(), 4)].into()
    );
}

#[test]
fn malformed_mxfp4_checkpoints_are_refused_naming_the_file_and_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, mx) = tiny_files(d);
    let good = export(&mx, &d.join("dense"));
    mxfp4_checkpoint(&mx, &good);
    let scales = "model.layers.1.mlp.experts.down_proj_scales";
    let spoiled = |name: &str, edit: &dyn Fn(&mut Tensors)| {
        let dir = copy_dir(&good, &d.join(name));
        let weights = dir.join("model.safetensors");
        let mut t = read_tensors(&weights);
        edit(&mut t);
        write_tensors(&weights, &t);
        let err = open_error(&dir);
        assert!(
            err.contains(&weights.display().to_string()),
            "{name}: names the file: {err}"
        );
        err
    };
    let err = spoiled("no-scales", &|t| t.retain(|t| t.0 != scales));
    assert!(
        err.contains("down_proj_blocks has no model.layers.1.mlp.experts.down_proj_scales"),
        "{err}"
    );
    let err = spoiled("short-scales", &|t| {
        let s = t.iter_mut().find(|t| t.0 == scales).unwrap();
        s.2[1] -= 1;
        s.3.truncate(s.2.iter().product());
    });
    assert!(
        err.contains(&format!("tensor {scales} has shape [4, 63, 1]")),
        "{err}"
    );
    let err = spoiled("nan-scale", &|t| {
        let s = t.iter_mut().find(|t| t.0 == scales).unwrap();
        s.3[5] = 255;
    });
    assert!(
        err.contains(&format!(
            "tensor {scales} holds a NaN scale (E8M0 255) for expert 0, row 5, block 0"
        )),
        "{err}"
    );
    let err = spoiled("f16-blocks", &|t| {
        let b = t
            .iter_mut()
            .find(|t| t.0.ends_with("1.mlp.experts.down_proj_blocks"))
            .unwrap();
        b.1 = Dtype::F16;
        b.2[3] = 8;
    });
    assert!(err.contains("down_proj_blocks is F16, not U8"), "{err}");

    // config.json: another quantisation, and values GGUF cannot say.
    let refused = |name: &str, edit: &dyn Fn(&mut serde_json::Value), what: &str| {
        let dir = copy_dir(&good, &d.join(name));
        edit_config(&dir, edit);
        let err = open_error(&dir);
        let config = dir.join("config.json").display().to_string();
        assert!(err.contains(&config) && err.contains(what), "{name}: {err}");
    };
    refused(
        "gptq",
        &|c| c["quantization_config"]["quant_method"] = "gptq".into(),
        "quant_method \"gptq\" is not implemented for gpt-oss",
    );
    refused(
        "limit",
        &|c| c["swiglu_limit"] = 5.0.into(),
        "swiglu_limit 5 is not implemented",
    );
    refused(
        "layer-types",
        &|c| c["layer_types"] = serde_json::json!(["sliding_attention", "chunked_attention"]),
        "layer type \"chunked_attention\" is not implemented",
    );
    refused(
        "no-rope",
        &|c| {
            c.as_object_mut().unwrap().remove("rope_scaling");
        },
        "neither rope_parameters nor rope_scaling",
    );
}

/// The released config.json's YaRN does not round its ramp's ends to whole pairs (`truncate`
/// false), where llama.cpp (and the export, saying `truncate: true`) does: read as transformers
/// reads it, it moves some pairs' frequencies, and so the scores; in transformers 5's
/// `rope_parameters` layout, the same.
#[test]
fn an_untruncated_yarn_is_read_as_transformers_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (f32s, _) = tiny_files(d);
    let hf = export(&f32s, &d.join("hf"));
    let truncated = scores(&hf);
    let untruncated = copy_dir(&hf, &d.join("untruncated"));
    edit_config(&untruncated, |c| {
        c["rope_scaling"]["truncate"] = false.into()
    });
    let a = scores(&untruncated);
    assert_ne!(bits(&a.0), bits(&truncated.0));
    let parameters = copy_dir(&untruncated, &d.join("parameters"));
    edit_config(&parameters, |c| {
        let o = c.as_object_mut().unwrap();
        let mut p = o.remove("rope_scaling").unwrap();
        p["rope_theta"] = o.remove("rope_theta").unwrap();
        o.insert("rope_parameters".into(), p);
    });
    assert_eq!(bits(&scores(&parameters).0), bits(&a.0));
}
