//! DeltaLogic: does a model change exactly the answers it should after one minimal edit to the
//! premises? An episode `(P, q, y0, P', y1, t)` is asked in two turns: P and q, then (continuing
//! the dialogue with the model's own first answer) P' and q again.

mod build;
mod episode;
mod folio;
pub mod metrics;
pub mod prompts;
mod theory;

pub use crate::logic::Premise;
pub use build::{build, generated_items, BuildOutcome, BuildSpec, CellReport, PremiseSource};
pub use episode::{verify, Edit, EditType, Episode};

use super::view::{Block, Counted, ItemView, Line, Mark};
use super::{
    members, parse_args, unknown_template, Answer, Answered, Benchmark, Built, Column, Evaluation,
    Finding, Group, Models, Panel, Prepared, Request, Role,
};
use crate::benchmarks::prompts::{label_index, TemplateRecord};
use crate::logic::Label;
use crate::store::{Declared, Id, Store, StoredSet};
use anyhow::{bail, Context, Result};
use metrics::{Metrics, Row};
use prompts::Template;

/// The benchmark name DeltaLogic sets carry.
pub const BENCHMARK: &str = "deltalogic";

pub struct DeltaLogic;

struct Episodes {
    template: Template,
    ids: Vec<Id>,
    episodes: Vec<Episode>,
}

impl Prepared for Episodes {
    fn template(&self) -> TemplateRecord {
        self.template.record()
    }

    fn items(&self) -> &[Id] {
        &self.ids
    }

    fn turns(&self) -> usize {
        if self.template.explains() {
            3
        } else {
            2
        }
    }

    fn request(&self, item: usize, turn: usize, earlier: &[Answer]) -> Result<Request> {
        let ep = &self.episodes[item];
        self.ask(ep, &ep.premises_after()?, turn, earlier)
    }

    fn content_free(
        &self,
        item: usize,
        turn: usize,
        earlier: &[Answer],
        filler: &str,
    ) -> Result<Option<Request>> {
        let blank = Premise {
            text: filler.to_string(),
            fol: None,
        };
        let ep = Episode {
            premises: vec![blank.clone()],
            query: blank.clone(),
            ..self.episodes[item].clone()
        };
        // The model's earlier labels stay (they are the dialogue's frame); its explanation is
        // content.
        let earlier: Vec<Answer> = earlier
            .iter()
            .map(|a| match a {
                Answer::Label(_) => a.clone(),
                Answer::Text(_) => Answer::Text(filler.to_string()),
            })
            .collect();
        Ok(match self.ask(&ep, &[blank], turn, &earlier)? {
            r @ Request::Score { .. } => Some(r),
            Request::Generate { .. } => None,
        })
    }

    /// y0 at the first turn, y1 at the last (the revised answer); the `dialogue` template's
    /// explanation between them has none.
    fn target(&self, item: usize, turn: usize) -> Option<Label> {
        let ep = &self.episodes[item];
        match turn {
            0 => Some(ep.y0),
            t if t + 1 == self.turns() => Some(ep.y1),
            _ => None,
        }
    }
}

impl Episodes {
    /// Turn `turn` of episode `ep` (an item, or its content-free form) whose revised premises
    /// are `after`.
    fn ask(
        &self,
        ep: &Episode,
        after: &[Premise],
        turn: usize,
        earlier: &[Answer],
    ) -> Result<Request> {
        let t = &self.template;
        let prompt = match (t.explains(), turn, earlier) {
            (_, 0, []) => t.step1(ep)?,
            (false, 1, [pred0]) => t.step2(ep, pred0.label()?, None, after)?,
            (true, 1, [pred0]) => {
                let (prompt, decoding) = t.explanation(ep, pred0.label()?)?;
                return Ok(Request::Generate {
                    by: Role::Subject,
                    prompt,
                    decoding,
                });
            }
            (true, 2, [pred0, why]) => t.step2(ep, pred0.label()?, Some(why.text()?), after)?,
            _ => bail!("a DeltaLogic episode's turns come in order, each after the ones before"),
        };
        let labels = Label::ALL
            .iter()
            .map(|&l| (t.labels[label_index(l)].to_string(), l))
            .collect();
        Ok(Request::Score {
            by: Role::Subject,
            prompt,
            labels,
        })
    }
}

/// The figure plots the three failure modes of revision.
const PANEL: Panel = Panel {
    title: Some("DeltaLogic failure modes"),
    bars: &[
        ("inertia", "Inertia"),
        ("over_flip", "Over-flip"),
        ("abstain", "Abstention"),
    ],
};

