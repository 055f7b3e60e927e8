//! Greedy generation as a second kind of request: cached like scores, computed through the
//! prefix tree, cut exactly at stop strings, carried and checked by audits and merges, and a
//! judge model answering the requests a benchmark addresses to it. A small benchmark of this
//! file's own asks each item to generate, then has the judge score the generation.

use crate::common;

use anyhow::Result;
use common::{model_id, ByteModel, NoChat};
use deltalogic::benchmarks::prompts::TemplateRecord;
use deltalogic::benchmarks::{
    Answer, Answered, Benchmark, Built, Decoding, Evaluation, Models, Prepared, Request, Role,
};
use deltalogic::datasets::BaseItem;
use deltalogic::eval::cache::{self, Computed, MergeOptions, Recomputed};
use deltalogic::eval::{self, audit, GenerationRecord, Participants, PromptRecord, Quiet};
use deltalogic::eval::{ScoreRecord, StopReason, TurnAnswer};
use deltalogic::logic::Label;
use deltalogic::store::{Id, Kind, Record, Store, StoredSet, StoredSpec};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// Items that generate a continuation of a shared prefix, then ask the judge about it.
struct GenerateThenJudge {
    decoding: Decoding,
}

const PREFIX: &str = "Premises: the lamp is on. The switch is up. Continue the story of item ";

struct Prepared2 {
    ids: Vec<Id>,
    decoding: Decoding,
    judge: Id,
}

impl Prepared for Prepared2 {
    fn template(&self) -> TemplateRecord {
        TemplateRecord {
            name: "generate-then-judge".into(),
            definition: format!("{{\"judge\":\"{}\"}}", self.judge.hex()),
        }
    }
    fn items(&self) -> &[Id] {
        &self.ids
    }
    fn turns(&self) -> usize {
        2
    }
    fn request(&self, item: usize, turn: usize, earlier: &[Answer]) -> Result<Request> {
        let prompt = format!("{PREFIX}{item}:");
        Ok(match (turn, earlier) {
            (0, []) => Request::Generate {
                by: Role::Subject,
                prompt,
                decoding: self.decoding.clone(),
            },
            (1, [text]) => Request::Score {
                by: Role::Judge,
                prompt: format!("{prompt}{}\nIs this a good continuation?", text.text()?),
                labels: vec![(" yes".into(), Label::True), (" no".into(), Label::False)],
            },
            _ => anyhow::bail!("two turns"),
        })
    }
    fn content_free(
        &self,
        _: usize,
        turn: usize,
        _: &[Answer],
        filler: &str,
    ) -> Result<Option<Request>> {
        Ok((turn == 1).then(|| Request::Score {
            by: Role::Judge,
            prompt: format!("{filler}\nIs this a good continuation?"),
            labels: vec![(" yes".into(), Label::True), (" no".into(), Label::False)],
        }))
    }
    fn target(&self, _: usize, _: usize) -> Option<Label> {
        None
    }
}

impl Benchmark for GenerateThenJudge {
    fn name(&self) -> &'static str {
        "generate-then-judge"
    }
    fn title(&self) -> &'static str {
        "Generate then judge"
    }
    fn options(&self) -> clap::Command {
        clap::Command::new("generate-then-judge")
    }
    fn build_parsed(&self, _: &Store, _: &clap::ArgMatches) -> Result<Built> {
        unreachable!("the test makes its set by hand")
    }
    fn prepare(
        &self,
        _: &Store,
        set: &StoredSet,
        _: &str,
        models: &Models,
    ) -> Result<Box<dyn Prepared>> {
        Ok(Box::new(Prepared2 {
            ids: set.member_ids().collect(),
            decoding: self.decoding.clone(),
            judge: models.judge,
        }))
    }
    fn judged(&self) -> bool {
        true
    }
    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, _: &Store, _: &[Answered], _: u64) -> Result<Evaluation> {
        unreachable!("not reported")
    }
}

