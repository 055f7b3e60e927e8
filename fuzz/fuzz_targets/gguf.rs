//! The GGUF reader: header, metadata, tensor table, and the model config read from it.
#![no_main]
use deltalogic::model::{config, gguf::Gguf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    deltalogic_fuzz::with_files(&["m.gguf"], &[data], |dir| {
        if let Ok(g) = Gguf::open(dir.join("m.gguf")) {
            if let Ok(arch) = g.architecture() {
                let _ = config::gguf_base_config(&g, &arch.to_string());
            }
        }
    });
});
