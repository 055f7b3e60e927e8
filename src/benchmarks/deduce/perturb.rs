//! Perturbed copies of a template: new values for the question's numbers, every step and the
//! answer recomputed by executing the template. Memorised answers of the original no longer fit.
//!
//! - Numbers of equal value in the question move together (a solution's literal may stand for
//!   any of them), and only numbers some step uses are moved.
//! - A new value keeps the kind and magnitude class of the old: the same decimal places, the same
//!   trailing zeros (`80,000` stays a multiple of 10,000) and the same count of significant
//!   digits (a one-digit number gets 2..=9); a percentage of at most 100 stays at most 100. The
//!   number 1 is never moved (it usually means "one unit", not a quantity).
//! - A draw is kept only if every step's result keeps its sign (positive where it was, zero where
//!   it was), is whole where it was, and otherwise is a decimal of at most as many places as the
//!   original's (and at least 2); new values are pairwise distinct. Up to [`TRIES`] draws.

use super::rational::Rational;
use super::template::{Executed, ExprPiece, Source, Template};
use crate::rng::Rng;
use std::collections::BTreeSet;

pub const TRIES: usize = 1000;

/// A perturbed execution of `t`, or `None` when no draw met the constraints or nothing can move.
pub fn perturb(t: &Template, rng: &mut Rng) -> Option<Executed> {
    let original = t.execute(t.original()).ok()?;
    let used: BTreeSet<usize> = t
        .steps
        .iter()
        .flat_map(|s| &s.expr)
        .filter_map(|p| match p {
            ExprPiece::Lit(l, _) => match l.source {
                Source::Quantity(q) => Some(q),
                _ => None,
            },
            ExprPiece::Text(_) => None,
        })
        .collect();
    // The distinct values that move, each with the places it is written with and whether it is
    // a percentage.
    let mut classes: Vec<(Rational, u32, bool)> = Vec::new();
    for q in &used {
        let q = &t.quantities[*q];
        if q.perturbable && q.value != Rational::ONE && !classes.iter().any(|c| c.0 == q.value) {
            classes.push((q.value, q.format.places, q.percent));
        }
    }
    if classes.is_empty() {
        return None;
    }
    for _ in 0..TRIES {
        let new: Vec<Rational> = classes
            .iter()
            .map(|&(v, places, pct)| draw(v, places, pct, rng))
            .collect::<Option<_>>()?;
        let distinct: BTreeSet<_> = new.iter().collect();
        if distinct.len() != new.len() || new.iter().zip(&classes).all(|(n, c)| *n == c.0) {
            continue;
        }
        let values = t
            .quantities
            .iter()
            .map(|q| match classes.iter().position(|c| c.0 == q.value) {
                Some(i) if q.perturbable => new[i],
                _ => q.value,
            })
            .collect();
        let Ok(ex) = t.execute(values) else { continue };
        if ex
            .results
            .iter()
            .zip(&original.results)
            .all(|(n, o)| keeps_shape(*n, *o))
            && t.question(&ex).is_ok()
            && t.solution(&ex).is_ok()
        {
            return Some(ex);
        }
    }
    None
}

/// A new value for `v` (see the module); `None` when `v` is not a positive decimal.
fn draw(v: Rational, places: u32, percent: bool, rng: &mut Rng) -> Option<Rational> {
    let scale = 10i128.checked_pow(places)?;
    let scaled = v.checked_mul(Rational::int(scale))?;
    if !scaled.is_whole() || !scaled.is_positive() {
        return None;
    }
    let mut m = scaled.numer();
    let mut zeros = 0u32;
    while m % 10 == 0 {
        m /= 10;
        zeros += 1;
    }
    let digits = m.to_string().len() as u32;
    let (lo, hi) = if digits == 1 {
        (2, 9)
    } else {
        (10i128.pow(digits - 1), 10i128.pow(digits) - 1)
    };
    let hundred = Rational::int(100);
    for _ in 0..TRIES {
        let m = lo + rng.below(usize::try_from(hi - lo + 1).ok()?) as i128;
        let new = Rational::new(m.checked_mul(10i128.checked_pow(zeros)?)?, scale)?;
        if !(percent && v <= hundred && new > hundred) {
            return Some(new);
        }
    }
    None
}

fn keeps_shape(new: Rational, old: Rational) -> bool {
    if new.numer().signum() != old.numer().signum() {
        return false;
    }
    if old.is_whole() {
        return new.is_whole();
    }
    match (new.decimal_places(), old.decimal_places()) {
        (Some(n), Some(o)) => n <= o.max(2),
        _ => false,
    }
}