fn test_set(n: u8) -> (Id, StoredSet) {
    let members = (0..n).map(|i| Id::derive(BaseItem::KIND, &[i])).collect();
    let set = StoredSet::new(
        "generate-then-judge",
        Id::derive(StoredSpec::KIND, b"t"),
        members,
    );
    (set.id(), set)
}

fn decoding(max_tokens: u32, stop: &[&str]) -> Decoding {
    Decoding {
        max_tokens,
        stop: stop.iter().map(|s| s.to_string()).collect(),
    }
}

/// Runs the benchmark with subject `m1` and the given judge; returns the outcome and the models
/// loaded.
fn run(reg: &Store, set: &(Id, StoredSet), judge: Option<&str>) -> (eval::Outcome, Vec<Id>) {
    let loaded = RefCell::new(Vec::new());
    let names = ["m1", "judge"];
    let out = eval::run(
        reg,
        &eval::Run {
            benchmark: &GenerateThenJudge {
                decoding: decoding(24, &["."]),
            },
            set_id: set.0,
            set: &set.1,
            models: Participants {
                subject: model_id("m1"),
                info: &NoChat,
                judge: judge.map(model_id),
            },
            template: "generate-then-judge",
            norms: vec![eval::Normalisation::Sum],
            shard: None,
            execution: Default::default(),
        },
        |id| {
            loaded.borrow_mut().push(id);
            let name = names.into_iter().find(|n| model_id(n) == id).unwrap();
            Ok(eval::Engine::Local(ByteModel::new(name)))
        },
        &mut Quiet,
    )
    .unwrap();
    (out, loaded.into_inner())
}

#[test]
fn a_second_run_generates_nothing_and_gives_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let set = test_set(6);
    let (first, loaded) = run(&reg, &set, None);
    assert_eq!(loaded, vec![model_id("m1")], "the model judges itself");
    let r = &first.report;
    assert_eq!((r.generations_needed, r.generations_computed), (6, 6));
    assert_eq!((r.scores_needed, r.scores_computed), (12, 12));
    assert!(r.generated_tokens > 0);
    assert_eq!(
        r.forward_tokens, r.tree_tokens,
        "the shared prefix is run once"
    );

    let (second, loaded) = run(&reg, &set, None);
    assert!(loaded.is_empty(), "nothing to compute: no model loaded");
    let r = &second.report;
    assert_eq!((r.generations_computed, r.scores_computed), (0, 0));
    assert_eq!(r.generations_found_in_cache, 6);
    assert_eq!(second.result, first.result);

    // Each item's first turn is its generation, read back as text.
    let result = reg
        .get::<eval::ResultRecord>(&first.result)
        .unwrap()
        .unwrap();
    for row in &result.rows {
        assert_eq!(row.turns[0].answer, TurnAnswer::Generated);
        let g = reg
            .get::<GenerationRecord>(&Id(row.turns[0].keys[0]))
            .unwrap()
            .unwrap();
        let answered = eval::answered(&reg, row).unwrap();
        assert_eq!(answered.answers[0], Answer::Text(g.text.clone()));
        assert!(answered.answers[1].label().is_ok());
        // Generated from the prefix tree's state, equal to a generation from the empty state.
        let prompt = reg.get::<PromptRecord>(&Id(g.prompt)).unwrap().unwrap();
        let again =
            eval::regenerate(&ByteModel::new("m1"), &prompt.text, &g.decoding, true).unwrap();
        assert_eq!(
            (again.tokens, again.text),
            (g.tokens.clone(), g.text.clone())
        );
        assert!(!g.text.contains('.'), "cut before the stop string");
    }
}

