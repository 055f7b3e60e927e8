//! Parser of FOLIO first-order annotations.
