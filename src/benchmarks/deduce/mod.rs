//! DeduCE: deductive consistency over hops (arXiv 2504.07080). Given a problem and the first k
//! steps of a correct solution, does the model infer the values of the next l steps? Items are
//! GSM8K problems templatised by their own calculator annotations ([`gsm8k`], no language model
//! involved), their perturbed copies ([`perturb`]: memorised answers no longer fit), or synthetic
//! chains of a chosen number of hops ([`synthetic`]). Each item is asked once per premise count
//! k ∈ {0, 1, 2} (one turn each, independent of the others); the continuation's step values are
//! read by [`extract`] and scored by [`metrics`]. See `docs/deduce.md`.

pub mod extract;
pub mod gsm8k;
pub mod metrics;
pub mod perturb;
pub mod problem;
pub mod rational;
pub mod synthetic;
pub mod template;

pub use problem::Problem;

use super::prompts::TemplateRecord;
use super::view::Counted;
use super::{
    members, parse_args, unknown_template, Answered, Benchmark, Built, Column, Decoding,
    Evaluation, Group, Models, Panel, Prepared, Request, Role, RESAMPLES,
};
use crate::datasets::home;
use crate::metrics::{mean_metric, Metric};
use crate::rng::Rng;
use crate::store::{canonical, Declared, Id, Names, Store, StoredSet, StoredSpec};
use anyhow::{bail, Context, Result};
use metrics::Case;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const BENCHMARK: &str = "deduce";
/// Bumped when the problems built from the same inputs change, so that specs change with them.
const BUILDER_VERSION: u32 = 1;

/// Premise counts asked: the problem alone, then with its first one and two steps.
pub const PREMISE_COUNTS: [usize; 3] = [0, 1, 2];
/// Hops reported (l = 1..=5).
pub const HOPS: usize = 5;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum ItemSource {
    Gsm8k,
    Synthetic,
}

/// `deltalogic build deduce`: GSM8K problems traced by their calculator annotations (with
/// perturbed copies), or synthetic chains.
#[derive(clap::Parser, Debug)]
struct BuildArgs {
    #[arg(long, value_enum, default_value = "gsm8k")]
    from: ItemSource,
    /// The folder of GSM8K's JSONL files [default: gsm8k/openai in the datasets folder, see
    /// `deltalogic datasets where`].
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// The GSM8K file `<data>/<split>.jsonl`.
    #[arg(long, default_value = "test")]
    split: String,
    /// Only the first N GSM8K lines, or N synthetic problems [synthetic default: 100].
    #[arg(long, value_parser = crate::bounds::count(1, crate::bounds::MAX_SIZE))]
    limit: Option<usize>,
    /// Perturbed copies of each accepted GSM8K problem, besides the original.
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::count(0, crate::bounds::MAX_COPIES))]
    perturb: usize,
    /// Seed of the perturbations and of the synthetic generator.
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::seed())]
    seed: u64,
    /// Steps of each synthetic problem (1..=12).
    #[arg(long, default_value_t = 5, value_parser = crate::bounds::count(1, synthetic::MAX_HOPS as u64))]
    hops: usize,
    /// Name of the set [default: deduce, or deduce-synthetic].
    #[arg(long)]
    name: Option<String>,
}

/// What `build deduce` made.
#[derive(Clone, Debug, Serialize)]
pub struct BuildOutcome {
    pub name: String,
    pub set: Id,
    pub spec: Id,
    pub problems: usize,
    pub new_problems: usize,
    /// GSM8K lines read (0 for synthetic sets).
    pub read: usize,
    pub accepted: usize,
    /// Rejected GSM8K items per reason, in [`gsm8k::Reject::ALL`] order.
    pub rejected: Vec<(gsm8k::Reject, usize)>,
    pub perturbed: usize,
    /// Accepted items for which no draw of new values met the constraints (or nothing moves).
    pub not_perturbable: usize,
}

/// The spec every set's id depends on.
#[derive(Serialize)]
struct Spec<'a> {
    benchmark: &'static str,
    builder_version: u32,
    from: ItemSource,
    /// blake3 of the GSM8K file read (synthetic: empty).
    file: String,
    limit: Option<usize>,
    perturb: usize,
    seed: u64,
    hops: Option<usize>,
    split: &'a str,
}

/// GSM8K's problems of one file: the accepted originals and `copies` perturbed copies of each.
#[derive(Default)]
pub struct FromGsm8k {
    pub problems: Vec<Problem>,
    pub read: usize,
    pub accepted: usize,
    pub rejected: BTreeMap<gsm8k::Reject, usize>,
    pub perturbed: usize,
    pub not_perturbable: usize,
}

