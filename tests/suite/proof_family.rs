//! A model family is one file and one catalogue line (issue 43). This module is that file for a
//! family the library does not know — `toyllm`: Qwen2's block under names of its own, with one
//! key of its own that says whether q, k and v carry biases — and proves it loads from both
//! formats, scores with the same bits as the built-in family it copies, converts, exports,
//! inspects and refuses what it does not implement, all through a `Families` defined here,
//! with no change to `src/`. A second test keeps every built-in family's name inside its own
//! file.

use std::path::{Path, PathBuf};

use deltalogic::model::block::config::Config;
use deltalogic::model::block::transformer::{Naming, Part};
use deltalogic::model::dev::fixtures::{self, SEED};
use deltalogic::model::dev::gguf_write::{hf_to_gguf_in, Meta, Store};
use deltalogic::model::family::read::{gguf_base_config, refuse_unknown_keys, HfJson};
use deltalogic::model::family::{llama, Families, Family, FAMILIES};
use deltalogic::model::format::gguf::{Gguf, Value};
use deltalogic::model::format::hf_export;
use deltalogic::model::inspect;
use deltalogic::model::scorer::{self, Backend, Scorer};
use deltalogic::model::ModelError;

struct Toy;

/// Its GGUF tensor names: none of llama.cpp's.
fn toy_gguf_name(part: Part) -> String {
    let blk = |l: usize, s: &str| format!("toy.{l}.{s}");
    match part {
        Part::Embed => "toy.embed".into(),
        Part::FinalNorm => "toy.norm".into(),
        Part::LmHead => "toy.head".into(),
        Part::AttnNorm(l) => blk(l, "attn_norm"),
        Part::Q(l) => blk(l, "q"),
        Part::K(l) => blk(l, "k"),
        Part::V(l) => blk(l, "v"),
        Part::QBias(l) => blk(l, "q_bias"),
        Part::KBias(l) => blk(l, "k_bias"),
        Part::VBias(l) => blk(l, "v_bias"),
        Part::O(l) => blk(l, "o"),
        Part::MlpNorm(l) => blk(l, "mlp_norm"),
        Part::Gate(l) => blk(l, "gate"),
        Part::Up(l) => blk(l, "up"),
        Part::Down(l) => blk(l, "down"),
        other => format!("toy.unused.{other:?}"),
    }
}

impl Family for Toy {
    fn gguf_arch(&self) -> &'static str {
        "toyllm"
    }

    fn hf_classes(&self) -> &'static [&'static str] {
        &["ToyForCausalLM"]
    }

    fn hf_model_types(&self) -> &'static [&'static str] {
        &["toy"]
    }

    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError> {
        refuse_unknown_keys(g, "toyllm", &["toy_bias"])?;
        let mut cfg = gguf_base_config(g, "toyllm")?;
        cfg.qkv_bias = g.get_bool("toyllm.toy_bias")?;
        // The shared reader knows llama.cpp's name of the LM head; the toy has its own.
        cfg.tied_embeddings = g.tensor_info(&toy_gguf_name(Part::LmHead)).is_none();
        Ok(cfg)
    }

    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError> {
        json.expect_activation(&["silu"])?;
        let mut cfg = json.base_config("toyllm")?;
        cfg.qkv_bias = json.bool_or("toy_bias", false)?;
        Ok(cfg)
    }

    fn gguf_namings(&self) -> &'static [Naming] {
        &[toy_gguf_name]
    }

    fn hf_naming(&self) -> Naming {
        llama::hf_name
    }

    fn hf_config(&self, cfg: &Config, json: &mut serde_json::Map<String, serde_json::Value>) {
        json.insert("toy_bias".into(), serde_json::json!(cfg.qkv_bias));
    }

    fn gguf_metadata(&self, cfg: &Config) -> Vec<(String, Value)> {
        vec![("toyllm.toy_bias".into(), Value::Bool(cfg.qkv_bias))]
    }
}

