//! A benchmark defined here, outside the crate — its own record kind, prompts, metrics, figure
//! panel and robustness finding — built, scored, verified, exported and reported through the
//! library as any built-in one is, with nothing in `report/`, `store/`, `eval/` or `cli/` naming
//! it: the proof that a new benchmark is one folder and one registration (here a [`Catalogue`]
//! holding it beside the built-in ones).
//!
//! Parity: "Is 6 even?", answered True or False; the gold is the number's parity.

use crate::common::{model_id, ByteModel, NoChat};
use anyhow::{bail, Result};
use deltalogic::benchmarks::prompts::TemplateRecord;
use deltalogic::benchmarks::{
    self, parse_args, Answer, Answered, Benchmark, Built, Catalogue, Column, Evaluation, Finding,
    Group, Models, Panel, Prepared, Request, Role,
};
use deltalogic::eval::{self, cache, Normalisation, Participants, Quiet};
use deltalogic::logic::Label;
use deltalogic::metrics::{estimate, Outcome};
use deltalogic::report::{self, Format};
use deltalogic::store::{
    canonical, Declared, Id, Kind, Names, Record, Store, StoredSet, StoredSpec,
};
use serde::Serialize;

const NAME: &str = "parity";

/// One number to ask about: the benchmark's own record kind.
#[derive(Clone, Debug, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct Number {
    value: u32,
}

impl Record for Number {
    const KIND: Kind = Kind {
        table: "test_parity_numbers",
        context: "deltalogic tests parity number v1",
        noun: "parity number",
    };
    fn content(&self) -> Vec<u8> {
        canonical(self)
    }
}

impl Number {
    fn gold(&self) -> Label {
        if self.value.is_multiple_of(2) {
            Label::True
        } else {
            Label::False
        }
    }
}

/// `build parity`: the numbers below `--count`.
#[derive(clap::Parser, Debug)]
struct BuildArgs {
    #[arg(long, default_value_t = 8)]
    count: u32,
    #[arg(long, default_value = NAME)]
    name: String,
}

const COLUMNS: [Column; 2] = [
    Column {
        key: "accuracy",
        title: "Accuracy",
        headline: true,
    },
    Column {
        key: "says_true",
        title: "Says True",
        headline: false,
    },
];

const FINDINGS: [Finding; 1] = [Finding {
    what: "answers parity above chance",
    reads: &["accuracy"],
    verdict: |v| {
        let verdict = if v[0] > 0.5 {
            "above chance"
        } else {
            "not above chance"
        };
        (verdict, v[0])
    },
}];

struct Parity;

