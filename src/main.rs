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
/// the kernel. Fixed thresholds of 32 MiB (glibc's largest mmap threshold) keep such blocks for
/// reuse: 1.1 million faults, 29 s in the kernel. The price is memory kept for reuse: the main
/// job's peak RSS rose from 203 to 239 MB, while `bench`'s stayed where it was.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const KEEP: libc::c_int = 32 << 20;
        // SAFETY: mallopt only sets allocator parameters; called before any thread starts.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, KEEP);
            libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP);
        }
    }
}
