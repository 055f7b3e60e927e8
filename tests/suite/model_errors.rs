//! Bad model input gives an error that names the file, never a panic.

use std::path::{Path, PathBuf};

use deltalogic::model::scorer::{Backend, Scorer};

fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/hf/llama");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("llama");
    std::fs::create_dir(&dir).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    (tmp, dir)
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("config.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// Opening fails and the message names `file` (and `also`, if given).
fn fails_naming(dir: &Path, file: &Path, also: &str) {
    let err = match Scorer::open(dir, Backend::Flex) {
        Ok(_) => panic!("{} opened despite bad input", dir.display()),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&file.display().to_string()),
        "error does not name {}: {err}",
        file.display()
    );
    assert!(err.contains(also), "error does not mention {also:?}: {err}");
}

#[test]
fn shape_mismatch_names_the_weights_file_and_tensor() {
    let (_tmp, dir) = fixture_copy();
    edit_config(&dir, |c| c["intermediate_size"] = 80.into());
    fails_naming(&dir, &dir.join("model.safetensors"), "mlp.gate_proj.weight");
}

#[test]
fn missing_tokenizer_names_the_file() {
    let (_tmp, dir) = fixture_copy();
    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    fails_naming(&dir, &dir.join("tokenizer.json"), "");
}

#[test]
fn unknown_architecture_names_config_json() {
    let (_tmp, dir) = fixture_copy();
    edit_config(&dir, |c| {
        c["architectures"] = serde_json::json!(["MambaForCausalLM"])
    });
    fails_naming(&dir, &dir.join("config.json"), "MambaForCausalLM");
}

#[test]
fn malformed_config_and_missing_keys_name_config_json() {
    let (_tmp, dir) = fixture_copy();
    edit_config(&dir, |c| {
        c.as_object_mut().unwrap().remove("hidden_size");
    });
    fails_naming(&dir, &dir.join("config.json"), "hidden_size");
    std::fs::write(dir.join("config.json"), "{ not json").unwrap();
    fails_naming(&dir, &dir.join("config.json"), "JSON");
}

#[test]
fn truncated_weights_name_the_file() {
    let (_tmp, dir) = fixture_copy();
    let path = dir.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    fails_naming(&dir, &path, "safetensors");
}

#[test]
fn unusable_requests_are_errors_not_panics() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/hf/llama");
    let scorer = Scorer::open(&dir, Backend::Flex).unwrap();
    let labels = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(
        scorer.score("", &labels(&[" True"])).is_err(),
        "empty context"
    );
    assert!(
        scorer.score("Answer:", &labels(&[""])).is_err(),
        "empty label"
    );
    // "Answer: " + "True": the space merges into the label's token, so the boundary breaks.
    let err = scorer
        .score("Answer: ", &labels(&["True"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("prefix"), "{err}");
    assert!(scorer
        .score_continuation(&scorer.empty_state(), &[1])
        .is_err());
    let state = scorer.prefill(&scorer.empty_state(), &[1, 2]).unwrap();
    assert!(
        scorer.score_continuation(&state, &[1_000_000]).is_err(),
        "token outside vocab"
    );
    let long = vec![5u32; 600];
    assert!(
        scorer.prefill(&state, &long).is_err(),
        "past max_position_embeddings"
    );
}