impl Benchmark for Parity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn title(&self) -> &'static str {
        "Parity (test)"
    }

    fn templates(&self) -> &'static [&'static str] {
        &["is-even"]
    }

    fn options(&self) -> clap::Command {
        <BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let a: BuildArgs = parse_args(options)?;
        let set = store.write(|w| {
            let spec = w.put(&StoredSpec {
                json: format!("{{\"count\":{}}}", a.count),
            })?;
            let members = (0..a.count)
                .map(|value| Ok(w.put(&Number { value })?.0))
                .collect::<Result<Vec<Id>>>()?;
            let (set, _) = w.put(&StoredSet::new(NAME, spec.0, members))?;
            w.name(Names::Sets, &a.name, set)?;
            Ok(set)
        })?;
        Built::new(&set.hex(), format!("set `{}`: {} numbers", a.name, a.count))
    }

    fn items(&self) -> Declared {
        Declared::of::<Number>()
    }

    fn prepare(
        &self,
        store: &Store,
        set: &StoredSet,
        template: &str,
        _models: &Models,
    ) -> Result<Box<dyn Prepared>> {
        if template != "is-even" {
            bail!("unknown parity template `{template}`");
        }
        let (ids, numbers) = benchmarks::members::<Number>(store, set)?
            .into_iter()
            .unzip();
        Ok(Box::new(Asking { ids, numbers }))
    }

    fn export(&self, store: &Store, set: &StoredSet) -> Result<Vec<serde_json::Value>> {
        benchmarks::exported::<Number>(store, set)
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        let mut outcomes: Vec<Outcome<2>> = Vec::new();
        let mut even: Vec<Outcome<2>> = Vec::new();
        let mut odd: Vec<Outcome<2>> = Vec::new();
        for a in answered {
            let Some(number) = store.get::<Number>(&a.item)? else {
                bail!("a result names a missing number {}", a.item.short());
            };
            let said = a.answers[0].label()?;
            let outcome = [(true, said == number.gold()), (true, said == Label::True)];
            outcomes.push(outcome);
            match number.gold() {
                Label::True => even.push(outcome),
                _ => odd.push(outcome),
            }
        }
        let metrics = |o: &[Outcome<2>]| estimate(o, &[], seed, benchmarks::RESAMPLES);
        let overall = metrics(&outcomes);
        Ok(Evaluation {
            n: answered.len(),
            columns: &COLUMNS,
            groups: vec![
                Group::of("overall", "all", &overall),
                Group::of("parity", "even", &metrics(&even)),
                Group::of("parity", "odd", &metrics(&odd)),
            ],
            metrics: serde_json::json!({ "accuracy": overall[0].value }),
            note: "Parity is a benchmark of the test suite.",
            panel: Panel {
                title: Some("Parity by number"),
                bars: &[("accuracy", "correct"), ("says_true", "says True")],
            },
            findings: &FINDINGS,
        })
    }
}

/// A parity set's numbers, asked with `is-even`.
struct Asking {
    ids: Vec<Id>,
    numbers: Vec<Number>,
}

impl Asking {
    fn ask(about: &str) -> Request {
        Request::Score {
            by: Role::Subject,
            prompt: format!("Is {about} even? Answer:"),
            labels: vec![
                (" True".into(), Label::True),
                (" False".into(), Label::False),
            ],
        }
    }
}

impl Prepared for Asking {
    fn template(&self) -> TemplateRecord {
        TemplateRecord {
            name: "is-even".into(),
            definition: "{\"prompt\":\"Is {n} even? Answer:\"}".into(),
        }
    }
    fn items(&self) -> &[Id] {
        &self.ids
    }
    fn turns(&self) -> usize {
        1
    }
    fn request(&self, item: usize, _turn: usize, _earlier: &[Answer]) -> Result<Request> {
        Ok(Asking::ask(&self.numbers[item].value.to_string()))
    }
    fn content_free(
        &self,
        _item: usize,
        _turn: usize,
        _earlier: &[Answer],
        filler: &str,
    ) -> Result<Option<Request>> {
        Ok(Some(Asking::ask(filler)))
    }
    fn target(&self, item: usize, _turn: usize) -> Option<Label> {
        Some(self.numbers[item].gold())
    }
}

/// Scores the set with the stand-in model under `mean` and `pmi`: one result each.
fn score(reg: &Store, parity: &dyn Benchmark) -> eval::Outcomes {
    let (set_id, stored) = reg.set_by_name(NAME).unwrap().expect("the parity set");
    eval::run_each(
        reg,
        &eval::Run {
            benchmark: parity,
            set_id,
            set: &stored,
            models: Participants {
                subject: model_id("m"),
                info: &NoChat,
                judge: None,
            },
            template: "is-even",
            norms: vec![Normalisation::Mean, Normalisation::Pmi],
            shard: None,
            execution: Default::default(),
        },
        |_| Ok(eval::Engine::Local(ByteModel::new("m"))),
        &mut Quiet,
    )
    .unwrap()
}