/// The built-in families and the toy: what this module's "command line" knows.
const WITH_TOY: Families = Families(&[
    &llama::Llama,
    &deltalogic::model::family::qwen2::Qwen2,
    &Toy,
]);

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Log-probs of 8 tokens after 12, and the logits after the 12.
fn scores(families: &Families, model: &Path) -> (Vec<f32>, Vec<f32>) {
    let s = Scorer::open_in(families, model, Backend::Flex).unwrap();
    let t: Vec<u32> = (0..20u32).map(|i| (i * 37 + 11) % 320).collect();
    let state = s.prefill(&s.empty_state(), &t[..12]).unwrap();
    (
        s.score_continuation(&state, &t[12..]).unwrap(),
        s.next_logits(&state).unwrap(),
    )
}

/// The qwen2 fixture (biases on q, k, v; bf16 weights) rewritten as a toy checkpoint.
fn toy_checkpoint(dir: &Path) -> (PathBuf, PathBuf) {
    fixtures::write_one(dir, "qwen2", SEED).unwrap();
    let qwen2 = dir.join("qwen2");
    let toy = dir.join("toy");
    std::fs::create_dir_all(&toy).unwrap();
    for f in std::fs::read_dir(&qwen2).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, toy.join(f.file_name().unwrap())).unwrap();
    }
    let path = toy.join("config.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    c["architectures"] = serde_json::json!(["ToyForCausalLM"]);
    c["model_type"] = serde_json::json!("toy");
    c["toy_bias"] = serde_json::json!(true);
    std::fs::write(&path, serde_json::to_string_pretty(&c).unwrap()).unwrap();
    (qwen2, toy)
}

#[test]
fn a_family_defined_in_a_test_loads_scores_exports_and_inspects() {
    let dir = tempfile::tempdir().unwrap();
    let (qwen2, toy) = toy_checkpoint(dir.path());

    // The same weights score the same bits as the built-in family they copy, from config.json.
    let want = scores(&FAMILIES, &qwen2);
    let from_hf = scores(&WITH_TOY, &toy);
    assert_eq!(bits(&from_hf.0), bits(&want.0), "toy from HF: log-probs");
    assert_eq!(bits(&from_hf.1), bits(&want.1), "toy from HF: logits");

    // Converted to GGUF under its own names and key, and read back: the same bits again.
    let gguf = dir.path().join("toy.gguf");
    hf_to_gguf_in(&WITH_TOY, &toy, &gguf, Store::F32, None).unwrap();
    let g = Gguf::open(&gguf).unwrap();
    assert_eq!(g.architecture().unwrap(), "toyllm");
    assert!(
        g.tensor_info("toy.0.q_bias").is_some(),
        "its own tensor names"
    );
    assert!(g.tensor_info("blk.0.attn_q.weight").is_none());
    assert_eq!(g.get("toyllm.toy_bias"), Some(&Value::Bool(true)));
    let from_gguf = scores(&WITH_TOY, &gguf);
    assert_eq!(
        bits(&from_gguf.0),
        bits(&want.0),
        "toy from GGUF: log-probs"
    );
    assert_eq!(bits(&from_gguf.1), bits(&want.1), "toy from GGUF: logits");

    // Exported back to a Hugging Face directory, which loads with the same bits.
    let out = dir.path().join("exported");
    let e = hf_export::export_in(&WITH_TOY, &gguf, &out).unwrap();
    assert_eq!(e.architecture, "toyllm");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["architectures"][0], "ToyForCausalLM");
    assert_eq!(config["toy_bias"], true);
    let exported = scores(&WITH_TOY, &out);
    assert_eq!(bits(&exported.0), bits(&want.0), "exported toy: log-probs");

    // Inspected as its family, with its key read.
    let i = inspect::inspect_in(&WITH_TOY, &gguf);
    assert_eq!(i.not_implemented, None);
    let f = i.family.expect("the toy is described");
    assert_eq!(f.family, "toyllm");
    assert!(f.qkv_bias);
    let (cfg, _) = scorer::check_in(&WITH_TOY, &gguf).unwrap();
    assert!(cfg.qkv_bias);

    // Unknown to the built-in catalogue, by name, with what is known.
    let err = Scorer::open(&gguf, Backend::Flex)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("\"toyllm\"") && err.contains("qwen2"),
        "unknown family named: {err}"
    );
    let err = scorer::check(&toy).err().unwrap().to_string();
    assert!(err.contains("ToyForCausalLM"), "{err}");
}

