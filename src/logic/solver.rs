//! Open-world (classical negation) and closed-world (stratified negation as failure) solvers.
