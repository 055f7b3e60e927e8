//! Hostile servers and keys (`fake_server`'s faults): a secret never leaves (no user info in a
//! URL, no key with control characters, no key quoted in an error or stored, no redirect
//! followed), every wait is bounded and named, and a server that is no longer the model
//! registered, or lies after the probe, is refused with nothing stored. `audit --verify` fails on
//! a difference. A merge that never follows a file is in `served`.

use crate::common::{deltalogic, dl};
use crate::fake_server::{Fake, Fault};
use crate::served::SMALL_SET;
use deltalogic::eval::ScoreRecord;
use deltalogic::store::Store;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const WEIGHTS: &str = "served-weights";
pub const KEY: &str = "sk-hostile-test-5b2e91";
pub const VAR: &str = "DELTALOGIC_TEST_KEY";
const SCORE: [&str; 5] = ["score", "--model", "byte", "--set", "small"];

/// `deltalogic ARGS` on `store` with the key in the environment.
pub fn run(store: &Path, args: &[&str]) -> Output {
    deltalogic(store).args(args).env(VAR, KEY).output().unwrap()
}

/// The same, required to succeed.
pub fn run_ok(store: &Path, args: &[&str]) -> Output {
    let out = run(store, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

pub fn add_args(url: &str) -> Vec<&str> {
    vec![
        "model",
        "add",
        "--served",
        url,
        "--model-id",
        "byte",
        "--name",
        "byte",
        "--api-key-env",
        VAR,
    ]
}

/// A store with the small set and the fake registered (its key required).
fn registered(dir: &Path, fake: &Fake) -> PathBuf {
    let store = dir.join("hostile.store");
    dl(&store, &SMALL_SET);
    run_ok(&store, &add_args(&fake.url));
    store
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Fails with a message holding every one of `says`, and never the key; exit status 1 (not a
/// panic's 101).
fn refused(out: &Output, says: &[&str]) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
    assert!(!err.contains(KEY), "the key printed: {err}");
    err
}

fn scores(store: &Path) -> usize {
    Store::open_read(store)
        .unwrap()
        .all::<ScoreRecord>()
        .unwrap()
        .len()
}

#[test]
fn a_url_with_user_info_and_a_key_with_control_characters_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let store = dir.path().join("s.store");
    let with_password = fake.url.replace("http://", "http://alice:hunter2@");
    let out = run(&store, &add_args(&with_password));
    let err = refused(&out, &["user name or password", "--api-key-env"]);
    assert!(!err.contains("hunter2") && !err.contains("alice"), "{err}");
    // A key file with Windows line ends read by $(cat f), and one with a line break inside.
    for bad in [format!("{KEY}\r"), format!("{KEY}\r\nX-Injected: 1")] {
        let out = deltalogic(&store)
            .args(add_args(&fake.url))
            .env(VAR, &bad)
            .output()
            .unwrap();
        refused(&out, &[VAR, "control character", "nothing was sent"]);
    }
    assert_eq!(fake.received(), 0, "not one request");
}

#[test]
fn server_words_that_quote_the_key_are_redacted_and_an_answer_holding_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let store = dir.path().join("s.store");
    fake.set_fault(Fault::EchoKey401);
    let out = run(&store, &add_args(&fake.url));
    refused(
        &out,
        &["HTTP 401", "Incorrect API key provided: Bearer [redacted]"],
    );
    fake.set_fault(Fault::EchoKeyPage);
    let out = run(&store, &add_args(&fake.url));
    refused(&out, &["holds the API key", &fake.url]);
}

#[test]
fn redirects_are_never_followed_not_even_to_a_file_or_another_host() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let other = Fake::start(WEIGHTS, None);
    let store = dir.path().join("s.store");
    for target in ["file:///etc/passwd", &format!("{}/models", other.url)] {
        fake.redirect_to(target);
        let out = run(&store, &add_args(&fake.url));
        refused(&out, &["redirects (HTTP 302)", target, "not followed"]);
    }
    assert_eq!(other.received(), 0, "the key went to no other host");
}