#[test]
fn judge_requests_go_to_the_judge_and_name_it_in_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let set = test_set(4);
    let (own, _) = run(&reg, &set, None);
    let (judged, loaded) = run(&reg, &set, Some("judge"));
    assert_eq!(
        loaded,
        vec![model_id("judge")],
        "the subject's generations are cached; only the judge runs"
    );
    assert_eq!(judged.report.generations_computed, 0);
    assert_eq!(judged.report.scores_computed, 8);
    assert_ne!(own.result, judged.result);
    let result = reg
        .get::<eval::ResultRecord>(&judged.result)
        .unwrap()
        .unwrap();
    for row in &result.rows {
        for k in &row.turns[1].keys {
            let s = reg.get::<ScoreRecord>(&Id(*k)).unwrap().unwrap();
            assert_eq!(Id(s.model), model_id("judge"));
        }
    }
    // A benchmark without judged turns refuses a judge.
    let deltalogic = deltalogic::benchmarks::ALL.named("deltalogic").unwrap();
    let err = eval::run(
        &reg,
        &eval::Run {
            benchmark: deltalogic,
            set_id: set.0,
            set: &set.1,
            models: Participants {
                subject: model_id("m1"),
                info: &NoChat,
                judge: Some(model_id("judge")),
            },
            template: "plain",
            norms: vec![eval::Normalisation::Sum],
            shard: None,
            execution: Default::default(),
        },
        |_| Ok(eval::Engine::Local(ByteModel::new("m1"))),
        &mut Quiet,
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("without --judge"), "{err:#}");
}

#[test]
fn stop_strings_cut_exactly_and_max_tokens_bounds() {
    let m = ByteModel::new("m1");
    let prompt = "Once upon a time";
    let free = eval::regenerate(&m, prompt, &decoding(60, &[]), true).unwrap();
    assert!(free.text.len() >= 12, "a long enough text to cut: {free:?}");
    // A stop string taken from the middle of the free text: the text ends just before its first
    // occurrence, whatever token it was completed in.
    let stop = &free.text[6..9];
    let cut = free.text.find(stop).unwrap();
    let stopped =
        eval::regenerate(&m, prompt, &decoding(60, &[stop, "never-there"]), true).unwrap();
    assert_eq!(stopped.stop, StopReason::StopString);
    assert_eq!(stopped.text, free.text[..cut]);
    assert!(free.tokens.starts_with(&stopped.tokens));
    // The bound: exactly max_tokens tokens unless an end token came first.
    let short = eval::regenerate(&m, prompt, &decoding(5, &[]), true).unwrap();
    assert_eq!(short.tokens, free.tokens[..5]);
    assert_eq!(short.stop, StopReason::MaxTokens);
    assert_eq!(
        short.forward_tokens, 4,
        "the last token chosen is never run"
    );
    // Decodings that cannot work are refused.
    assert!(eval::regenerate(&m, prompt, &decoding(0, &[]), true).is_err());
    assert!(eval::regenerate(&m, prompt, &decoding(5, &[""]), true).is_err());
    assert!(eval::regenerate(&m, "", &decoding(5, &[]), true).is_err());
}

#[test]
fn an_end_token_ends_the_generation_outside_its_text() {
    // Search prompts for one whose greedy continuation reaches the stand-in's end token (0).
    let m = ByteModel::new("m1");
    let ended = (0..400)
        .map(|i| eval::regenerate(&m, &format!("prompt {i}"), &decoding(40, &[]), true).unwrap())
        .find(|g| g.stop == StopReason::EndToken)
        .expect("some prompt reaches the end token");
    assert_eq!(ended.tokens.last(), Some(&0));
    assert!(!ended.text.contains('\0'));
    assert_eq!(ended.text.len(), ended.tokens.len() - 1);
}

