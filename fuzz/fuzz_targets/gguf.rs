//! The GGUF reader: header, metadata, tensor table, and the model config read from it.
#![no_main]
use deltalogic::model::family::FAMILIES;
use deltalogic::model::format::gguf::Gguf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    deltalogic_fuzz::with_files(&["m.gguf"], &[data], |dir| {
        if let Ok(g) = Gguf::open(dir.join("m.gguf")) {
            if let Ok(family) = FAMILIES.of_gguf(&g) {
                let _ = family.config_from_gguf(&g);
            }
        }
    });
});