#[test]
fn a_stalled_a_dripping_or_a_huge_answer_is_given_up_on_naming_url_and_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let store = dir.path().join("s.store");
    let models = format!("{}/models", fake.url);
    let waits = ["--first-byte-timeout", "2", "--timeout", "4"];
    for (fault, says) in [
        (Fault::Stall, ["--first-byte-timeout", "within 2 s"]),
        (Fault::Drip, ["--timeout", "within 4 s"]),
    ] {
        fake.set_fault(fault);
        let t = Instant::now();
        let out = run(&store, &[&waits[..], &add_args(&fake.url)].concat());
        let took = t.elapsed();
        refused(&out, &[&models, says[0], says[1]]);
        assert!(took < Duration::from_secs(15), "{fault:?}: {took:?}");
    }
    fake.set_fault(Fault::Huge);
    let out = run(&store, &add_args(&fake.url));
    refused(&out, &[&models, "larger than 8 MiB"]);
    // Requests in flight are bounded.
    let out = run(&store, &[&SCORE[..], &["--concurrency", "65"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_server_that_now_serves_another_model_is_refused_with_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let store = registered(dir.path(), &fake);
    fake.set_fault(Fault::OtherModel);
    let out = run(&store, &SCORE);
    refused(
        &out,
        &[
            "serves no model `byte` now (it serves: other)",
            "nothing was asked",
        ],
    );
    assert_eq!(fake.requests(), 6, "only the probe at registration asked");
    fake.set_fault(Fault::AnswersOtherModel);
    let out = run(&store, &SCORE);
    refused(&out, &["the answer comes from model \"other\", not `byte`"]);
    assert_eq!(scores(&store), 0, "nothing stored");
}

#[test]
fn a_server_that_forges_scores_after_the_probe_is_caught_while_scoring() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let store = registered(dir.path(), &fake);
    fake.set_fault(Fault::ForgedAfterProbe);
    // One request in flight, then sixteen: the answers that arrive while the first one's check
    // is asked wait for it, and are dropped with it.
    for concurrency in ["1", "16"] {
        let out = run(
            &store,
            &[&SCORE[..], &["--concurrency", concurrency]].concat(),
        );
        let err = refused(&out, &["failed its cross-check", &fake.url]);
        assert!(
            err.contains("the 0 answer(s) a passed cross-check vouched for were stored"),
            "{err}"
        );
        assert_eq!(
            scores(&store),
            0,
            "{concurrency} in flight: nothing is stored before a check vouches for it"
        );
    }
}

/// The tolerance given at `model add` is the one every later check of the server uses, not only
/// the probe's at registration: echoes 5e-4 off pass the default's checks before a run and fail
/// a registered 1e-4's.
#[test]
fn the_registered_tolerance_is_the_one_every_check_uses() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let strict = dir.path().join("strict.store");
    dl(&strict, &SMALL_SET);
    run_ok(
        &strict,
        &[&add_args(&fake.url)[..], &["--tolerance", "1e-4"]].concat(),
    );
    let default = registered(dir.path(), &fake);
    fake.set_fault(Fault::DriftAll);
    let err = refused(&run(&strict, &SCORE), &["1e-4", "nothing was asked"]);
    assert_eq!(scores(&strict), 0, "{err}");
    run_ok(&default, &SCORE);
    assert!(scores(&default) > 0);
}

#[test]
fn audit_verify_exits_non_zero_when_a_check_differs_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(WEIGHTS, Some(KEY));
    let store = registered(dir.path(), &fake);
    let out = run_ok(&store, &[&["--json"], &SCORE[..]].concat());
    let scored: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &scored["result"].as_str().unwrap()[..12];
    let audit = |tolerance: &str| {
        run(
            &store,
            &[
                "--json",
                "audit",
                result,
                "--verify",
                "4",
                "--tolerance",
                tolerance,
            ],
        )
    };
    assert!(audit("1e-3").status.success());
    // Answers 5e-4 lower: within 1e-3 (the cross-check passes), beyond 1e-4.
    fake.set_fault(Fault::Drift);
    assert!(audit("1e-3").status.success());
    let out = audit("1e-4");
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("4 of 4 checked records differ"),
        "{}",
        stderr(&out)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let differing = doc["verify"]["differing"].as_array().unwrap();
    assert_eq!(differing.len(), 4, "{doc}");
}
