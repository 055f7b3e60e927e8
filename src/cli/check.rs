//! `deltalogic datasets check`: the logic engine against the datasets' own labels. The engine's
//! labels are the gold labels of deltalogic; this check shows where the two part ways.

use crate::datasets::{BaseItem, Format};
use crate::logic::fol;
use crate::logic::folio::{self, Decision};
use crate::logic::{english, solver, Label, World};
use crate::store::{Id, Store};
use anyhow::Result;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Serialize)]
pub struct Disagreement {
    pub item: Id,
    pub file: String,
    pub position: String,
    pub query: String,
    pub dataset_label: Label,
    /// The engine's label, or why it has none.
    pub ours: String,
}

/// What the engine makes of one item.
enum Outcome {
    Label(Label),
    NoFormalForm,
    Unparseable,
    Undecided,
}

#[derive(Debug, Default, Serialize)]
pub struct DatasetCheck {
    pub dataset: String,
    pub items: usize,
    pub agree: usize,
    pub disagree: usize,
    /// Items without a formal form to check (FOLIO train has no conclusion FOL).
    pub no_formal_form: usize,
    /// The engine gives no label (FOLIO: beyond the checker's bounds; theories: no answer).
    pub undecided: usize,
    /// Items whose text or FOL the engine cannot parse (malformed annotations).
    pub unparseable: usize,
    /// Per dataset label: [agree, items].
    pub per_label: BTreeMap<String, [usize; 2]>,
    /// How much of each file the theory grammar reads (theory datasets only).
    pub coverage: Vec<FileCoverage>,
    pub disagreements: Vec<Disagreement>,
}

/// Parse coverage of one file: premises count once per distinct theory, queries once per item.
#[derive(Debug, Default, Serialize)]
pub struct FileCoverage {
    pub file: String,
    pub sentences: usize,
    pub parsed: usize,
    pub questions: usize,
    /// Questions the engine gave a label (every sentence parsed, theory solvable).
    pub answered: usize,
    /// Answered questions whose label is the dataset's.
    pub agree: usize,
}

impl DatasetCheck {
    fn record(&mut self, item: &BaseItem, id: Id, ours: Outcome) {
        let Some(gold) = item.dataset_label else {
            return;
        };
        self.items += 1;
        let slot = self.per_label.entry(gold.as_str().to_string()).or_default();
        slot[1] += 1;
        match ours {
            Outcome::Label(l) if l == gold => {
                self.agree += 1;
                slot[0] += 1;
            }
            Outcome::Label(l) => {
                self.disagree += 1;
                self.disagreements.push(Disagreement {
                    item: id,
                    file: item.origin.file.clone(),
                    position: item.origin.position.clone(),
                    query: item.query.clone(),
                    dataset_label: gold,
                    ours: l.to_string(),
                });
            }
            Outcome::NoFormalForm => self.no_formal_form += 1,
            Outcome::Unparseable => self.unparseable += 1,
            Outcome::Undecided => self.undecided += 1,
        }
    }
}

/// Checks every ingested item with a dataset label, per dataset (or only `only`).
pub fn check(reg: &Store, only: Option<&str>) -> Result<Vec<DatasetCheck>> {
    let mut by_dataset: BTreeMap<String, Vec<(Id, BaseItem)>> = BTreeMap::new();
    for (id, item) in reg.all::<BaseItem>()? {
        if only.is_none_or(|d| d == item.origin.dataset) {
            by_dataset
                .entry(item.origin.dataset.clone())
                .or_default()
                .push((id, item));
        }
    }
    let mut out = Vec::new();
    for (dataset, items) in by_dataset {
        let mut c = DatasetCheck {
            dataset: dataset.clone(),
            ..Default::default()
        };
        if dataset == "folio" {
            for (id, item) in &items {
                c.record(item, *id, folio_label(item));
            }
        } else {
            check_theories(&mut c, &items);
        }
        if c.items > 0 {
            out.push(c);
        }
    }
    Ok(out)
}

