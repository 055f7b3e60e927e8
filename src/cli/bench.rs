//! `deltalogic bench`: prefill throughput of the transformer on each backend next to llama.cpp's
//! `llama-bench` on the same file, and peak memory against the f32 weight size. A benchmark, not
//! a test: it prints numbers and checks nothing.
//!
//! Each (model, backend) runs in a child process so that its peak RSS (VmHWM) is its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};

use crate::model::scorer::{set_threads, Backend, Scorer};

#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Model files or directories to measure.
    #[arg(long = "model", required = true)]
    pub models: Vec<PathBuf>,
    /// Prompt length in tokens.
    #[arg(long, default_value_t = 256)]
    pub tokens: usize,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Timed repetitions after one warm-up; the best is reported.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// llama.cpp's bin directory (with llama-bench), for the side-by-side column.
    #[arg(long)]
    pub llama_bin: Option<PathBuf>,
    /// Measure one backend in this process and print one JSON line (used by the driver).
    #[arg(long, value_enum)]
    pub only: Option<Backend>,
}

/// The numerics modes.
fn backends() -> Vec<Backend> {
    vec![Backend::Flex, Backend::Int8]
}

/// Plain English, repeated until the prompt is long enough.
const TEXT: &str =
    "All people who regularly drink coffee are dependent on caffeine. People either \
    regularly drink coffee or joke about being addicted to caffeine. No one who jokes about being \
    addicted to caffeine is unaware that caffeine is a drug. Rina is either a student and unaware \
    that caffeine is a drug, or neither a student nor unaware that caffeine is a drug. ";

pub fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    match args.only {
        Some(backend) => {
            let model = args.models.first().context("--only needs one --model")?;
            let r = measure(model, backend, args)?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(())
        }
        None => drive(args),
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Measurement {
    tokens_per_s: f64,
    load_s: f64,
    peak_rss_mib: f64,
    f32_weights_mib: f64,
}

fn measure(model: &Path, backend: Backend, args: &BenchArgs) -> anyhow::Result<Measurement> {
    set_threads(args.threads)?;
    let t0 = Instant::now();
    let scorer = Scorer::open(model, backend)?;
    let load_s = t0.elapsed().as_secs_f64();
    let mut text = String::new();
    let tokens = loop {
        text.push_str(TEXT);
        let t = scorer.tokenize(&text)?;
        if t.len() >= args.tokens {
            break t[..args.tokens].to_vec();
        }
    };
    let empty = scorer.empty_state();
    let mut best = f64::INFINITY;
    for _ in 0..=args.reps {
        let t = Instant::now();
        scorer.prefill(&empty, &tokens)?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    let params = scorer.model().config().parameter_count();
    Ok(Measurement {
        tokens_per_s: args.tokens as f64 / best,
        load_s,
        peak_rss_mib: peak_rss_kib()? / 1024.0,
        f32_weights_mib: (params * 4) as f64 / (1024.0 * 1024.0),
    })
}

/// VmHWM: the process's peak resident set.
fn peak_rss_kib() -> anyhow::Result<f64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM in /proc/self/status")?;
    let kib = line.split_whitespace().nth(1).and_then(|v| v.parse().ok());
    kib.context("unreadable VmHWM line")
}

fn drive(args: &BenchArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating this executable")?;
    println!(
        "prefill, {} tokens, {} threads (best of {})",
        args.tokens, args.threads, args.reps
    );
    println!(
        "{:<40} {:>8} {:>10} {:>10} {:>7} {:>9} {:>9} {:>6}",
        "model", "backend", "tok/s", "llama.cpp", "ratio", "RSS MiB", "f32 MiB", "RSS/w"
    );
    for model in &args.models {
        let reference = match &args.llama_bin {
            Some(bin) => Some(llama_bench(bin, model, args)?),
            None => None,
        };
        for backend in backends() {
            let out = Command::new(&exe)
                .arg("bench")
                .args(["--model".as_ref(), model.as_os_str()])
                .args([
                    "--tokens",
                    &args.tokens.to_string(),
                    "--threads",
                    &args.threads.to_string(),
                ])
                .args([
                    "--reps",
                    &args.reps.to_string(),
                    "--only",
                    &format!("{backend:?}").to_lowercase(),
                ])
                .output()
                .context("running the benchmark child")?;
            if !out.status.success() {
                bail!(
                    "{} on {backend:?}: {}",
                    model.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let m: Measurement = serde_json::from_slice(&out.stdout).context("child output")?;
            let name = model.file_name().unwrap_or_default().to_string_lossy();
            let (lc, ratio, note) = match reference {
                Some((r, note)) => (
                    format!("{r:.1}"),
                    format!("{:.2}", m.tokens_per_s / r),
                    note,
                ),
                None => ("-".into(), "-".into(), ""),
            };
            println!(
                "{:<40} {:>8} {:>10.1} {:>10} {:>7} {:>9.0} {:>9.0} {:>6.2}",
                name,
                format!("{backend:?}").to_lowercase(),
                m.tokens_per_s,
                lc,
                ratio,
                m.peak_rss_mib,
                m.f32_weights_mib,
                m.peak_rss_mib / m.f32_weights_mib
            );
            if !note.is_empty() {
                println!("  note:{note}");
            }
        }
    }
    Ok(())
}

/// llama-bench's prompt-processing tokens/s on the same file and thread count. Weight repacking
/// is llama.cpp's default; where its repacked (AMX) kernels crash, as on some CPUs, the run is
/// repeated without, and the note says so.
fn llama_bench(bin: &Path, model: &Path, args: &BenchArgs) -> anyhow::Result<(f64, &'static str)> {
    let exe = bin.join("llama-bench");
    let run = |extra: &[&str]| -> anyhow::Result<Option<f64>> {
        let out = Command::new(&exe)
            .args(["-m".as_ref(), model.as_os_str()])
            .args([
                "-p",
                &args.tokens.to_string(),
                "-n",
                "0",
                "-t",
                &args.threads.to_string(),
            ])
            .args(["-r", &args.reps.max(1).to_string(), "-o", "json"])
            .args(extra)
            .output()
            .with_context(|| format!("running {}", exe.display()))?;
        if !out.status.success() {
            return Ok(None);
        }
        let rows: serde_json::Value =
            serde_json::from_slice(&out.stdout).context("llama-bench JSON")?;
        let ts = rows
            .as_array()
            .and_then(|r| {
                r.iter()
                    .find(|r| r["n_prompt"].as_u64() == Some(args.tokens as u64))
            })
            .and_then(|r| r["avg_ts"].as_f64());
        Ok(ts)
    };
    if let Some(ts) = run(&[])? {
        return Ok((ts, ""));
    }
    match run(&["--repack", "0"])? {
        Some(ts) => Ok((
            ts,
            " llama-bench ran with --repack 0 (it crashed with repacking)",
        )),
        None => bail!("{} failed on {}", exe.display(), model.display()),
    }
}