#[test]
fn audits_and_merges_carry_and_check_generations() {
    let dir = tempfile::tempdir().unwrap();
    let source = Store::open_write(&dir.path().join("source.redb")).unwrap();
    let set = test_set(5);
    let (out, _) = run(&source, &set, None);

    let a = audit::audit(&source, &out.result.hex()).unwrap();
    assert_eq!((a.generations.len(), a.scores.len()), (5, 10));
    let v = audit::verify(
        &source,
        &a,
        |_| Ok(eval::Engine::Local(ByteModel::new("m1"))),
        3,
        eval::served::TOLERANCE,
    )
    .unwrap();
    assert_eq!((v.checked, v.identical), (6, 6));

    // Export every computed record with its prompts; merge it elsewhere, recomputing a sample.
    let records: BTreeSet<(Kind, Id)> = source
        .all::<GenerationRecord>()
        .unwrap()
        .into_iter()
        .map(|(k, g)| {
            [
                (GenerationRecord::KIND, k),
                (PromptRecord::KIND, Id(g.prompt)),
            ]
        })
        .chain(
            source
                .all::<ScoreRecord>()
                .unwrap()
                .into_iter()
                .map(|(k, s)| [(ScoreRecord::KIND, k), (PromptRecord::KIND, Id(s.prompt))]),
        )
        .flatten()
        .collect();
    let file = dir.path().join("cache.redb");
    cache::export(&source, &records, &[], &file).unwrap();
    let regenerate = |c: &Computed| -> Result<Option<Recomputed>> {
        let m = ByteModel::new("m1");
        let cache = Store::open_read(&file)?;
        Ok(Some(match c {
            Computed::Score(s) => {
                let p = cache.get::<PromptRecord>(&Id(s.prompt))?.unwrap();
                Recomputed::Logprobs(eval::rescore(&m, &p.text, &s.label)?)
            }
            Computed::Generation(g) => {
                let p = cache.get::<PromptRecord>(&Id(g.prompt))?.unwrap();
                Recomputed::Generation(eval::regenerate(&m, &p.text, &g.decoding, true)?)
            }
        }))
    };
    let target = Store::open_write(&dir.path().join("target.redb")).unwrap();
    let mut check = regenerate;
    let mut opts = MergeOptions::new(&mut check);
    opts.sample_per_model = 100;
    let r = cache::merge(&target, &Store::open_read(&file).unwrap(), opts).unwrap();
    assert_eq!(r.added.get("generation"), Some(&5));
    assert_eq!(r.recomputed.get(&model_id("m1").short()), Some(&15));

    // A forged generation text (checksum and key intact) is caught by the recomputation and
    // nothing is merged.
    let forged_file = dir.path().join("forged.redb");
    {
        let forged = Store::open_write(&dir.path().join("forged-src.redb")).unwrap();
        let (_, mut g) = source.all::<GenerationRecord>().unwrap().remove(0);
        g.text.push_str(" and then the lamp went out");
        forged.write(|w| w.put(&g).map(drop)).unwrap();
        forged
            .write(|w| {
                w.put(&source.get::<PromptRecord>(&Id(g.prompt)).unwrap().unwrap())
                    .map(drop)
            })
            .unwrap();
        let keys: BTreeSet<(Kind, Id)> = [
            (GenerationRecord::KIND, g.id()),
            (PromptRecord::KIND, Id(g.prompt)),
        ]
        .into_iter()
        .collect();
        cache::export(&forged, &keys, &[], &forged_file).unwrap();
    }
    let fresh = Store::open_write(&dir.path().join("fresh.redb")).unwrap();
    let mut check = |c: &Computed| -> Result<Option<Recomputed>> {
        let Computed::Generation(g) = c else {
            unreachable!()
        };
        let p = Store::open_read(&forged_file)?
            .get::<PromptRecord>(&Id(g.prompt))?
            .unwrap();
        Ok(Some(Recomputed::Generation(eval::regenerate(
            &ByteModel::new("m1"),
            &p.text,
            &g.decoding,
            true,
        )?)))
    };
    let err = cache::merge(
        &fresh,
        &Store::open_read(&forged_file).unwrap(),
        MergeOptions::new(&mut check),
    )
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("differs from its recomputation"),
        "{err:#}"
    );
    assert_eq!(fresh.count(GenerationRecord::KIND).unwrap(), 0);
    // Merged into a store holding the honest generation, the forged one is a conflict.
    let mut unavailable = |_: &Computed| Ok(None);
    let r = cache::merge(
        &target,
        &Store::open_read(&forged_file).unwrap(),
        MergeOptions::new(&mut unavailable),
    )
    .unwrap();
    assert_eq!(r.conflicts.len(), 1);
    assert_eq!(r.conflicts[0].kind, "generation");
}