/// What the report checks under every normalisation, per model: the sign of the revision gap,
/// which failure mode dominates, and whether the model abstains on more than half the edits.
const FINDINGS: [Finding; 3] = [
    Finding {
        what: "sign of the revision gap",
        reads: &["revision_gap"],
        verdict: |v| (sign(v[0]), v[0]),
    },
    Finding {
        what: "inertia vs over-flip (inertia − over-flip)",
        reads: &["inertia", "over_flip"],
        verdict: |v| (dominant(v[0], v[1]), v[0] - v[1]),
    },
    Finding {
        what: "abstains on more than half",
        reads: &["abstain"],
        verdict: |v| (if v[0] > 0.5 { "yes" } else { "no" }, v[0]),
    },
];

fn sign(x: f64) -> &'static str {
    if x > 0.0 {
        "positive"
    } else if x < 0.0 {
        "negative"
    } else {
        "zero"
    }
}

fn dominant(inertia: f64, over_flip: f64) -> &'static str {
    if inertia > over_flip {
        "inertia"
    } else if over_flip > inertia {
        "over-flip"
    } else {
        "neither"
    }
}

const COLUMNS: [Column; 6] = [
    Column {
        key: "initial_accuracy",
        title: "Init acc",
        headline: true,
    },
    Column {
        key: "revision_accuracy",
        title: "Rev acc",
        headline: true,
    },
    Column {
        key: "revision_gap",
        title: "Gap",
        headline: false,
    },
    Column {
        key: "inertia",
        title: "Inertia",
        headline: true,
    },
    Column {
        key: "over_flip",
        title: "Over-flip",
        headline: true,
    },
    Column {
        key: "abstain",
        title: "Abstain",
        headline: false,
    },
];

fn group(by: &str, value: &str, m: &Metrics) -> Group {
    Group::of(by, value, m.entries().map(|(_, x)| x))
}

/// `deltalogic build deltalogic`: one premise edited, both labels computed by the solvers.
#[derive(clap::Parser, Debug)]
struct BuildArgs {
    /// Seed of every random choice; the same inputs and seed give the same episode ids.
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::seed())]
    seed: u64,
    /// Episodes per (source, edit type) cell [default: 100 split over the cells].
    #[arg(long, value_parser = crate::bounds::count(1, crate::bounds::MAX_SIZE))]
    per_type: Option<usize>,
    /// Name of the set (a later build of the same name replaces the name, not the old set).
    #[arg(long, default_value = "deltalogic")]
    name: String,
    /// Premises from ingested FOLIO/ProofWriter items, or from fresh generated theories.
    #[arg(long, value_enum, default_value_t = PremiseSource::Ingested)]
    from: PremiseSource,
    /// Also build every other cell the engine makes soundly (RuleTaker, more edit types).
    #[arg(long)]
    extended: bool,
}

impl BuildOutcome {
    /// The cells table and the set line.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{:<12} {:<13} {:<20} {:>5} {:>6} {:>9} {:>9} {:>9}\n",
            "source",
            "semantics",
            "edit type",
            "made",
            "wanted",
            "eligible",
            "rejected",
            "unusable"
        );
        for c in &self.cells {
            s += &format!(
                "{:<12} {:<13} {:<20} {:>5} {:>6} {:>9} {:>9} {:>9}\n",
                c.source,
                c.semantics.as_str(),
                c.edit_type.as_str(),
                c.made,
                c.wanted,
                c.eligible_items,
                c.rejected,
                c.unusable_items
            );
        }
        s += &format!(
            "set `{}` = {} ({} episodes, {} new; spec {})\n",
            self.name,
            self.set.short(),
            self.episodes,
            self.new_episodes,
            self.spec.short()
        );
        s
    }
}

impl Benchmark for DeltaLogic {
    fn name(&self) -> &'static str {
        BENCHMARK
    }

    fn options(&self) -> clap::Command {
        <BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let a: BuildArgs = parse_args(options)?;
        let spec = BuildSpec {
            seed: a.seed,
            from: a.from,
            per_type: a.per_type,
            extended: a.extended,
        };
        let out = build(store, &spec, &a.name)?;
        Built::new(&out, out.text())
    }

    fn title(&self) -> &'static str {
        "DeltaLogic"
    }

    fn templates(&self) -> &'static [&'static str] {
        &prompts::TEMPLATE_NAMES
    }

    fn prepare(
        &self,
        store: &Store,
        set: &StoredSet,
        template: &str,
        models: &Models,
    ) -> Result<Box<dyn Prepared>> {
        let template = match template {
            "plain" => prompts::plain(),
            "chat" => prompts::chat(&models.subject.chat_template()?)?,
            "dialogue" => prompts::dialogue(),
            _ => return Err(unknown_template(self.title(), self.templates(), template)),
        };
        let (ids, episodes) = members::<Episode>(store, set)?.into_iter().unzip();
        Ok(Box::new(Episodes {
            template,
            ids,
            episodes,
        }))
    }

    fn export(&self, store: &Store, set: &StoredSet) -> Result<Vec<serde_json::Value>> {
        super::exported::<Episode>(store, set)
    }

    fn items(&self) -> Declared {
        Declared::of::<Episode>()
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        evaluation(&rows(store, answered)?, seed, super::RESAMPLES)
    }

    fn views(&self, store: &Store, set: &StoredSet) -> Result<Vec<ItemView>> {
        members::<Episode>(store, set)?
            .into_iter()
            .map(|(id, ep)| view(&ep).with_context(|| format!("episode {}", id.short())))
            .collect()
    }

    fn counted(&self, store: &Store, answered: &[Answered]) -> Result<Option<Counted>> {
        let groups = metrics::counted(&rows(store, answered)?);
        Ok(Some(Counted::every(groups)))
    }
}

