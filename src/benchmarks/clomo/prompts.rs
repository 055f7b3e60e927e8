//! CLoMo's prompts: the model under test gets the dataset's own rendering (the `instruction` as
//! the system turn, the setting's `input` as the user turn, as the CLoMo inference script sends
//! them), through the model's chat template; the judge gets the SES prompts of the paper's
//! Table 4 (`SES/eval_prompts.py` and `SES/ses.py` of github.com/Eleanor-H/CLOMO), with its
//! relation definitions verbatim.
//!
//! The judge's prompt is plain text (system prompt, then the user turn), not a chat rendering:
//! the judge may be another model than the one under test, and a benchmark sees only the
//! subject's chat template. Two judge modes:
//! - `label`: the prompt ends with an answer cue and the judge's log-likelihoods of " yes" and
//!   " no" decide (constrained, deterministic, cached like every score);
//! - `cot`: the judge generates (the system prompt asks it to think step by step), and the
//!   answer is read from its text ([`super::extract::judgement`]).

use super::{ClomoItem, Relation};
use crate::benchmarks::Decoding;
use serde::Serialize;

/// The three prompt settings of the CLoMo files (`zero_*.json`, `few_*.json`, `cot_*.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Setting {
    Zero,
    Few,
    Cot,
}

impl Setting {
    pub const ALL: [Setting; 3] = [Setting::Zero, Setting::Few, Setting::Cot];

    /// The file-name prefix of the setting.
    pub fn as_str(self) -> &'static str {
        match self {
            Setting::Zero => "zero",
            Setting::Few => "few",
            Setting::Cot => "cot",
        }
    }
}

/// How the judge answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeMode {
    Label,
    Cot,
}

/// Template names: the setting, then `-judge-cot` for a judge that reasons before answering.
pub const TEMPLATES: [&str; 6] = [
    "zero",
    "few",
    "cot",
    "zero-judge-cot",
    "few-judge-cot",
    "cot-judge-cot",
];

/// The setting and judge mode a template name stands for.
pub fn template(name: &str) -> Option<(Setting, JudgeMode)> {
    let (setting, mode) = match name.strip_suffix("-judge-cot") {
        Some(s) => (s, JudgeMode::Cot),
        None => (name, JudgeMode::Label),
    };
    let setting = Setting::ALL.into_iter().find(|s| s.as_str() == setting)?;
    Some((setting, mode))
}

/// The relation phrase of the SES question (`qtype2prompt`).
fn relation_phrase(r: Relation) -> &'static str {
    match r {
        Relation::NecessaryAssumption => "provides a necessary assumption to",
        Relation::SufficientAssumption => "provides a sufficient assumption to",
        Relation::Strengthen => "strengthens",
        Relation::Weaken => "weakens",
    }
}

/// The relation's definition (`qtype2definition`; the released code drops the final period
/// and the template supplies it).
fn relation_definition(r: Relation) -> &'static str {
    match r {
        Relation::NecessaryAssumption => "A premise provides a necessary assumption to the argument is that the premise must be true or is required in order for the argument to work",
        Relation::SufficientAssumption => "A premise provides a sufficient assumption to the argument is that if the premise is added to the argument, it would make the argument logically valid",
        Relation::Strengthen => "A premise strengthens the argument is that the premise contains information that would strengthen an argument",
        Relation::Weaken => "A premise weakens the argument is that the premise contains information that would weaken an argument",
    }
}

/// The SES system prompt for a relation (`template_ses`, trailing space and newline included).
pub fn judge_system(r: Relation) -> String {
    format!(
        "You are an expert in logic. {}. In the following, you are given an Argument and a \
         Premise. Is the Premise {} the Argument? Please think step by step, and then answer \
         \"yes\" or \"no\". \n",
        relation_definition(r),
        relation_phrase(r)
    )
}

/// The cue after which label mode scores " yes" and " no".
pub const ANSWER_CUE: &str = "Answer:";
pub const YES: &str = " yes";
pub const NO: &str = " no";

/// Reasoning tokens a `cot` judge may spend before its answer.
pub const JUDGE_COT_TOKENS: u32 = 256;

/// The judge's prompt on one (argument, premise) pair: the system prompt, then the user turn as
/// `ses.py` writes it, then (label mode) the answer cue.
pub fn judge_prompt(r: Relation, argument: &str, premise: &str, mode: JudgeMode) -> String {
    let user = format!("\nArgument: {argument}\nPremise: {premise}\n");
    match mode {
        JudgeMode::Label => format!("{}{user}{ANSWER_CUE}", judge_system(r)),
        JudgeMode::Cot => format!("{}{user}", judge_system(r)),
    }
}

/// The turns the model under test gets: the dataset's instruction and the setting's input.
pub fn subject_turns(item: &ClomoItem, setting: Setting) -> [(&'static str, String); 2] {
    [
        ("system", item.instruction.clone()),
        ("user", item.input(setting).to_string()),
    ]
}

/// How long the model under test may write: the longest gold argument of the test split is
/// 1,072 characters (about 250 tokens); CoT gets room for reasoning before it.
pub fn subject_decoding(setting: Setting) -> Decoding {
    let max_tokens = match setting {
        Setting::Zero | Setting::Few => 384,
        Setting::Cot => 768,
    };
    Decoding {
        max_tokens,
        stop: Vec::new(),
    }
}

/// What is stored with each result: everything that renders the requests.
#[derive(Serialize)]
pub struct Definition {
    pub setting: Setting,
    pub judge_mode: JudgeMode,
    /// The judge's fingerprint (hex).
    pub judge: String,
    pub subject_chat_template: String,
    pub subject_decoding: Decoding,
    pub judge_systems: [String; 4],
    pub answer_cue: &'static str,
    pub labels: [&'static str; 2],
    pub judge_cot_tokens: u32,
}

impl Definition {
    pub fn new(setting: Setting, judge_mode: JudgeMode, judge: String, chat: String) -> Self {
        Definition {
            setting,
            judge_mode,
            judge,
            subject_chat_template: chat,
            subject_decoding: subject_decoding(setting),
            judge_systems: Relation::ALL.map(judge_system),
            answer_cue: ANSWER_CUE,
            labels: [YES, NO],
            judge_cot_tokens: JUDGE_COT_TOKENS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_names_parse() {
        for name in TEMPLATES {
            let (s, m) = template(name).unwrap();
            let back = match m {
                JudgeMode::Label => s.as_str().to_string(),
                JudgeMode::Cot => format!("{}-judge-cot", s.as_str()),
            };
            assert_eq!(back, name);
        }
        assert_eq!(template("plain"), None);
        assert_eq!(template("zero-judge"), None);
    }

    #[test]
    fn judge_prompt_is_table_4() {
        let p = judge_prompt(Relation::Weaken, "A.", "B.", JudgeMode::Label);
        assert_eq!(
            p,
            "You are an expert in logic. A premise weakens the argument is that the premise \
             contains information that would weaken an argument. In the following, you are given \
             an Argument and a Premise. Is the Premise weakens the Argument? Please think step by \
             step, and then answer \"yes\" or \"no\". \n\nArgument: A.\nPremise: B.\nAnswer:"
        );
    }
}
