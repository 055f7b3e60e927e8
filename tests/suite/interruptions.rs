//! Every command works after any interruption, and errors name their real cause (issue 25,
//! cases 4 and 5). Writing commands are interrupted by SIGINT, by kill -9 and by a full disk
//! (`ulimit -f`, SIGXFSZ ignored, so a write fails with "File too large"); then every read
//! command runs on the store left behind, and so do the commands that write a little (report,
//! exports) and a rerun of the interrupted one.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_deltalogic")
}

fn command(store: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.arg("--store").arg(store).args(args);
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(store: &Path, args: &[&str]) -> Output {
    command(store, args).output().unwrap()
}

fn ok(store: &Path, args: &[&str]) -> Output {
    let out = run(store, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The same command under a file size limit of `kib` KiB, SIGXFSZ ignored: a write past the
/// limit fails with EFBIG, as on a full disk.
fn limited(store: &Path, kib: u64, args: &[&str]) -> Output {
    let script = format!("ulimit -f {kib}; trap '' XFSZ; exec \"$@\"");
    Command::new("bash")
        .args(["-c", &script, "limited", bin(), "--store"])
        .arg(store)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// Starts `args` and sends `signal` once the store exists and `delay` has passed.
fn interrupt(store: &Path, args: &[&str], signal: i32, delay: Duration) {
    let mut command = command(store, args);
    // A shell starts background jobs with SIGINT ignored, and the child would inherit that: the
    // command gets SIGINT's default action, as at a terminal.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    child.wait().unwrap();
}

/// A store opened for writing by a killed process is left unclean: redb's recovery flag is set.
fn left_unclean(store: &Path) -> bool {
    matches!(
        redb::ReadOnlyDatabase::open(store),
        Err(redb::DatabaseError::RepairAborted)
    )
}

/// Every command that reads, then those that write a little, on a store left by an interrupted
/// command: each works.
fn every_read_command_works(dir: &Path, store: &Path) {
    let unclean = left_unclean(store);
    let export = dir.join("items.jsonl");
    let _ = std::fs::remove_file(&export);
    for args in [
        &["stats"][..],
        &["cache", "stats"],
        &["cache", "verify"],
        &["episodes", "list", "--set", "dl"],
        &["export", "items", "--set", "dl"],
    ] {
        ok(store, args);
    }
    assert_eq!(
        left_unclean(store),
        unclean,
        "the read commands left the store as it was"
    );
    ok(store, &["report", "--format", "json"]);
    ok(store, &["model", "list"]);
    ok(
        store,
        &[
            "episodes",
            "export",
            "--set",
            "dl",
            "-o",
            export.to_str().unwrap(),
        ],
    );
    assert!(!left_unclean(store), "a writing command leaves it clean");
}

/// A store with ingested ProofWriter items and a built set `dl`, scored by the tiny model.
fn prepared(dir: &Path) -> PathBuf {
    let store = dir.join("prepared.redb");
    ok(&store, &["ingest", "proofwriter"]);
    let model = common::tiny_llama(&dir.join("tiny"));
    ok(
        &store,
        &["model", "add", model.to_str().unwrap(), "--name", "tiny"],
    );
    ok(
        &store,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--per-type",
            "2",
            "--name",
            "dl",
        ],
    );
    ok(&store, &["score", "--model", "tiny", "--set", "dl"]);
    store
}

const BIG_BUILD: [&str; 8] = [
    "build",
    "deltalogic",
    "--from",
    "generated",
    "--per-type",
    "400",
    "--name",
    "big",
];

#[test]
#[cfg_attr(
    dataset_missing = "proofwriter/logic-lm",
    ignore = "needs the dataset proofwriter/logic-lm (deltalogic datasets where)"
)]
fn every_command_works_after_sigint_kill_9_or_a_full_disk() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = prepared(dir.path());
    // Each store in its own folder: a report writes its figure beside the store.
    let copy = |name: &str| {
        let folder = dir.path().join(name);
        std::fs::create_dir(&folder).unwrap();
        let p = folder.join("registry.redb");
        std::fs::copy(&prepared, &p).unwrap();
        p
    };
    // SIGINT (Ctrl-C) and kill -9 during a long build: the store is left unclean.
    for (name, signal) in [("sigint", libc::SIGINT), ("kill", libc::SIGKILL)] {
        let store = copy(name);
        // It may finish before the signal, or (on a loaded machine) not have opened the store
        // yet: delays around the first, sooner and later in turn, each on a fresh copy.
        let hit = [400, 200, 800, 100, 1600, 50, 3200, 25]
            .into_iter()
            .any(|ms| {
                interrupt(&store, &BIG_BUILD, signal, Duration::from_millis(ms));
                let hit = left_unclean(&store);
                if !hit {
                    std::fs::copy(&prepared, &store).unwrap();
                }
                hit
            });
        assert!(hit, "{name}: no interruption hit");
        every_read_command_works(store.parent().unwrap(), &store);
        ok(&store, &BIG_BUILD);
    }
    // A full disk during an ingest: the command says so, and the store reads as of its last
    // commit.
    // (A small store, which the ingest must grow: redb writes inside its file's free pages, and
    // the size limit stops only growth.)
    let folder = dir.path().join("full");
    std::fs::create_dir(&folder).unwrap();
    let store = folder.join("registry.redb");
    let model = common::tiny_llama(&folder.join("tiny"));
    ok(
        &store,
        &["model", "add", model.to_str().unwrap(), "--name", "tiny"],
    );
    ok(
        &store,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--per-type",
            "1",
            "--name",
            "dl",
        ],
    );
    ok(&store, &["score", "--model", "tiny", "--set", "dl"]);
    let kib = std::fs::metadata(&store).unwrap().len() / 1024;
    let ingest = ["ingest", "proofwriter"];
    let out = limited(&store, kib, &ingest);
    let err = stderr(&out);
    assert!(!out.status.success(), "the ingest fit in {kib} KiB");
    assert!(
        err.contains("file size limit") && !err.contains("damaged"),
        "{err}"
    );
    every_read_command_works(&folder, &store);
    ok(&store, &ingest);
}

