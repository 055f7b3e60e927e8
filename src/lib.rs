//! deltalogic: does a language model revise its beliefs correctly when the evidence changes?

pub mod cache;
pub mod check;
pub mod cli;
pub mod datasets;
pub mod episodes;
pub mod logic;
pub mod metrics;
pub mod model;
pub mod progress;
pub mod questions;
pub mod registry;
pub mod report;
pub mod results;
pub mod rng;
pub mod robustlr;
pub mod scoring;
