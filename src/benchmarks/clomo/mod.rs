//! CLoMo (Huang et al., ACL 2024): counterfactual logical modification. Given an argument a,
//! a premise p1 in relation r to it (necessary or sufficient assumption, strengthens, weakens)
//! and a premise p2 that is not, the model rewrites a into a′ so that p2 stands in r to a′.
//!
//! An item of a result has five turns: (0) the model under test generates a′ with the
//! dataset's prompt of the template's setting; (1–4) the judge says yes or no to r on
//! (p1, a), (p2, a′), (p2, a) and (p2, gold a′). [`ses`] turns the judgements into the
//! paper's SES, its reference value with the gold a′ and the judge's discrimination on gold
//! pairs. See `docs/clomo.md`.

pub mod build;
pub mod extract;
pub mod prompts;
pub mod ses;

use super::view::Counted;
use super::{
    members, parse_args, unknown_template, Answer, Answered, Benchmark, Built, Evaluation, Models,
    Panel, Prepared, Request, Role,
};
use crate::logic::Label;
use crate::store::{canonical, Declared, Id, Kind, Record, Store, StoredSet};
use anyhow::{bail, Context, Result};
use prompts::{JudgeMode, Setting};
use serde::Serialize;

pub const BENCHMARK: &str = "clomo";

/// The four logical relations, in the dataset's `qtype` order (0–3).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub enum Relation {
    NecessaryAssumption,
    SufficientAssumption,
    Strengthen,
    Weaken,
}

impl Relation {
    pub const ALL: [Relation; 4] = [
        Relation::NecessaryAssumption,
        Relation::SufficientAssumption,
        Relation::Strengthen,
        Relation::Weaken,
    ];

    /// The dataset's `qtype`.
    pub fn from_qtype(q: &str) -> Option<Relation> {
        Some(match q {
            "0" => Relation::NecessaryAssumption,
            "1" => Relation::SufficientAssumption,
            "2" => Relation::Strengthen,
            "3" => Relation::Weaken,
            _ => return None,
        })
    }

    /// The paper's abbreviation (SES_NA, SES_SA, SES_S, SES_W).
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::NecessaryAssumption => "NA",
            Relation::SufficientAssumption => "SA",
            Relation::Strengthen => "S",
            Relation::Weaken => "W",
        }
    }
}

/// One CLoMo question with the three renderings of its prompt.
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct ClomoItem {
    /// `train`, `dev` or `test`.
    pub split: String,
    /// The dataset's `id_string` (unique within a split).
    pub id_string: String,
    pub relation: Relation,
    /// The argument a (`input_info.P`).
    pub argument: String,
    /// p1 and p2 without their `Premise1:`/`Premise2:` labels, as `ses.py` passes them.
    pub premise1: String,
    pub premise2: String,
    /// The gold modified argument a′ (`output`).
    pub gold: String,
    /// The system turn (`instruction`; the same in the three settings).
    pub instruction: String,
    /// The user turn of each setting (`input` of `zero_*`, `few_*`, `cot_*`), in
    /// [`Setting::ALL`] order.
    pub inputs: [String; 3],
}

impl ClomoItem {
    pub fn input(&self, setting: Setting) -> &str {
        &self.inputs[setting as usize]
    }
}

impl Record for ClomoItem {
    const KIND: Kind = Kind {
        table: "clomo_items",
        context: "deltalogic 2026-11-23 clomo item v1",
        noun: "CLoMo item",
    };
    fn content(&self) -> Vec<u8> {
        canonical(self)
    }
}

/// A set's items ready for one setting and judge mode: each argument asked to be modified,
/// then the modification judged.
struct Modifications {
    ids: Vec<Id>,
    items: Vec<ClomoItem>,
    setting: Setting,
    mode: JudgeMode,
    chat: String,
    judge: Id,
}

/// Turns: a′, then the judge on (p1,a), (p2,a′), (p2,a), (p2,gold a′).
const TURNS: usize = 5;

