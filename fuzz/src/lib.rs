//! What the fuzz targets share: each reader is driven through the same entry point the tool
//! uses, on files written to a private temporary folder (the readers take paths).

use deltalogic::datasets::{self, Format};
use std::path::Path;

/// Writes `parts` as files named `names` into a fresh folder and runs `f` on the folder.
pub fn with_files<T>(names: &[&str], parts: &[&[u8]], f: impl FnOnce(&Path) -> T) -> T {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (name, bytes) in names.iter().zip(parts) {
        std::fs::write(dir.path().join(name), bytes).expect("write a fuzz input");
    }
    f(dir.path())
}

/// Splits one input into `n` parts at the first `n - 1` occurrences of a 0xFF byte (never in
/// valid UTF-8, so the text parts stay free).
pub fn split(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut parts: Vec<&[u8]> = data.splitn(n, |&b| b == 0xFF).collect();
    parts.resize(n, &[]);
    parts
}

/// Reads `data` as a one-file dataset of `format`; errors are fine, panics are not.
pub fn read_dataset(format: Format, file_name: &str, data: &[u8]) {
    with_files(&[file_name], &[data], |dir| {
        let _ = datasets::read_file(format, dir, &dir.join(file_name));
    });
}
