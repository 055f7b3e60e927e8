//! Record decoding from the store: any bytes as a value of every kind, validated access.
#![no_main]
use deltalogic::eval::cache;
use deltalogic::store::{Id, Kind};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    for kind in Kind::ALL {
        let _ = cache::check(kind, Path::new("fuzz.redb"), &Id([0; 32]), data);
    }
});
