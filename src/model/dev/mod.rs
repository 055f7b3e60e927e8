//! Writers of model files for tests and `deltalogic dev`: GGUF files, tiny random-weight Hugging
//! Face checkpoints, and the random-weight files at real models' shapes that llama.cpp scores for
//! the goldens. Nothing here runs when a model is loaded.

pub mod family_files;
pub mod fixtures;
pub mod gguf_write;