/// Theories in the ProofWriter grammar: parsed and saturated once per premise set.
fn check_theories(c: &mut DatasetCheck, items: &[(Id, BaseItem)]) {
    type Theory<'a> = (&'a [String], Option<World>);
    let mut groups: BTreeMap<Theory, Vec<&(Id, BaseItem)>> = BTreeMap::new();
    for entry in items {
        groups
            .entry((&entry.1.premises, entry.1.world))
            .or_default()
            .push(entry);
    }
    let mut coverage: BTreeMap<&String, FileCoverage> = BTreeMap::new();
    for ((premises, world), members) in groups {
        let Some(world) = world else { continue };
        let parsed: Vec<_> = premises
            .iter()
            .map(|p| english::parse_statement(p))
            .collect();
        let premises_parsed = parsed.iter().filter(|p| p.is_ok()).count();
        let closure = match parsed.into_iter().collect::<Result<Vec<_>, _>>() {
            Ok(theory) => solver::closure(&theory, world).map_err(|_| Outcome::Undecided),
            Err(_) => Err(Outcome::Unparseable),
        };
        let mut files_seen = BTreeSet::new();
        for (id, item) in members {
            let file = coverage
                .entry(&item.origin.file)
                .or_insert_with(|| FileCoverage {
                    file: item.origin.file.clone(),
                    ..Default::default()
                });
            if files_seen.insert(&item.origin.file) {
                file.sentences += premises.len();
                file.parsed += premises_parsed;
            }
            let query = english::parse_query(&item.query);
            file.sentences += 1;
            file.parsed += usize::from(query.is_ok());
            let ours = match (&closure, query) {
                (Ok(cl), Ok(q)) => Outcome::Label(cl.label(&q)),
                (Err(Outcome::Undecided), _) => Outcome::Undecided,
                _ => Outcome::Unparseable,
            };
            file.questions += 1;
            if let Outcome::Label(l) = ours {
                file.answered += 1;
                file.agree += usize::from(item.dataset_label == Some(l));
            }
            c.record(item, *id, ours);
        }
    }
    c.coverage = coverage.into_values().collect();
}

/// `datasets check --refused`: the sentences of one dataset the theory grammar refuses, grouped
/// by shape ([`english::shape`]), so that a user sees what keeps their theories from being read.
#[derive(Debug, Default, Serialize)]
pub struct Refusals {
    pub dataset: String,
    /// Distinct sentences: premises, and questions (read as questions: a rule is refused there).
    pub sentences: usize,
    pub refused: usize,
    pub questions: usize,
    /// Questions with a refused sentence in their theory or in themselves: they get no label.
    pub blocked: usize,
    /// How many shapes there are; `shapes` holds the most frequent, up to the limit asked for.
    pub shape_count: usize,
    pub shapes: Vec<RefusedShape>,
}

/// One shape of refused sentence.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedShape {
    pub shape: String,
    /// Distinct refused sentences of this shape.
    pub sentences: usize,
    /// Questions it blocks, alone or with other shapes.
    pub questions: usize,
    /// Questions it alone blocks: were this shape read, every sentence of theirs would be.
    pub alone: usize,
    /// The shortest sentence of this shape (the first in text order among the shortest).
    pub example: String,
    /// Why the grammar refuses the example.
    pub reason: String,
}

/// Whether a dataset's items are written for the theory grammar: those read under a world
/// (ProofWriter, RuleTaker, generated theories) and GLoRE's RobustLR items.
fn grammar_dataset(item: &BaseItem) -> bool {
    item.world.is_some() || item.origin.dataset == Format::RobustLrGlore.dataset()
}

/// The refused sentences of every dataset written for the grammar (or of `only`, whatever it is),
/// grouped by shape, the `limit` most frequent shapes kept: most distinct sentences first, then
/// most questions blocked, then the shape's text.
pub fn refusals(reg: &Store, only: Option<&str>, limit: usize) -> Result<Vec<Refusals>> {
    let mut by_dataset: BTreeMap<String, Vec<BaseItem>> = BTreeMap::new();
    for (_, item) in reg.all::<BaseItem>()? {
        let wanted = match only {
            Some(d) => d == item.origin.dataset,
            None => grammar_dataset(&item),
        };
        if wanted {
            by_dataset
                .entry(item.origin.dataset.clone())
                .or_default()
                .push(item);
        }
    }
    Ok(by_dataset
        .into_iter()
        .map(|(dataset, items)| refusals_of(dataset, &items, limit))
        .collect())
}

