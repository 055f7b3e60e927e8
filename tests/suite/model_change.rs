//! A model file that changes while `score` runs can never put its scores under the old
//! fingerprint (issue 25, case 3): the files' identity is checked before every commit of scores
//! (and their bytes re-hashed before the last), and on a change the uncommitted batch is dropped
//! and scoring stops with an error naming the file. The file is rewritten in place, same size,
//! after a number of scores, from the run's progress callback: deterministic, without timing.

use crate::common;

use deltalogic::benchmarks::{self, ModelInfo};
use deltalogic::eval::{self, models, Normalisation, ScoreRecord};
use deltalogic::store::{Record, ResultRecord, Store};
use std::path::{Path, PathBuf};

/// Rewrites `file` in place after `after` computed scores: the same size, other bytes near its
/// end (weights, in both formats).
struct RewriteAfter {
    file: PathBuf,
    after: u64,
    done: u64,
}

impl eval::Progress for RewriteAfter {
    fn start(&mut self, _: u64, _: u64) {}
    fn advance(&mut self, done: u64, _: u64) {
        let before = self.done;
        self.done += done;
        if before < self.after && self.done >= self.after {
            use std::io::{Seek, SeekFrom, Write};
            let len = std::fs::metadata(&self.file).unwrap().len();
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&self.file)
                .unwrap();
            f.seek(SeekFrom::Start(len - 64)).unwrap();
            f.write_all(&[0x3c; 64]).unwrap();
        }
    }
    fn finish(&mut self) {}
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

/// Scores a generated set with the model at `path` (registered first), rewriting `changed`
/// after 30 scores: the run fails naming the file, and the store holds only the first batch,
/// each score equal to what the unchanged model gives.
fn a_change_mid_run_stops_scoring(path: &Path, changed: &Path, pristine: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let backend = models::backend_for(path, None).unwrap();
    let (model, _) = models::add(&reg, path, Some("m"), backend).unwrap();
    common::generated_set(&reg, "set", 3, 5);
    let (set_id, set) = reg.set_by_name("set").unwrap().unwrap();
    assert!(
        set.members.len() * 3 > 2 * eval::BATCH,
        "the run must span batches"
    );
    let benchmark = benchmarks::ALL.named(&set.benchmark).unwrap();
    let (_, record) = models::resolve(&reg, "m").unwrap();
    let mut progress = RewriteAfter {
        file: changed.to_path_buf(),
        after: 30,
        done: 0,
    };
    let err = eval::run(
        &reg,
        &eval::Run {
            benchmark,
            set_id,
            set: &set,
            models: eval::Participants {
                subject: model,
                info: &record as &dyn ModelInfo,
                judge: None,
            },
            template: benchmark.templates()[0],
            norms: vec![Normalisation::Mean],
            shard: None,
            execution: Default::default(),
        },
        |_| models::Loaded::open(&record).map(eval::Engine::Local),
        &mut progress,
    )
    .expect_err("a model file changed during the run");
    let msg = format!("{err:#}");
    assert!(
        msg.contains(&changed.display().to_string()) && msg.contains("changed"),
        "{msg}"
    );
    assert!(msg.contains("discarded"), "{msg}");
    // Only the batch committed before the change; no result.
    assert_eq!(reg.count(ScoreRecord::KIND).unwrap(), eval::BATCH as u64);
    assert_eq!(reg.count(ResultRecord::KIND).unwrap(), 0);
    // And every stored score is the unchanged model's.
    let honest = models::Loaded::file(pristine, backend).unwrap();
    for (_, s) in reg.all::<ScoreRecord>().unwrap().into_iter().take(6) {
        let prompt = reg
            .get::<eval::PromptRecord>(&deltalogic::store::Id(s.prompt))
            .unwrap()
            .unwrap();
        let want = eval::rescore(&honest, &prompt.text, &s.label).unwrap();
        assert_eq!(want, s.logprobs, "label {:?}", s.label);
    }
    // The changed files are another model: loading under the old fingerprint is refused.
    let again = models::Loaded::open(&record).err().expect("refused");
    assert!(
        format!("{again:#}").contains("not those of model"),
        "{again:#}"
    );
}

#[test]
fn a_hugging_face_directory_changed_mid_score_stores_nothing_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::tiny_llama(&tmp.path().join("llama"));
    let pristine = tmp.path().join("pristine");
    copy_dir(&dir, &pristine);
    let weights = dir.join("model.safetensors");
    a_change_mid_run_stops_scoring(&dir, &weights, &pristine);
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn a_gguf_file_changed_mid_score_stores_nothing_of_it() {
    let smol = common::smollm2();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("smol.gguf");
    std::fs::copy(&smol, &file).unwrap();
    a_change_mid_run_stops_scoring(&file, &file, &smol);
}
