//! The integration tests: one binary, a module per area (as ripgrep lays out its tests), so the
//! crate is linked once rather than once per file.

mod beliefr;
mod cli;
mod clomo;
mod common;
mod compat;
mod crash_points;
mod datasets;
mod deduce;
mod deduce_gsm8k;
mod episodes;
mod folio_check;
mod generation;
mod generation_golden;
mod gguf_errors;
mod grammar;
mod hf_export;
mod integrity;
mod lm_eval;
mod model_errors;
mod normalisation;
mod numerics;
mod numerics_llamacpp;
mod readme;
mod registry;
mod report;
mod robustlr;
mod run;
mod scale;
mod scorer_exactness;
mod scoring;
mod shard;
mod slurm;
mod solver_agreement;
mod static_questions;
mod tokenizer_golden;
