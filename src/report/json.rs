//! The JSON report: every entry with its benchmark's own metric structure.

use super::Entry;
use anyhow::Result;

pub fn document(entries: &[Entry]) -> Result<String> {
    let doc = serde_json::json!({
        "results": entries,
        "robustness": super::robustness::conclusions(entries),
    });
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}
