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

/// glibc hands a freed block above its mmap threshold straight back to the kernel and trims the
/// heap's top once 128 KiB are free there; the model's per-call buffers are that size, so every
/// call would take freshly zeroed pages again. A 32 MiB mmap threshold keeps such blocks for reuse,
/// and a 64 MiB trim threshold keeps a larger model's layer from giving back pages the next layer
/// faults in again. What each setting saved, and what it costs in RSS: docs/models.md,
/// *Allocator settings*.
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
