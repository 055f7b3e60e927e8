//! The ProofWriter/RuleTaker English grammar: sentences to facts and rules, and back.
