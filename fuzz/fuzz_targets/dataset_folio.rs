//! The folio reader on one file.
#![no_main]
use deltalogic::datasets::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    deltalogic_fuzz::read_dataset(Format::Folio, "test.jsonl", data);
});
