//! The Belief-R reader: its step-t and step-t+1 CSV files (split at the first 0xFF).
#![no_main]
use deltalogic::datasets::{self, Format};
use libfuzzer_sys::fuzz_target;

const FILES: [&str; 2] = ["basic_time_t.csv", "queries_time_t1.csv"];

fuzz_target!(|data: &[u8]| {
    let parts = deltalogic_fuzz::split(data, 2);
    deltalogic_fuzz::with_files(&FILES, &parts, |dir| {
        let _ = datasets::read_file(Format::BeliefR, dir, &dir.join(FILES[0]));
    });
});
