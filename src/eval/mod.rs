//! The one evaluation runner: a benchmark's requests → cache lookups → the prefix tree → the
//! model → stored scores and generations → one result record. Every `(model, prompt prefix,
//! label)` score and every `(model, prompt, decoding)` generation is computed once, stored under
//! its key, and read back by every later run; a later turn's requests are made from the answers
//! the stored records give.
//!
//! By concern: the model contract (`language_model`) and what computes it (`engine`), request
//! bookkeeping (`pending`), the compute path (`compute`, with `tree` and `generate` for our engine
//! and `served` for a server) and its one save path (`save`), and the run API (`run`).

pub mod audit;
pub mod cache;
mod compute;
pub mod derive;
mod engine;
pub mod evaluated;
pub mod generate;
pub mod kinds;
mod language_model;
pub mod models;
pub mod normalise;
mod pending;
pub mod records;
mod run;
mod save;
pub mod served;
pub mod shard;
pub mod share;
pub mod tree;

pub use crate::store::{ResultRecord, ResultRow, Turn, TurnAnswer};
pub use compute::{Execution, LOCKSTEP};
pub use engine::{regenerate, rescore, Engine, SCORE_TOLERANCE};
pub use language_model::{Generation, LanguageModel, Prefill, Scoring};
pub use normalise::Normalisation;
pub use pending::answered;
pub use records::{
    GenerationRecord, ModelRecord, PromptRecord, ScoreRecord, ServedRecord, StopReason,
};
pub use run::{run, run_each, run_part, NormalisedResult, Outcome, Outcomes, Participants, Run};
pub use save::{Progress, Quiet, ScoreReport, BATCH};
