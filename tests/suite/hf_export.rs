//! The Hugging Face path on real weights (issue 11, item 6). No real HF checkpoint can be
//! downloaded here, so `deltalogic model export-hf` writes SmolLM2's dequantised weights as one
//! (f32 safetensors in HF names and row order, config.json, tokenizer.json built from the GGUF
//! metadata), in a temporary directory; scoring it must give the GGUF file's f32 scores to the
//! bit, with the same token ids.

use crate::common;
use std::path::Path;
use std::process::Command;

use deltalogic::model::format::gguf::Gguf;
use deltalogic::model::format::hf_export;
use deltalogic::model::scorer::{set_threads, Backend, Scorer};

/// Dataset prompts with their labels: FOLIO contexts (every 7th case of the SmolLM2 golden
/// file), ProofWriter questions with lettered options, RuleTaker (closed world) statements, and
/// a FOLIO context in SmolLM2's chat format, so special tokens are read from the text too.
fn requests() -> Vec<(String, Vec<String>)> {
    let labels = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out: Vec<(String, Vec<String>)> = common::golden("smollm2.json")
        .cases
        .into_iter()
        .step_by(7)
        .map(|c| (c.context, c.labels.into_iter().map(|l| l.label).collect()))
        .collect();
    let chat = format!(
        "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        out[0].0
    );
    out.push((chat, labels(&["True", "False", "Uncertain"])));

    let path = common::dataset("proofwriter/logic-lm/dev.json");
    let items: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for item in items.iter().take(3) {
        let options: Vec<&str> = item["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap())
            .collect();
        let context = format!(
            "{}\n{}\n{}\nAnswer:",
            item["context"].as_str().unwrap(),
            item["question"].as_str().unwrap(),
            options.join("\n")
        );
        out.push((context, labels(&[" A", " B", " C"])));
    }

    let path = common::dataset("ruletaker_cwa/depth-1/test.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    for line in text.lines().take(2) {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let question = &record["questions"][1];
        let context = format!(
            "{}\nStatement: {}\nTrue or false? Answer:",
            record["context"].as_str().unwrap(),
            question["text"].as_str().unwrap()
        );
        out.push((context, labels(&[" True", " False"])));
    }
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Writes the directory with the command a user runs.
fn export_with_cli(model: &Path, out: &Path) {
    let run = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
        .args(["--json", "model", "export-hf", "--model"])
        .arg(model)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "export-hf failed: {stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["architecture"], "llama", "{stdout}");
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    any(
        dataset_missing = "proofwriter/logic-lm",
        dataset_missing = "ruletaker_cwa"
    ),
    ignore = "needs the datasets proofwriter/logic-lm and ruletaker_cwa (deltalogic datasets where)"
)]
fn smollm2_as_a_hugging_face_directory_scores_the_same_bits_as_its_gguf_file() {
    let model = common::smollm2();
    set_threads(2).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hf_dir = dir.path().join("smollm2-hf");
    export_with_cli(&model, &hf_dir);

    // The chat template the runner renders dialogue prompts with travels too.
    let gguf = Gguf::open(&model).unwrap();
    let config = std::fs::read_to_string(hf_dir.join("tokenizer_config.json")).unwrap();
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(
        config["chat_template"].as_str(),
        Some(gguf.get_str("tokenizer.chat_template").unwrap())
    );

    let from_gguf = Scorer::open(&model, Backend::Flex).unwrap();
    let from_hf = Scorer::open(&hf_dir, Backend::Flex).unwrap();
    assert_eq!(from_hf.model().config(), from_gguf.model().config());
    assert_eq!(from_hf.end_of_generation(), from_gguf.end_of_generation());

    let awkward = "Numbers 1234567 and 3.14159; café, naïve, 東京, emoji 🙂\ttab\n\n  spaces \
        <|im_start|>special<|im_end|> <|endoftext|> don't WE'LL it's";
    let ids = from_gguf.tokenize(awkward).unwrap();
    assert_eq!(from_hf.tokenize(awkward).unwrap(), ids, "{awkward:?}");
    assert_eq!(
        from_hf.decode(&ids).unwrap(),
        from_gguf.decode(&ids).unwrap()
    );

    let requests = requests();
    let mut labels = 0;
    for (context, label_texts) in &requests {
        let (ctx, label_tokens) = from_gguf.split_tokens(context, label_texts).unwrap();
        assert_eq!(
            from_hf.split_tokens(context, label_texts).unwrap(),
            (ctx.clone(), label_tokens.clone()),
            "token ids of {context:?} and its labels"
        );
        // The scorer's own steps, as the runner takes them: the context once, each label from
        // its state; and every logit of the next token (what generation reads).
        let run = |s: &Scorer| {
            let state = s.prefill(&s.empty_state(), &ctx).unwrap();
            let scores: Vec<Vec<u32>> = label_tokens
                .iter()
                .map(|t| bits(&s.score_continuation(&state, t).unwrap()))
                .collect();
            (scores, bits(&s.next_logits(&state).unwrap()))
        };
        let (want, want_next) = run(&from_gguf);
        let (got, got_next) = run(&from_hf);
        assert_eq!(
            got, want,
            "log-prob bits of {label_texts:?} after {context:?}"
        );
        assert!(got_next == want_next, "next-token logits after {context:?}");
        labels += want.len();
    }
    eprintln!(
        "{} prompts, {labels} labels: equal token ids, log-prob bits and next-token logit bits",
        requests.len()
    );

    // Both formats of a model compute the same bits, so they register under one scorer
    // version (their ids still differ: the files differ).
    let reg = deltalogic::store::Store::open_write(&dir.path().join("s.redb")).unwrap();
    let version = |path: &Path| {
        let (id, _) = deltalogic::eval::models::add(&reg, path, None, Backend::Flex).unwrap();
        reg.get::<deltalogic::eval::ModelRecord>(&id)
            .unwrap()
            .unwrap()
            .scorer_version
    };
    assert_eq!(version(&model), deltalogic::eval::models::SCORER_VERSION);
    assert_eq!(version(&hf_dir), deltalogic::eval::models::SCORER_VERSION);
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn export_refuses_a_directory_that_is_not_empty_and_leaves_it_alone() {
    let model = common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("notes.txt");
    std::fs::write(&keep, "mine").unwrap();
    let err = hf_export::export(&model, dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&dir.path().display().to_string()) && err.contains("not empty"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1);
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "mine");
}

/// Every family's random-weight checkpoint (`model::dev::fixtures`), converted to GGUF (q8_0 for
/// the matrices, so the export dequantises) and exported back: the export scores the GGUF
/// file's f32 bits, and its config.json is the family's own.
#[test]
fn every_family_exports_to_a_directory_with_the_gguf_files_bits() {
    use deltalogic::model::dev::fixtures::{self, SEED};
    use deltalogic::model::dev::gguf_write::{hf_to_gguf, Store};
    let dir = tempfile::tempdir().unwrap();
    let t: Vec<u32> = (0..20u32).map(|i| (i * 37 + 11) % 320).collect();
    let score = |path: &Path| {
        let s = Scorer::open(path, Backend::Flex).unwrap();
        let state = s.prefill(&s.empty_state(), &t[..12]).unwrap();
        let mut out = s.score_continuation(&state, &t[12..]).unwrap();
        out.extend(s.next_logits(&state).unwrap());
        bits(&out)
    };
    let archs = fixtures::archs().into_iter().chain(fixtures::more_archs());
    for arch in archs {
        fixtures::write_one(dir.path(), arch, SEED).unwrap();
        if arch == "llama3" {
            // Llama 3.1's released scaling: config.json can say it (the fixture's own window
            // of 64 it cannot, see below).
            set_rope_window(&dir.path().join(arch), 8192);
        }
        let gguf = dir.path().join(format!("{arch}.gguf"));
        hf_to_gguf(&dir.path().join(arch), &gguf, Store::Q8_0, None).unwrap();
        let out = dir.path().join(format!("{arch}-exported"));
        let e = hf_export::export(&gguf, &out).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(score(&out), score(&gguf), "{arch}: exported bits");
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap())
                .unwrap();
        let written: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(arch).join("config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            config["architectures"], written["architectures"],
            "{arch} ({})",
            e.architecture
        );
    }
}

