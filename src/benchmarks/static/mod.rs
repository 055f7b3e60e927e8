//! Static questions: the fixed-premise accuracy that DeltaLogic contrasts revision with. Built
//! from a DeltaLogic set, each episode gives two single questions on the same query: over the
//! original premises P (gold y0) and over the edited premises P′ (gold y1), each asked fresh, with
//! no dialogue before it. The report then shows, on the same items, how well a model answers P′
//! from scratch beside how well it revises to P′ (DeltaLogic's revision accuracy).
//!
//! Every gold answer is re-derived by the solver when the set is built ([`question::verify`]).
//! FOLIO episodes are left out: a question keeps premise texts only, and the first-order checker
//! needs their FOL. The `before` questions get exactly DeltaLogic's step-1 prompt (`plain`), so
//! they share its cached scores.

use super::deltalogic::{self, Episode};
use super::question::{self, store_set, Question, Verdict};
use super::robustlr::options;
use super::view::Counted;
use super::{members, parse_args, Answered, Benchmark, Built, Evaluation};
use crate::logic::Semantics;
use crate::store::{canonical, Id, Store};
use anyhow::{bail, Context, Result};
use serde::Serialize;

pub const BENCHMARK: &str = "static";
/// Bumped when the questions made from the same episodes change, so that specs change with them.
const BUILDER_VERSION: u32 = 1;

/// Tag keys: the premises asked over (`before` = P, `after` = P′), the episode's edit type and
/// source, and the episode itself.
pub const PREMISES: &str = "premises";
pub const EDIT_TYPE: &str = "edit-type";
pub const SOURCE: &str = "source";
pub const EPISODE: &str = "episode";
const GROUPS: [&str; 3] = [PREMISES, EDIT_TYPE, SOURCE];

/// `deltalogic build static`: the episodes of a DeltaLogic set as fixed-premise questions.
#[derive(clap::Parser, Debug)]
struct BuildArgs {
    /// The DeltaLogic set whose episodes become questions.
    #[arg(long = "from-set", default_value = "deltalogic")]
    from_set: String,
    /// Name of the set.
    #[arg(long, default_value = "static")]
    name: String,
}

/// What `build static` made.
#[derive(Clone, Debug, Serialize)]
pub struct BuildOutcome {
    #[serde(flatten)]
    pub stored: question::Stored,
    pub episodes: usize,
    /// FOLIO episodes left out (their premises need FOL, which questions do not keep).
    pub first_order_skipped: usize,
}

/// The two questions of an episode, gold answers re-derived by the solver.
fn questions(id: Id, ep: &Episode) -> Result<[Question; 2]> {
    let after = ep.premises_after()?;
    let make = |premises: &[crate::logic::Premise], gold, when: &str| -> Result<Question> {
        let mut q = Question {
            benchmark: BENCHMARK.to_string(),
            semantics: ep.semantics,
            premises: premises.iter().map(|p| p.text.clone()).collect(),
            query: ep.query.text.clone(),
            options: options(true),
            gold,
            revises: None,
            tags: vec![
                (PREMISES.to_string(), when.to_string()),
                (EDIT_TYPE.to_string(), ep.edit_type.as_str().to_string()),
                (SOURCE.to_string(), ep.source.clone()),
                (EPISODE.to_string(), id.hex()),
            ],
            base_item: ep.base_item().0,
        };
        q.sort_tags();
        match question::verify(&q)
            .with_context(|| format!("episode {}, premises {when}", id.short()))?
        {
            Verdict::Solved => Ok(q),
            Verdict::NotChecked(why) => bail!("episode {}: {why}", id.short()),
        }
    };
    Ok([
        make(&ep.premises, ep.y0, "before")?,
        make(&after, ep.y1, "after")?,
    ])
}

pub fn build(store: &Store, from_set: &str, name: &str) -> Result<BuildOutcome> {
    let Some((set_id, set)) = store.set_by_name(from_set)? else {
        bail!(
            "no set named `{from_set}` in {}: build a DeltaLogic set first",
            store.path().display()
        );
    };
    if set.benchmark != deltalogic::BENCHMARK {
        bail!(
            "set `{from_set}` is a {} set, not a DeltaLogic one",
            set.benchmark
        );
    }
    let episodes = members::<Episode>(store, &set)?;
    let mut qs = Vec::new();
    let mut skipped = 0;
    for (id, ep) in &episodes {
        if ep.semantics == Semantics::FirstOrder {
            skipped += 1;
            continue;
        }
        qs.extend(questions(*id, ep)?);
    }
    #[derive(Serialize)]
    struct Spec {
        benchmark: &'static str,
        builder_version: u32,
        from_set: String,
    }
    let spec = Spec {
        benchmark: BENCHMARK,
        builder_version: BUILDER_VERSION,
        from_set: set_id.hex(),
    };
    let spec_json = String::from_utf8(canonical(&spec)).expect("JSON is UTF-8");
    let stored = store_set(store, BENCHMARK, spec_json, &qs, name)?;
    Ok(BuildOutcome {
        stored,
        episodes: episodes.len(),
        first_order_skipped: skipped,
    })
}

pub struct Static;

impl Benchmark for Static {
    fn name(&self) -> &'static str {
        BENCHMARK
    }

    fn title(&self) -> &'static str {
        "Static"
    }

    fn options(&self) -> clap::Command {
        <BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let a: BuildArgs = parse_args(options)?;
        let out = build(store, &a.from_set, &a.name)?;
        Built::new(
            &out,
            format!(
                "{} episodes of `{}` as questions over P and over P′ ({} FOLIO episodes left out: \
                 questions keep no FOL)\n{}",
                out.episodes,
                a.from_set,
                out.first_order_skipped,
                out.stored.text()
            ),
        )
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        let rows = question::rows(store, answered)?;
        question::accuracy_evaluation(
            &rows,
            &GROUPS,
            seed,
            "Accuracy of single questions asked fresh: over the original premises (before) and \
             over the edited premises (after), the same items as DeltaLogic's initial and \
             revision accuracy. Gold answers are the solver's.",
        )
    }

    fn counted(&self, store: &Store, answered: &[Answered]) -> Result<Option<Counted>> {
        let rows = question::rows(store, answered)?;
        Ok(Some(question::accuracy_counted(&rows, &GROUPS)))
    }
}
