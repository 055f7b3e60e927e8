//! The Hugging Face loader: config.json and model.safetensors (split at the first 0xFF), with
//! a fixed small tokenizer, opened as the scorer opens them.
#![no_main]
use deltalogic::model::scorer::{Backend, Scorer};
use libfuzzer_sys::fuzz_target;

const TOKENIZER: &[u8] = include_bytes!("../../fixtures/hf/llama/tokenizer.json");

fuzz_target!(|data: &[u8]| {
    let parts = deltalogic_fuzz::split(data, 2);
    deltalogic_fuzz::with_files(
        &["config.json", "model.safetensors", "tokenizer.json"],
        &[parts[0], parts[1], TOKENIZER],
        |dir| {
            let _ = Scorer::open(dir, Backend::Flex);
        },
    );
});