#[test]
fn the_dialogue_template_explains_between_the_two_answers() {
    use deltalogic::benchmarks::deltalogic::{self as dl};
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    common::generated_set(&reg, "set", 3, 2);
    let plain = common::score_with(&reg, "m1", "set", Some("plain"), eval::Normalisation::Sum);
    let dialogue = common::score_with(
        &reg,
        "m1",
        "set",
        Some("dialogue"),
        eval::Normalisation::Sum,
    );
    let n = plain.report.items;
    // Step 1 is the plain prompt: its scores are shared; the explanation and the revision are new.
    assert_eq!(dialogue.report.scores_found_in_cache, 3 * n);
    assert_eq!(dialogue.report.generations_computed, n);
    let again = common::score_with(
        &reg,
        "m1",
        "set",
        Some("dialogue"),
        eval::Normalisation::Sum,
    );
    assert_eq!(again.result, dialogue.result);
    assert_eq!(
        (
            again.report.generations_computed,
            again.report.scores_computed
        ),
        (0, 0)
    );

    let result = reg
        .get::<eval::ResultRecord>(&dialogue.result)
        .unwrap()
        .unwrap();
    let rows: Vec<Answered> = result
        .rows
        .iter()
        .map(|r| eval::answered(&reg, r).unwrap())
        .collect();
    for (row, a) in result.rows.iter().zip(&rows) {
        assert_eq!(row.turns.len(), 3);
        assert_eq!(row.turns[1].answer, TurnAnswer::Generated);
        let why = a.answers[1].text().unwrap();
        assert!(
            !why.contains('.') && !why.contains('\n'),
            "one sentence: {why:?}"
        );
        // The revision prompt carries the model's own explanation.
        let s = reg
            .get::<ScoreRecord>(&Id(row.turns[2].keys[0]))
            .unwrap()
            .unwrap();
        let prompt = reg.get::<PromptRecord>(&Id(s.prompt)).unwrap().unwrap();
        assert!(prompt.text.contains(&format!(" {}.\n\n", why.trim())));
    }
    // The benchmark reads the two scored answers and skips the explanation.
    let e = dl::DeltaLogic.evaluate(&reg, &rows, 0).unwrap();
    assert_eq!(e.n, n);
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn a_real_generation_has_the_same_bits_on_every_thread_count_and_vector_path() {
    let model = common::smollm2();
    let generate = |threads: &str, env: &[(&str, &str)]| -> serde_json::Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_deltalogic"))
            .args(["--json", "generate-text", "--model"])
            .arg(&model)
            .args([
                "--prompt",
                "<|im_start|>user\nThe lamp is on. Is the lamp on? Explain.<|im_end|>\n<|im_start|>assistant\n",
                "--max-tokens",
                "24",
                "--threads",
                threads,
            ])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_object_mut().unwrap().remove("seconds");
        // Compare log-probs by their bits, not through a decimal rendering.
        let bits: Vec<u32> = v["logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x.as_f64().unwrap() as f32).to_bits())
            .collect();
        v["logprobs"] = serde_json::json!(bits);
        v
    };
    let reference = generate("2", &[]);
    assert!(reference["tokens"].as_array().unwrap().len() > 4);
    assert_eq!(generate("1", &[]), reference);
    assert_eq!(generate("3", &[("DELTALOGIC_NO_AVX512", "1")]), reference);
    assert_eq!(generate("2", &[("DELTALOGIC_PORTABLE", "1")]), reference);
}