#[test]
fn a_benchmark_defined_outside_the_crate_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let mut known: Vec<&dyn Benchmark> = benchmarks::ALL.iter().collect();
    known.push(&Parity);
    let catalogue = Catalogue::new(&known);

    catalogue
        .by_command(NAME)
        .unwrap()
        .build(&reg, &["--count".into(), "8".into()])
        .unwrap();
    let cold = score(&reg, catalogue.named(NAME).unwrap());
    assert_eq!(cold.results.len(), 2);
    // 8 numbers × 2 labels, and the 2 labels after the content-free prompts pmi compares with.
    assert!(cold.report.scores_computed >= 16, "{:?}", cold.report);
    let warm = score(&reg, &Parity);
    assert_eq!(
        warm.report.scores_computed, 0,
        "a second run computes nothing"
    );
    assert_eq!(warm.results[0].result, cold.results[0].result);

    // Its records are verified as its kind declares them, and its results re-derive.
    let verified = cache::verify(&reg, catalogue).unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
    assert_eq!(verified.kinds["parity number"].records, 8);
    assert!(cache::verify_results(&reg, catalogue).unwrap().is_empty());

    // The report renders what it declares: columns, groups, panel and finding.
    let entries = report::entries(&reg, catalogue, &[], &[]).unwrap();
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|e| e.benchmark == NAME));
    let md = report::render(&entries, Format::Md).unwrap();
    for shown in [
        "Parity (test)",
        "Says True",
        "even",
        "odd",
        "answers parity above chance",
    ] {
        assert!(md.contains(shown), "`{shown}` missing from:\n{md}");
    }
    let svg = report::svg(&entries);
    for shown in ["data-benchmark=\"parity\"", "Parity by number", "says True"] {
        assert!(svg.contains(shown), "`{shown}` missing from:\n{svg}");
    }

    // A self-contained cache file carries its numbers, found through its declared item kind.
    let (records, names) = eval::share::closure(&reg, catalogue, model_id("m"), NAME).unwrap();
    let numbers = records.iter().filter(|(k, _)| *k == Number::KIND).count();
    assert_eq!(numbers, 8);
    let file = dir.path().join("parity.cache");
    cache::export(&reg, &records, &names, &file).unwrap();
    let shared = Store::open_read(&file).unwrap();
    assert!(cache::verify(&shared, catalogue)
        .unwrap()
        .problems
        .is_empty());
    assert!(cache::verify_results(&shared, catalogue)
        .unwrap()
        .is_empty());

    // Merged into another store, its numbers come along and its results re-derive there.
    let other = Store::open_write(&dir.path().join("other.redb")).unwrap();
    let mut unavailable = |_: &cache::Computed| Ok(None);
    let mut opts = cache::MergeOptions::new(&mut unavailable);
    opts.benchmarks = catalogue;
    let merged = cache::merge(&other, &shared, opts).unwrap();
    assert_eq!(merged.added["parity number"], 8);
    assert_eq!(merged.results_derived, 2);
}

#[test]
fn without_its_registration_it_is_unknown_and_its_records_are_checked_by_its_declaration() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let known: [&dyn Benchmark; 1] = [&Parity];
    let catalogue = Catalogue::new(&known);
    Parity.build(&reg, &["--count".into(), "4".into()]).unwrap();
    score(&reg, &Parity);

    // The built-in catalogue does not hold it: a report of its results says so.
    let e = format!(
        "{:#}",
        report::entries(&reg, benchmarks::ALL, &[], &[]).unwrap_err()
    );
    assert!(e.contains("unknown benchmark `parity`"), "{e}");

    // A number stored under a key that is not its id fails the check its declaration gives.
    let forged = Id([7; 32]);
    reg.write(|w| {
        let bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&Number { value: 3 }).unwrap();
        w.put_raw(Number::KIND, forged, &bytes).map(drop)
    })
    .unwrap();
    let verified = cache::verify(&reg, catalogue).unwrap();
    assert_eq!(verified.kinds["parity number"].bad, 1);
    assert!(
        verified.problems[0].contains(&format!("parity number {}", forged.short())),
        "{:?}",
        verified.problems
    );
}