#[test]
fn a_test_defined_family_refuses_a_key_it_does_not_implement() {
    let dir = tempfile::tempdir().unwrap();
    let (_, toy) = toy_checkpoint(dir.path());
    let gguf = dir.path().join("toy.gguf");
    hf_to_gguf_in(&WITH_TOY, &toy, &gguf, Store::F32, None).unwrap();
    let src = Gguf::open(&gguf).unwrap();
    let mut w = deltalogic::model::dev::gguf_write::GgufWriter::from_gguf(&src).unwrap();
    w.kv("toyllm.toy_sliding_window", Meta::U32(8));
    let bad = dir.path().join("bad.gguf");
    w.write(&bad).unwrap();
    let err = Scorer::open_in(&WITH_TOY, &bad, Backend::Flex)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("toyllm.toy_sliding_window") && err.contains("not implemented"),
        "{err}"
    );
}

/// Where a built-in family's name may be written as a string outside its own file, and why: not
/// as a family, but as a name of something else that happens to be spelled the same.
const ELSEWHERE: &[(&str, &str, &str)] = &[
    (
        "src/model/tokenize/mod.rs",
        "llama",
        "tokenizer.ggml.model's name of SentencePiece vocabularies",
    ),
    (
        "src/model/tokenize/mod.rs",
        "qwen2",
        "tokenizer.ggml.pre's name of Qwen2's pre-tokenizer",
    ),
    (
        "src/model/tokenize/mod.rs",
        "phi3",
        "general.name, by which llama.cpp's vocabulary loader strips spaces after Phi-3's \
         special tokens",
    ),
    (
        "src/model/tokenize/mod.rs",
        "gemma4",
        "tokenizer.ggml.model's name of Gemma 4's vocabulary (and llama.cpp's pre-tokenizer of \
         that name)",
    ),
    (
        "src/model/tokenize/mod.rs",
        "qwen35",
        "tokenizer.ggml.pre's name of Qwen3.5's pre-tokenizer",
    ),
];

#[test]
fn no_family_name_is_matched_outside_its_own_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(root.join("src")) {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "rs") {
            let rel = entry.path().strip_prefix(root).unwrap();
            // Code only: comments may name a family.
            let text: String = std::fs::read_to_string(entry.path())
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            files.push((rel.to_string_lossy().replace('\\', "/"), text));
        }
    }
    let mut wrong = Vec::new();
    for family in FAMILIES.0 {
        let names = std::iter::once(family.gguf_arch())
            .chain(family.hf_classes().iter().copied())
            .chain(family.hf_model_types().iter().copied());
        for name in names {
            let quoted = format!("\"{name}\"");
            let holders: Vec<&str> = files
                .iter()
                .filter(|(_, text)| text.contains(&quoted))
                .map(|(path, _)| path.as_str())
                .collect();
            let own: Vec<&&str> = holders
                .iter()
                .filter(|p| p.starts_with("src/model/family/"))
                .collect();
            if own.len() != 1 {
                wrong.push(format!("{quoted} in {} family files: {own:?}", own.len()));
            }
            for path in holders
                .iter()
                .filter(|p| !p.starts_with("src/model/family/"))
            {
                let allowed = ELSEWHERE.iter().any(|(f, n, _)| f == path && *n == name);
                if !allowed {
                    wrong.push(format!("{quoted} in {path}"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "family names outside their files: {wrong:#?}"
    );
}