impl Modifications {
    fn judge(&self, item: &ClomoItem, argument: &str, premise: &str) -> Request {
        let prompt = prompts::judge_prompt(item.relation, argument, premise, self.mode);
        match self.mode {
            JudgeMode::Label => Request::Score {
                by: Role::Judge,
                prompt,
                labels: vec![
                    (prompts::YES.into(), Label::True),
                    (prompts::NO.into(), Label::False),
                ],
            },
            JudgeMode::Cot => Request::Generate {
                by: Role::Judge,
                prompt,
                decoding: super::Decoding {
                    max_tokens: prompts::JUDGE_COT_TOKENS,
                    stop: Vec::new(),
                },
            },
        }
    }
}

impl Prepared for Modifications {
    fn template(&self) -> super::prompts::TemplateRecord {
        let def =
            prompts::Definition::new(self.setting, self.mode, self.judge.hex(), self.chat.clone());
        super::prompts::TemplateRecord {
            name: template_name(self.setting, self.mode),
            definition: String::from_utf8(canonical(&def)).expect("JSON is UTF-8"),
        }
    }

    fn items(&self) -> &[Id] {
        &self.ids
    }

    fn turns(&self) -> usize {
        TURNS
    }

    fn request(&self, item: usize, turn: usize, earlier: &[Answer]) -> Result<Request> {
        let it = &self.items[item];
        Ok(match (turn, earlier) {
            (0, []) => Request::Generate {
                by: Role::Subject,
                prompt: super::prompts::render_chat(
                    &self.chat,
                    &prompts::subject_turns(it, self.setting),
                )?,
                decoding: prompts::subject_decoding(self.setting),
            },
            (1, [_]) => self.judge(it, &it.argument, &it.premise1),
            (2, [generated, ..]) => {
                let modified = extract::modified_argument(generated.text()?);
                self.judge(it, &modified, &it.premise2)
            }
            (3, [..]) => self.judge(it, &it.argument, &it.premise2),
            (4, [..]) => self.judge(it, &it.gold, &it.premise2),
            _ => bail!(
                "CLoMo item {}: no turn {turn} after {} answers",
                it.id_string,
                earlier.len()
            ),
        })
    }

    fn content_free(
        &self,
        item: usize,
        turn: usize,
        earlier: &[Answer],
        filler: &str,
    ) -> Result<Option<Request>> {
        // The judge's prompt with the argument and the premise blank; the relation asked
        // about is the template's frame and stays.
        Ok(match self.request(item, turn, earlier)? {
            Request::Score { .. } => Some(self.judge(&self.items[item], filler, filler)),
            Request::Generate { .. } => None,
        })
    }

    /// The subject generates and the judge gives verdicts, which SES combines: no turn has a
    /// gold label of its own.
    fn target(&self, _item: usize, _turn: usize) -> Option<crate::logic::Label> {
        None
    }
}

fn template_name(setting: Setting, mode: JudgeMode) -> String {
    match mode {
        JudgeMode::Label => setting.as_str().to_string(),
        JudgeMode::Cot => format!("{}-judge-cot", setting.as_str()),
    }
}

/// A judge's turn read as a judgement: a label in `label` mode, generated text in `cot` mode.
fn judgement(a: &Answer) -> Result<ses::Judgement> {
    Ok(match a {
        Answer::Label(Label::True) => ses::Judgement::Yes,
        Answer::Label(Label::False) => ses::Judgement::No,
        Answer::Label(Label::Uncertain) => bail!("a CLoMo judge turn answered Uncertain"),
        Answer::Text(t) => extract::judgement(t),
    })
}

/// The rows of a result: one per item, from its five answers.
pub fn rows(store: &Store, answered: &[Answered]) -> Result<Vec<ses::Row>> {
    answered
        .iter()
        .map(|a| {
            let Some(item) = store.get::<ClomoItem>(&a.item)? else {
                bail!(
                    "{}: the result names a missing CLoMo item {}",
                    store.path().display(),
                    a.item.short()
                );
            };
            let [generated, p1_a, p2_mod, p2_a, p2_gold] = a.answers.as_slice() else {
                bail!(
                    "CLoMo item {}: {} answers, expected {TURNS}",
                    item.id_string,
                    a.answers.len()
                );
            };
            let read = || -> Result<ses::Row> {
                let modified = extract::modified_argument(generated.text()?);
                Ok(ses::Row {
                    relation: item.relation,
                    p1_a: judgement(p1_a)?,
                    p2_modified: judgement(p2_mod)?,
                    p2_a: judgement(p2_a)?,
                    p2_gold: judgement(p2_gold)?,
                    copied: modified.trim() == item.argument.trim(),
                    modified,
                })
            };
            read().with_context(|| format!("CLoMo item {}", item.id_string))
        })
        .collect()
}