/// Templatises GSM8K rows, checks that each accepted one renders back to its original text and
/// re-executes, and adds perturbed copies. `file` names the rows' file in origins and errors.
pub fn from_gsm8k(rows: &[gsm8k::Row], file: &str, copies: usize, seed: u64) -> Result<FromGsm8k> {
    let mut out = FromGsm8k {
        read: rows.len(),
        ..FromGsm8k::default()
    };
    for row in rows {
        let origin = format!("{file} line {}", row.line);
        let t = match gsm8k::templatise(&row.question, &row.answer) {
            Ok(t) => t,
            Err(why) => {
                *out.rejected.entry(why).or_default() += 1;
                continue;
            }
        };
        let ex = t
            .execute(t.original())
            .with_context(|| format!("{origin}: re-executing the template"))?;
        if t.question(&ex)? != row.question || t.solution(&ex)? != row.answer {
            bail!("{origin}: the template does not render back to the item (a templatiser bug)");
        }
        let original = Problem::from_template(&t, &ex, "gsm8k", origin.clone(), false)?;
        original.verify(&origin)?;
        if !original.extractable()? {
            *out.rejected
                .entry(gsm8k::Reject::Unextractable)
                .or_default() += 1;
            continue;
        }
        out.accepted += 1;
        out.problems.push(original);
        let mut any = false;
        for copy in 0..copies {
            let mut rng = Rng::derive(seed, &format!("deduce/perturb/{origin}/{copy}"));
            let Some(ex) = perturb::perturb(&t, &mut rng) else {
                continue;
            };
            let what = format!("{origin} copy {copy}");
            let p = Problem::from_template(&t, &ex, "gsm8k", origin.clone(), true)?;
            p.verify(&what)?;
            // The same lines with other numbers read back the same way; checked all the same.
            if !p.extractable()? {
                continue;
            }
            out.problems.push(p);
            out.perturbed += 1;
            any = true;
        }
        if copies > 0 && !any {
            out.not_perturbable += 1;
        }
    }
    Ok(out)
}

fn build(store: &Store, a: &BuildArgs) -> Result<BuildOutcome> {
    let (problems, file_hash, gsm) = match a.from {
        ItemSource::Gsm8k => {
            let data = match &a.data {
                Some(dir) => dir.clone(),
                None => home::find(None)?.dir.join("gsm8k/openai"),
            };
            let path = data.join(format!("{}.jsonl", a.split));
            let bytes = std::fs::read(&path)
                .with_context(|| format!("reading GSM8K file {}", path.display()))?;
            let mut rows = gsm8k::read(&path)?;
            if let Some(n) = a.limit {
                rows.truncate(n);
            }
            let file = format!("{}.jsonl", a.split);
            let mut g = from_gsm8k(&rows, &file, a.perturb, a.seed)?;
            let ps = std::mem::take(&mut g.problems);
            (ps, blake3::hash(&bytes).to_hex().to_string(), Some(g))
        }
        ItemSource::Synthetic => {
            if a.perturb > 0 {
                bail!("--perturb applies to GSM8K problems; synthetic ones are fresh already");
            }
            let n = a.limit.unwrap_or(100);
            let ps = (0..n)
                .map(|i| synthetic::problem(a.seed, a.hops, i))
                .collect::<Result<Vec<_>>>()?;
            (ps, String::new(), None)
        }
    };
    if problems.is_empty() {
        bail!("no problems to store: every item was rejected");
    }
    let name = a.name.clone().unwrap_or_else(|| match a.from {
        ItemSource::Gsm8k => "deduce".to_string(),
        ItemSource::Synthetic => "deduce-synthetic".to_string(),
    });
    let spec = Spec {
        benchmark: BENCHMARK,
        builder_version: BUILDER_VERSION,
        from: a.from,
        file: file_hash,
        limit: a.limit,
        perturb: a.perturb,
        seed: a.seed,
        hops: (a.from == ItemSource::Synthetic).then_some(a.hops),
        split: if a.from == ItemSource::Gsm8k {
            &a.split
        } else {
            ""
        },
    };
    let spec_json = String::from_utf8(canonical(&spec)).expect("JSON is UTF-8");
    let (set, spec, new) = store
        .write(|w| {
            let (spec, _) = w.put(&StoredSpec { json: spec_json })?;
            let mut ids = Vec::with_capacity(problems.len());
            let mut new = 0;
            for p in &problems {
                let (id, fresh) = w.put(p)?;
                ids.push(id);
                new += usize::from(fresh);
            }
            let (set, _) = w.put(&StoredSet::new(BENCHMARK, spec, ids))?;
            w.name(Names::Sets, &name, set)?;
            Ok((set, spec, new))
        })
        .with_context(|| format!("storing set `{name}`"))?;
    let members = store.get::<StoredSet>(&set)?.map_or(0, |s| s.members.len());
    let g = gsm.unwrap_or_default();
    Ok(BuildOutcome {
        name,
        set,
        spec,
        problems: members,
        new_problems: new,
        read: g.read,
        accepted: g.accepted,
        rejected: gsm8k::Reject::ALL
            .iter()
            .map(|r| (*r, g.rejected.get(r).copied().unwrap_or(0)))
            .collect(),
        perturbed: g.perturbed,
        not_perturbable: g.not_perturbable,
    })
}

