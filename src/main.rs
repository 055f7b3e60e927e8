use clap::Parser;

fn main() -> std::process::ExitCode {
    // Output piped into `head` should end quietly, as other command-line tools do.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    keep_freed_memory();
    let cli = deltalogic::cli::Cli::parse();
    match deltalogic::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // A benchmark's own build options are parsed late: print clap's help or usage error
            // as clap would.
            if let Some(clap) = e.downcast_ref::<clap::Error>() {
                clap.exit();
            }
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(deltalogic::cli::exit_status(&e))
        }
    }
}

/// glibc hands a freed block above its mmap threshold straight back to the kernel, and trims the
/// top of a heap once 128 KiB are free there. The model's per-call buffers (matmul outputs,
/// dequantised tiles, attention scratch) are that size, so every call took freshly zeroed pages
/// again: the main job made 19.8 million minor page faults and spent 75 of its 494 CPU seconds in
/// the kernel. An mmap threshold of 32 MiB (glibc's largest) keeps such blocks for reuse: 1.1
/// million faults, 29 s in the kernel, for a peak RSS of 239 MB instead of 203.
///
/// The trim threshold is set higher, because one layer of a larger model frees more than 32 MiB
/// at once (Qwen2.5-1.5B's gate and up outputs alone are 18 MB over 256 rows), and each trim gave
/// those pages back only to fault them in again in the next layer. `bench --only int8 --tokens
/// 256 --decode 1 --reps 3` (load and four prefills), trim threshold 32 → 64 MiB: Qwen2.5-1.5B
/// Q4_K_M 814 k → 129 k minor faults and 226 → 320 tok/s, the Qwen3-4B shape 1.21 M → 314 k and
/// 95 → 113 tok/s, their peak RSS the same (Qwen2.5-0.5B's rose 463 → 526 MB, 1.07 times its
/// file and cache). 128 MiB saved more faults on 1024-token prompts of the 4B shapes but kept
/// 28–120 MB more resident on the smaller models, SmolLM2's ratio to its file and cache going
/// from 1.26 to 1.48 (`bench`'s memory target is 1.3).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const MMAP: libc::c_int = 32 << 20;
        const TRIM: libc::c_int = 64 << 20;
        // SAFETY: mallopt only sets allocator parameters; called before any thread starts.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM);
        }
    }
}
