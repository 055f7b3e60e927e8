//! The English theory parser (ProofWriter / RuleTaker sentences) and query parser.
#![no_main]
use deltalogic::logic::english;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(theory) = english::parse_theory(s) {
            let _ = english::signature(&theory);
        }
        let _ = english::parse_query(s);
    }
});
