//! Sound FOLIO label checker: Skolemise, ground, decide with a SAT solver.