/// The wording of the `continue` template: an instruction, one worked example (not from GSM8K)
/// showing the step format the extraction reads, then the problem and its first k steps.
#[derive(Serialize)]
struct Wording {
    instruction: &'static str,
    example: &'static str,
    question: &'static str,
    answer: &'static str,
}

const WORDING: Wording = Wording {
    instruction: "Solve the problem step by step. Write each step on its own line as a calculation \
                  ending with `= value`, and the final answer on a last line starting with `####`.\n\n",
    example: "Question: A baker makes 24 muffins. He sells 3/4 of them in the morning and half of \
              the rest in the afternoon. How many muffins are left?\nAnswer:\nHe sells 24 * 3/4 = \
              18 muffins in the morning.\nThat leaves 24 - 18 = 6 muffins.\nHe sells 6 / 2 = 3 \
              muffins in the afternoon.\nSo 6 - 3 = 3 muffins are left.\n#### 3\n\n",
    question: "Question: ",
    answer: "\nAnswer:\n",
};

/// Greedy, at most this many tokens: enough for the rest of a GSM8K solution (a median of about
/// 4 lines), bounded so that a rambling model costs little. A blank line ends the solution (the
/// example's solution ends with one; GSM8K solutions contain none).
fn decoding() -> Decoding {
    Decoding {
        max_tokens: 160,
        stop: vec!["\n\n".to_string()],
    }
}

/// The prompt of `p` with its first `k` steps given (annotations removed: they are shown as a
/// reader writes them).
pub fn prompt(p: &Problem, k: usize) -> String {
    let mut s = format!(
        "{}{}{}{}{}",
        WORDING.instruction, WORDING.example, WORDING.question, p.question, WORDING.answer
    );
    for step in p.steps.iter().take(k) {
        s.push_str(&problem::plain(&step.text));
        s.push('\n');
    }
    s
}

struct Continuations {
    ids: Vec<Id>,
    problems: Vec<Problem>,
}

impl Prepared for Continuations {
    fn template(&self) -> TemplateRecord {
        #[derive(Serialize)]
        struct Definition {
            wording: Wording,
            premise_counts: [usize; 3],
            decoding: Decoding,
        }
        TemplateRecord {
            name: "continue".to_string(),
            definition: String::from_utf8(canonical(&Definition {
                wording: WORDING,
                premise_counts: PREMISE_COUNTS,
                decoding: decoding(),
            }))
            .expect("JSON is UTF-8"),
        }
    }

    fn items(&self) -> &[Id] {
        &self.ids
    }

    fn turns(&self) -> usize {
        PREMISE_COUNTS.len()
    }

    fn request(&self, item: usize, turn: usize, _earlier: &[super::Answer]) -> Result<Request> {
        Ok(Request::Generate {
            by: Role::Subject,
            prompt: prompt(&self.problems[item], PREMISE_COUNTS[turn]),
            decoding: decoding(),
        })
    }

    fn content_free(
        &self,
        _item: usize,
        _turn: usize,
        _earlier: &[super::Answer],
        _filler: &str,
    ) -> Result<Option<Request>> {
        Ok(None)
    }

    /// Every turn is a generation, read by its own extraction, not a label.
    fn target(&self, _item: usize, _turn: usize) -> Option<crate::logic::Label> {
        None
    }
}

/// Whether a problem is an original GSM8K item, a perturbed copy, or synthetic.
fn variant(p: &Problem) -> &'static str {
    match (p.dataset.as_str(), p.perturbed) {
        ("synthetic", _) => "synthetic",
        (_, true) => "perturbed",
        _ => "original",
    }
}