/// The scored episodes of a result: gold labels and the model's first and revised answers.
fn rows(store: &Store, answered: &[Answered]) -> Result<Vec<Row>> {
    answered
        .iter()
        .map(|a| {
            let ep = store
                .get::<Episode>(&a.item)?
                .with_context(|| format!("a result names a missing episode {}", a.item.short()))?;
            // The scored turns: the first and the revised answer (the dialogue's explanation
            // between them is generated text).
            let labels: Vec<Label> = a.answers.iter().filter_map(|x| x.label().ok()).collect();
            let [pred0, pred1] = labels[..] else {
                bail!(
                    "episode {} has {} scored answers, not 2",
                    a.item.short(),
                    labels.len()
                );
            };
            Ok(Row {
                episode: a.item.hex(),
                source: ep.source,
                edit_type: ep.edit_type,
                y0: ep.y0,
                y1: ep.y1,
                pred0,
                pred1,
            })
        })
        .collect()
}

/// An episode as the HTML report shows it: P, q and y0, the edit from P to P′ line by line,
/// and y1; edit type and source as facets.
fn view(ep: &Episode) -> Result<ItemView> {
    let text = |p: &Premise| p.text.clone();
    let kept = |p: &Premise| Line {
        mark: Mark::Kept,
        text: text(p),
    };
    let mut lines: Vec<Line> = ep.premises.iter().map(kept).collect();
    let added = |p: &Premise| Line {
        mark: Mark::Added,
        text: text(p),
    };
    match &ep.edit {
        Edit::Insert { premise } => lines.push(added(premise)),
        Edit::Remove { at } | Edit::Replace { at, .. } => {
            let Some(line) = lines.get_mut(*at as usize) else {
                bail!("its edit names premise {} of {}", at + 1, ep.premises.len());
            };
            line.mark = Mark::Removed;
            if let Edit::Replace { premise, .. } = &ep.edit {
                lines.insert(*at as usize + 1, added(premise));
            }
        }
    }
    let label = |title: &str, l: Label| Block::Text {
        title: title.into(),
        text: l.as_str().into(),
    };
    Ok(ItemView {
        facets: vec![
            ("edit type".into(), ep.edit_type.as_str().into()),
            ("source".into(), ep.source.clone()),
        ],
        gold: vec![ep.y0, ep.y1],
        blocks: vec![
            Block::List {
                title: "P (premises)".into(),
                items: ep.premises.iter().map(text).collect(),
            },
            Block::Text {
                title: "q (query)".into(),
                text: text(&ep.query),
            },
            label("y0 (gold on P)", ep.y0),
            Block::Diff {
                title: format!("P → P′ ({})", ep.edit_type),
                lines,
            },
            label("y1 (gold on P′)", ep.y1),
        ],
    })
}

/// DeltaLogic's evaluation of scored episodes: the metrics overall, per edit type and per source,
/// with `resamples` bootstrap resamples.
pub fn evaluation(rows: &[Row], seed: u64, resamples: usize) -> Result<Evaluation> {
    let b = metrics::breakdown(rows, seed, resamples);
    let mut groups = vec![group("overall", "all", &b.overall)];
    groups.extend(b.by_edit_type.iter().map(|(k, m)| group("edit-type", k, m)));
    groups.extend(b.by_source.iter().map(|(k, m)| group("source", k, m)));
    Ok(Evaluation {
        n: rows.len(),
        columns: &COLUMNS,
        groups,
        metrics: serde_json::to_value(&b)?,
        note: "Gap = Init acc − Rev acc (points). Inertia: the edited premises change the gold \
               label but the model keeps its correct first answer; over-flip: the gold label \
               stays but the model abandons its correct first answer; their n counts those \
               episodes. Abstain: share of Uncertain answers after the edit.",
        panel: PANEL,
        findings: &FINDINGS,
    })
}