fn set_rope_window(dir: &Path, window: u64) {
    let path = dir.join("config.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    c["rope_scaling"]["original_max_position_embeddings"] = serde_json::json!(window);
    std::fs::write(&path, serde_json::to_string_pretty(&c).unwrap()).unwrap();
}

/// Llama 3 frequency factors no released `rope_scaling` gives are refused, naming what differs.
#[test]
fn export_refuses_rope_factors_config_json_cannot_say() {
    use deltalogic::model::dev::fixtures::{self, SEED};
    use deltalogic::model::dev::gguf_write::{hf_to_gguf, Store};
    let dir = tempfile::tempdir().unwrap();
    fixtures::write_one(dir.path(), "llama3", SEED).unwrap();
    let gguf = dir.path().join("llama3.gguf");
    hf_to_gguf(&dir.path().join("llama3"), &gguf, Store::F32, None).unwrap();
    let out = dir.path().join("out");
    let err = hf_export::export(&gguf, &out).unwrap_err().to_string();
    assert!(
        err.contains("cannot say") && err.contains("freq_factors"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing left");
}

/// A Gemma norm weight that `(w − 1) + 1` does not give back is refused by name, and nothing
/// is left in the directory.
#[test]
fn export_refuses_a_norm_no_checkpoint_can_hold_with_its_bits() {
    use deltalogic::model::dev::fixtures::{self, SEED};
    use deltalogic::model::dev::gguf_write::{hf_to_gguf, GgufWriter, Store};
    let dir = tempfile::tempdir().unwrap();
    fixtures::write_one(dir.path(), "gemma2", SEED).unwrap();
    let gguf = dir.path().join("gemma2.gguf");
    hf_to_gguf(&dir.path().join("gemma2"), &gguf, Store::F32, None).unwrap();
    let g = Gguf::open(&gguf).unwrap();
    let mut w = GgufWriter::from_gguf(&g).unwrap();
    let (shape, mut data) = g.tensor_f32("blk.1.attn_norm.weight").unwrap();
    data[3] = 1e-9;
    w.remove_tensor("blk.1.attn_norm.weight");
    w.tensor("blk.1.attn_norm.weight", &shape, &data, Store::F32);
    let bad = dir.path().join("bad.gguf");
    w.write(&bad).unwrap();
    let out = dir.path().join("out");
    let err = hf_export::export(&bad, &out).unwrap_err().to_string();
    assert!(
        err.contains("blk.1.attn_norm.weight") && err.contains("offset from 1"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing left");
}

/// A directory given where a GGUF file belongs is named as such, once.
#[test]
fn export_says_a_directory_is_not_a_gguf_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = hf_export::export(dir.path(), &dir.path().join("out"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is a directory") && err.contains("GGUF file"),
        "{err}"
    );
    assert!(
        !err.contains("os error"),
        "what is wrong, not an errno: {err}"
    );
}
