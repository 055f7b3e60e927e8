//! The one decoder block every family shares: its architecture-neutral `Config`, the
//! transformer over it, and attention over a KV cache that forks for free.

pub mod attention;
pub mod config;
pub mod delta_net;
pub mod moe;
pub mod transformer;