/// The figure plots consistency at hops 1 to 5: its decay with hops.
const PANEL: Panel = Panel {
    title: None,
    bars: &[
        ("hop-1", "Hop 1"),
        ("hop-2", "Hop 2"),
        ("hop-3", "Hop 3"),
        ("hop-4", "Hop 4"),
        ("hop-5", "Hop 5"),
    ],
};

const COLUMNS: [Column; 8] = [
    Column {
        key: "final-answer",
        title: "Final answer",
        headline: true,
    },
    Column {
        key: "hop-1",
        title: "Hop 1",
        headline: true,
    },
    Column {
        key: "hop-2",
        title: "Hop 2",
        headline: false,
    },
    Column {
        key: "hop-3",
        title: "Hop 3",
        headline: false,
    },
    Column {
        key: "hop-4",
        title: "Hop 4",
        headline: false,
    },
    Column {
        key: "hop-5",
        title: "Hop 5",
        headline: false,
    },
    Column {
        key: "strict-3",
        title: "All of hops 1-3",
        headline: false,
    },
    Column {
        key: "coverage-1",
        title: "Coverage",
        headline: false,
    },
];

/// One point of a curve, as the JSON report gives it.
#[derive(Serialize)]
struct Point {
    variant: &'static str,
    k: usize,
    l: usize,
    consistency: Metric,
    strict: Metric,
    coverage: Metric,
}

/// Whether a case counts for the metric of column `column` of [`COLUMNS`], and if so whether it
/// is right; `None` where the case does not count (what `counted` and the metrics both read).
fn measure(column: usize, c: &Case) -> Option<bool> {
    match column {
        0 => c.final_correct(),
        l @ 1..=HOPS => c.hop(l),
        6 => c.strict(3),
        _ => c.covered(1),
    }
}

/// The bootstrap stream of each column's metric within a group's.
const STREAMS: [&str; 8] = [
    "final",
    "hop-1",
    "hop-2",
    "hop-3",
    "hop-4",
    "hop-5",
    "strict-3",
    "coverage-1",
];

/// The metrics of the cases of one group, in [`COLUMNS`] order.
fn group_metrics(cases: &[&Case], seed: u64, stream: &str) -> Vec<Metric> {
    STREAMS
        .iter()
        .enumerate()
        .map(|(column, what)| {
            let values = metrics::scores(cases, |c| measure(column, c));
            mean_metric(&values, seed, &format!("{stream}/{what}"), RESAMPLES)
        })
        .collect()
}

