//! Seeded generator of fresh theories in the ProofWriter grammar (the embedded default data).
