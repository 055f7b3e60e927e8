//! deltalogic: does a language model revise its beliefs correctly when the evidence changes?

pub mod logic;
pub mod datasets;
pub mod rng;
pub mod model;