pub struct Clomo;

const NOTE: &str = "SES (Huang et al. 2024, Eq. 1): c(r|p1,a)·c(r|p2,a′) − c(r|p2,a)·c(r|p2,a′), \
each c a yes/no of the judge, in [−1, 1]. SES (gold a′): the same with the dataset's a′, the \
ceiling the judge allows. Judge discr.: balanced accuracy of the judge on the gold pairs (yes on \
(p1,a) and (p2,gold a′), no on (p2,a)); 0.5 is chance. Empty/Copied: share of modified arguments \
that are empty or equal to the original (their mean length in words: JSON `words`).";

const NOTE_BLIND: &str = "SES (Huang et al. 2024, Eq. 1): c(r|p1,a)·c(r|p2,a′) − \
c(r|p2,a)·c(r|p2,a′), each c a yes/no of the judge, in [−1, 1]. WARNING: the judge does not \
separate the gold pairs better than chance (the interval of Judge discr., its balanced accuracy \
on yes for (p1,a) and (p2,gold a′) and no for (p2,a), reaches 0.5): its SES is noise, not a \
measure of the modifications. SES (gold a′): the same with the dataset's a′. Empty/Copied: \
share of modified arguments that are empty or equal to the original (their mean length in words: JSON `words`).";

impl Benchmark for Clomo {
    fn name(&self) -> &'static str {
        BENCHMARK
    }

    fn title(&self) -> &'static str {
        "CLoMo"
    }

    fn templates(&self) -> &'static [&'static str] {
        &prompts::TEMPLATES
    }

    fn options(&self) -> clap::Command {
        <build::BuildArgs as clap::CommandFactory>::command()
    }

    fn build_parsed(&self, store: &Store, options: &clap::ArgMatches) -> Result<Built> {
        let a: build::BuildArgs = parse_args(options)?;
        let out = build::build(store, &a)?;
        let text = out.text();
        Built::new(&out, text)
    }

    fn prepare(
        &self,
        store: &Store,
        set: &StoredSet,
        template: &str,
        models: &Models,
    ) -> Result<Box<dyn Prepared>> {
        let Some((setting, mode)) = prompts::template(template) else {
            return Err(unknown_template(self.title(), self.templates(), template));
        };
        let (ids, items) = members::<ClomoItem>(store, set)?.into_iter().unzip();
        Ok(Box::new(Modifications {
            ids,
            items,
            setting,
            mode,
            chat: models
                .subject
                .chat_template()
                .context("CLoMo prompts the model under test through its chat template")?,
            judge: models.judge,
        }))
    }

    fn export(&self, store: &Store, set: &StoredSet) -> Result<Vec<serde_json::Value>> {
        super::exported::<ClomoItem>(store, set)
    }

    fn views(&self, store: &Store, set: &StoredSet) -> Result<Vec<super::view::ItemView>> {
        Ok(super::view::fields(self.export(store, set)?))
    }

    fn items(&self) -> Declared {
        Declared::of::<ClomoItem>()
    }

    fn judged(&self) -> bool {
        true
    }

    fn evaluator(&self) -> u32 {
        1
    }

    fn evaluate(&self, store: &Store, answered: &[Answered], seed: u64) -> Result<Evaluation> {
        let report = ses::Report::of(&rows(store, answered)?, seed);
        Ok(Evaluation {
            n: answered.len(),
            columns: &ses::COLUMNS,
            groups: report.groups(),
            note: if report.overall.judge_blind() {
                NOTE_BLIND
            } else {
                NOTE
            },
            metrics: serde_json::to_value(&report)?,
            panel: Panel::HEADLINE,
            findings: &[],
        })
    }

    fn counted(&self, store: &Store, answered: &[Answered]) -> Result<Option<Counted>> {
        let rows = rows(store, answered)?;
        Ok(Some(Counted::every(ses::Report::counted(&rows))))
    }
}
