//! Model file formats: GGUF, Hugging Face directories, ggml's block types, and the export of a
//! GGUF model as a Hugging Face directory.

pub mod gguf;
pub mod hf;
pub mod hf_export;
pub mod quant;
