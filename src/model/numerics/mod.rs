//! The arithmetic of the local engine. One invariant holds across every file here: each output
//! is a sum in one fixed order, whatever the thread count, the vector unit (AVX-512, AVX2,
//! portable) or the rows multiplied beside it — so a score's bits depend only on its inputs.

pub mod kernels;
pub mod qmatmul;
pub(crate) mod repack;
