//! deltalogic: does a language model revise its beliefs correctly when the evidence changes?
//!
//! Data flows one way: files (`datasets`) → the store (`store`) → benchmarks (`benchmarks`) →
//! the evaluation runner (`eval`, over `model`) → metrics → reports (`report`) → the command line
//! (`cli`). `logic`, `metrics`, `rng` and `bounds` are leaves every layer may use. See
//! `docs/architecture.md`.

pub mod benchmarks;
pub mod bounds;
pub mod cli;
pub mod datasets;
pub mod eval;
pub mod logic;
pub mod metrics;
pub mod model;
pub mod report;
pub mod rng;
pub mod served;
pub mod store;