/// A command run as an unprivileged user (when the tests run as root, whom permissions do not
/// stop).
fn unprivileged(store: &Path, args: &[&str]) -> Output {
    let mut c = command(store, args);
    if unsafe { libc::geteuid() } == 0 {
        c.uid(65534).gid(65534);
    }
    c.output().unwrap()
}

#[test]
fn errors_name_their_real_cause() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = dir.path().join("s.redb");
    ok(
        &store,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--per-type",
            "1",
            "--name",
            "dl",
        ],
    );
    let cause = |out: &Output, want: &str| {
        let err = stderr(out);
        assert!(!out.status.success(), "{want}: succeeded");
        assert!(err.contains(want), "{want}: {err}");
        for other in ["damaged", "not a deltalogic store"] {
            assert!(want == other || !err.contains(other), "{want}: {err}");
        }
    };
    // Not found.
    cause(
        &run(&dir.path().join("typo.redb"), &["stats"]),
        "does not exist",
    );
    // In use.
    {
        let _held = deltalogic::store::Store::open_write(&store).unwrap();
        cause(
            &run(&store, &["model", "list"]),
            "in use by another process",
        );
    }
    // Permission denied, on the store and on a new store in a read-only folder.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o000)).unwrap();
    cause(&unprivileged(&store, &["stats"]), "permission denied");
    cause(
        &unprivileged(&store, &["model", "list"]),
        "permission denied",
    );
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    cause(
        &unprivileged(&locked.join("new.redb"), &["model", "list"]),
        "permission denied",
    );
    assert_eq!(std::fs::read_dir(&locked).unwrap().count(), 0);
    // No space: a cache export past the size limit says so and leaves no file behind.
    let model_dir = common::tiny_llama(&dir.path().join("tiny"));
    ok(
        &store,
        &[
            "model",
            "add",
            model_dir.to_str().unwrap(),
            "--name",
            "tiny",
        ],
    );
    ok(&store, &["score", "--model", "tiny", "--set", "dl"]);
    let before: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let out_file = dir.path().join("cache.redb");
    let out = limited(
        &store,
        40,
        &[
            "cache",
            "export",
            "--model",
            "tiny",
            "--set",
            "dl",
            "-o",
            out_file.to_str().unwrap(),
        ],
    );
    cause(&out, "file size limit");
    let after: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(after, before, "no file left behind");
    // Damaged.
    let damaged = dir.path().join("damaged.redb");
    let mut bytes = std::fs::read(&store).unwrap();
    for b in bytes.iter_mut().skip(9).take(4096) {
        *b = 0xa5;
    }
    std::fs::write(&damaged, bytes).unwrap();
    cause(&run(&damaged, &["stats"]), "damaged");
}