/// Each problem asked at each premise count, grouped by (k, variant), with its row's position.
type Cases = BTreeMap<(usize, &'static str), Vec<(u32, Case)>>;

fn cases(store: &Store, answered: &[Answered]) -> Result<Cases> {
    let mut cases = Cases::new();
    for (at, a) in answered.iter().enumerate() {
        let Some(p) = store.get::<Problem>(&a.item)? else {
            bail!(
                "{}: a result names a missing problem {}",
                store.path().display(),
                a.item.short()
            );
        };
        let values = p.values()?;
        let answer = p.answer_value()?;
        if a.answers.len() != PREMISE_COUNTS.len() {
            bail!(
                "problem {}: {} answers, not {}",
                a.item.short(),
                a.answers.len(),
                PREMISE_COUNTS.len()
            );
        }
        for (k, ans) in PREMISE_COUNTS.iter().zip(&a.answers) {
            let case = Case {
                next: values.iter().skip(*k).copied().collect(),
                answer,
                got: extract::extract(ans.text()?),
            };
            cases
                .entry((*k, variant(&p)))
                .or_default()
                .push((at as u32, case));
        }
    }
    Ok(cases)
}

pub struct Deduce;

impl Benchmark for Deduce {
    fn name(&self) -> &'static str {
        BENCHMARK
    }

    fn title(&self) -> &'static str {
        "DeduCE"
    }

    fn templates(&self) -> &'static [&'static str] {
        &["continue"]
    }

    fn options(&self) -> clap::Command {
        <BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let out = build(store, &parse_args(options)?)?;
        let mut text = format!(
            "set `{}` = {} ({} problems, {} new; spec {})\n",
            out.name,
            out.set.short(),
            out.problems,
            out.new_problems,
            out.spec.short()
        );
        if out.read > 0 {
            text.push_str(&format!(
                "GSM8K: {} read, {} accepted ({:.1}%), {} perturbed copies, {} not perturbable\n",
                out.read,
                out.accepted,
                100.0 * out.accepted as f64 / out.read as f64,
                out.perturbed,
                out.not_perturbable
            ));
            for (r, n) in &out.rejected {
                text.push_str(&format!("  rejected {}: {n}\n", r.as_str()));
            }
        }
        Built::new(&out, text)
    }

    fn prepare(
        &self,
        store: &Store,
        set: &StoredSet,
        template: &str,
        _models: &Models,
    ) -> Result<Box<dyn Prepared>> {
        if !self.templates().contains(&template) {
            return Err(unknown_template(self.title(), self.templates(), template));
        }
        let (ids, problems) = members::<Problem>(store, set)?.into_iter().unzip();
        Ok(Box::new(Continuations { ids, problems }))
    }

    fn items(&self) -> Declared {
        Declared::of::<Problem>()
    }

    fn export(&self, store: &Store, set: &StoredSet) -> Result<Vec<serde_json::Value>> {
        #[derive(Serialize)]
        struct Exported<'a> {
            id: Id,
            question: &'a str,
            steps: Vec<&'a str>,
            answer: &'a str,
            origin: &'a str,
            perturbed: bool,
        }
        members::<Problem>(store, set)?
            .iter()
            .map(|(id, p)| {
                Ok(serde_json::to_value(Exported {
                    id: *id,
                    question: &p.question,
                    steps: p.steps.iter().map(|s| s.text.as_str()).collect(),
                    answer: &p.answer,
                    origin: &p.origin,
                    perturbed: p.perturbed,
                })?)
            })
            .collect()
    }

    fn views(&self, store: &Store, set: &StoredSet) -> Result<Vec<super::view::ItemView>> {
        Ok(super::view::fields(self.export(store, set)?))
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        let cases: BTreeMap<_, Vec<Case>> = cases(store, answered)?
            .into_iter()
            .map(|(group, cs)| (group, cs.into_iter().map(|(_, c)| c).collect()))
            .collect();
        let all_k0: Vec<&Case> = cases
            .iter()
            .filter(|((k, _), _)| *k == 0)
            .flat_map(|(_, v)| v)
            .collect();
        let mut groups = vec![Group::of(
            "overall",
            "k=0",
            &group_metrics(&all_k0, seed, "deduce/overall"),
        )];
        let mut curves = Vec::new();
        for ((k, var), cs) in &cases {
            let refs: Vec<&Case> = cs.iter().collect();
            let stream = format!("deduce/{k}/{var}");
            groups.push(Group::of(
                "k, variant",
                &format!("k={k}, {var}"),
                &group_metrics(&refs, seed, &stream),
            ));
            for l in 1..=HOPS {
                let m = |what: &str, v: Vec<f64>| {
                    mean_metric(&v, seed, &format!("{stream}/curve/{what}/{l}"), RESAMPLES)
                };
                curves.push(Point {
                    variant: var,
                    k: *k,
                    l,
                    consistency: m("hop", metrics::scores(&refs, |c| c.hop(l))),
                    strict: m("strict", metrics::scores(&refs, |c| c.strict(l))),
                    coverage: m("coverage", metrics::scores(&refs, |c| c.covered(l))),
                });
            }
        }
        Ok(Evaluation {
            n: answered.len(),
            columns: &COLUMNS,
            groups,
            metrics: serde_json::json!({ "curves": curves }),
            note: "Given a problem and the first k steps of its solution, the share of problems \
                   whose l-th next step value the model states correctly (Hop l, exact), the \
                   share with hops 1-3 all correct, coverage (at least one step value read at \
                   all) and final-answer accuracy (when a step is left to infer). Original GSM8K \
                   items vs perturbed copies (new numbers, recomputed) show the memorisation gap; \
                   the JSON report has every (k, l) curve.",
            panel: PANEL,
            findings: &[],
        })
    }

    /// Each metric counts problems asked at one k (one turn each), those its measure applies
    /// to; a problem is one row, so within a group each is counted once.
    fn counted(&self, store: &Store, answered: &[Answered]) -> Result<Option<Counted>> {
        let cases = cases(store, answered)?;
        let columns = |cs: &[&(u32, Case)]| -> Vec<Vec<u32>> {
            (0..COLUMNS.len())
                .map(|column| {
                    cs.iter()
                        .filter(|(_, c)| measure(column, c).is_some())
                        .map(|(at, _)| *at)
                        .collect()
                })
                .collect()
        };
        let k0: Vec<&(u32, Case)> = cases
            .iter()
            .filter(|((k, _), _)| *k == 0)
            .flat_map(|(_, v)| v)
            .collect();
        let mut groups = vec![columns(&k0)];
        for cs in cases.values() {
            groups.push(columns(&cs.iter().collect::<Vec<_>>()));
        }
        Ok(Some(Counted::every(groups)))
    }
}
