use clap::Parser;

fn main() -> std::process::ExitCode {
    // Output piped into `head` should end quietly, as other command-line tools do.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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
