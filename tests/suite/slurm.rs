//! Sharded scoring on a real Slurm: a single-node cluster from Debian's packages
//! (scripts/slurm/local-cluster.sh), the array job and the merge job of scripts/slurm/submit.sh
//! on a small set with the real SmolLM2, and the merged result and report compared with a single
//! run's. `.ci/run` installs slurm-wlm and munge; when it cannot, it sets DELTALOGIC_NO_SLURM to
//! the reason and build.rs marks the test ignored. Anywhere else without Slurm or the model the
//! test is ignored (build.rs); under CI a missing Slurm without that reason is a failure.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ok(what: &str, out: Output) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn dl(store: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_deltalogic"))
        .arg("--store")
        .arg(store)
        .args(args)
        .output()
        .unwrap();
    ok(&format!("{args:?}"), out)
}

/// The state of a job (`scontrol` keeps finished jobs for MinJobAge, 300 s by default).
fn job_state(conf: &str, job: &str) -> String {
    let out = Command::new("scontrol")
        .env("SLURM_CONF", conf)
        .args(["show", "job", "--oneliner", job])
        .output()
        .unwrap();
    let text = ok("scontrol", out);
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("JobState="))
        .unwrap_or("?")
        .to_string()
}

#[test]
#[cfg_attr(
    slurm_missing,
    ignore = "needs Slurm (apt-get install slurm-wlm munge; .ci/run does, or says why not in DELTALOGIC_NO_SLURM)"
)]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn array_and_merge_jobs_on_a_local_slurm_equal_a_single_run() {
    let model = crate::common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let started = ok(
        "local-cluster.sh",
        Command::new("bash")
            .arg(root().join("scripts/slurm/local-cluster.sh"))
            .output()
            .unwrap(),
    );
    let conf = started
        .lines()
        .find_map(|l| l.strip_prefix("SLURM_CONF="))
        .expect("local-cluster.sh prints SLURM_CONF")
        .to_string();

    let base = dir.path().join("base.redb");
    dl(
        &base,
        &["model", "add", model.to_str().unwrap(), "--name", "smol"],
    );
    dl(
        &base,
        &[
            "build",
            "deltalogic",
            "--from",
            "generated",
            "--seed",
            "2",
            "--per-type",
            "1",
            "--name",
            "small",
        ],
    );
    let single = dir.path().join("single.redb");
    std::fs::copy(&base, &single).unwrap();
    let one: serde_json::Value = serde_json::from_str(&dl(
        &single,
        &["--json", "score", "--model", "smol", "--set", "small"],
    ))
    .unwrap();

    let work = dir.path().join("work");
    let submitted = ok(
        "submit.sh",
        Command::new("bash")
            .arg(root().join("scripts/slurm/submit.sh"))
            .args([
                "--store",
                base.to_str().unwrap(),
                "--work",
                work.to_str().unwrap(),
            ])
            .args([
                "--model", "smol", "--set", "small", "--shards", "3", "--cpus", "1",
            ])
            .args(["--bin", env!("CARGO_BIN_EXE_deltalogic")])
            .env("SLURM_CONF", &conf)
            .output()
            .unwrap(),
    );
    // "array job A (3 parts), merge job M"
    let merge = submitted.split_whitespace().last().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let state = job_state(&conf, &merge);
        match state.as_str() {
            "COMPLETED" => break,
            "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" => {}
            other => panic!(
                "merge job {merge} ended {other}: {}",
                std::fs::read_to_string(work.join("merge.log")).unwrap_or_default()
            ),
        }
        assert!(
            Instant::now() < deadline,
            "merge job {merge} still {state} after 30 min"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    for i in 0..3 {
        assert!(work.join(format!("part-{i}-of-3.redb")).is_file());
    }
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("score.json")).unwrap()).unwrap();
    assert_eq!(
        merged["scores_computed"], 0,
        "the parts computed every score"
    );
    assert_eq!(merged["result"], one["result"]);
    let svg = dir.path().join("single.svg");
    let report = dl(
        &single,
        &["report", "--format", "json", "--svg", svg.to_str().unwrap()],
    );
    assert_eq!(
        std::fs::read_to_string(work.join("report.json")).unwrap(),
        report
    );
}