fn refusals_of(dataset: String, items: &[BaseItem], limit: usize) -> Refusals {
    // (is a question, sentence) → its shape and the reason, if refused.
    type Refused = Option<(String, String)>;
    let mut seen: HashMap<(bool, &str), Refused> = HashMap::new();
    let mut shapes: BTreeMap<String, RefusedShape> = BTreeMap::new();
    let mut report = Refusals {
        dataset,
        questions: items.len(),
        ..Default::default()
    };
    for item in items {
        let sentences = item
            .premises
            .iter()
            .map(|p| (false, p.as_str()))
            .chain([(true, item.query.as_str())]);
        let mut blocking = BTreeSet::new();
        for key in sentences {
            let refused = seen.entry(key).or_insert_with(|| {
                let (question, text) = key;
                let reason = match question {
                    true => english::parse_query(text).err(),
                    false => english::parse_statement(text).err(),
                }?
                .message;
                let shape = english::shape(text);
                let entry = shapes.entry(shape.clone()).or_insert_with(|| RefusedShape {
                    shape: shape.clone(),
                    sentences: 0,
                    questions: 0,
                    alone: 0,
                    example: text.to_string(),
                    reason: reason.clone(),
                });
                entry.sentences += 1;
                let shorter = (text.len(), text) < (entry.example.len(), entry.example.as_str());
                if shorter {
                    entry.example = text.to_string();
                    entry.reason = reason.clone();
                }
                Some((shape, reason))
            });
            if let Some((shape, _)) = refused {
                blocking.insert(shape.clone());
            }
        }
        if !blocking.is_empty() {
            report.blocked += 1;
        }
        for shape in &blocking {
            let entry = shapes
                .get_mut(shape)
                .expect("every refused shape is counted");
            entry.questions += 1;
            entry.alone += usize::from(blocking.len() == 1);
        }
    }
    report.sentences = seen.len();
    report.refused = seen.values().filter(|r| r.is_some()).count();
    report.shape_count = shapes.len();
    let mut shapes: Vec<RefusedShape> = shapes.into_values().collect();
    shapes.sort_by(|a, b| {
        (b.sentences, b.questions)
            .cmp(&(a.sentences, a.questions))
            .then_with(|| a.shape.cmp(&b.shape))
    });
    shapes.truncate(limit);
    report.shapes = shapes;
    report
}

pub fn print_refusals(reports: &[Refusals]) {
    for r in reports {
        println!(
            "{}: {} of {} distinct sentences refused, {} of {} questions blocked, {} shapes",
            r.dataset, r.refused, r.sentences, r.blocked, r.questions, r.shape_count
        );
        if r.shapes.is_empty() {
            continue;
        }
        println!("  sentences  questions  alone  shape");
        for s in &r.shapes {
            println!(
                "  {:>9}  {:>9}  {:>5}  {}",
                s.sentences, s.questions, s.alone, s.shape
            );
            println!("  {:>28}e.g. \"{}\" ({})", "", s.example, s.reason);
        }
        if r.shape_count > r.shapes.len() {
            println!(
                "  … {} more shapes (use --limit)",
                r.shape_count - r.shapes.len()
            );
        }
    }
}

fn folio_label(item: &BaseItem) -> Outcome {
    let Some((formal, conclusion)) = item
        .formal
        .as_ref()
        .and_then(|f| Some((f, f.conclusion.as_ref()?)))
    else {
        return Outcome::NoFormalForm;
    };
    let premises = formal
        .premises
        .iter()
        .map(|s| fol::parse_formula(s))
        .collect::<Result<Vec<_>, _>>();
    match (premises, fol::parse_formula(conclusion)) {
        (Ok(p), Ok(c)) => match folio::decide(&p, &c) {
            Decision::Proved(l) => Outcome::Label(l),
            Decision::Undecided(_) => Outcome::Undecided,
        },
        _ => Outcome::Unparseable,
    }
}

pub fn print(checks: &[DatasetCheck], list: usize) {
    for c in checks {
        let checked = c.items - c.no_formal_form;
        let rate = 100.0 * c.agree as f64 / checked.max(1) as f64;
        println!(
            "{}: {} items with a label, {} without a formal form; of the {checked} checked: {} agree ({rate:.1}%), \
             {} disagree, {} undecided, {} unparseable",
            c.dataset, c.items, c.no_formal_form, c.agree, c.disagree, c.undecided, c.unparseable
        );
        for (label, [agree, n]) in &c.per_label {
            println!("  gold {label:<9} {agree}/{n}");
        }
        for f in &c.coverage {
            println!(
                "  {}: sentences parsed {}/{} ({:.1}%), questions answered {}/{}, agree {}/{}",
                f.file,
                f.parsed,
                f.sentences,
                100.0 * f.parsed as f64 / f.sentences.max(1) as f64,
                f.answered,
                f.questions,
                f.agree,
                f.answered
            );
        }
        for d in c.disagreements.iter().take(list) {
            println!(
                "  disagree {} {} {}: dataset {}, engine {}: {}",
                d.item.short(),
                d.file,
                d.position,
                d.dataset_label,
                d.ours,
                d.query
            );
        }
        if c.disagreements.len() > list {
            println!(
                "  … {} more (use --list or --json)",
                c.disagreements.len() - list
            );
        }
    }
}
