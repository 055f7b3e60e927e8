//! Sound FOLIO label checker: Skolemise, ground, decide with a SAT solver.
//!
//! Two independent procedures, each sound on its own:
//! * **Refutation** (proves `P ⊨ q` by showing `P ∧ ¬q` unsatisfiable): negation normal form,
//!   Skolemisation, then ground instances of the universal formulas over a finite part of the
//!   Herbrand universe (constants, Skolem constants, function terms up to [`HERBRAND_DEPTH`]).
//!   A propositionally unsatisfiable set of ground instances is a proof (Herbrand's theorem);
//!   the bound only limits what can be proved.
//! * **Model search** (shows `P ∧ q` satisfiable): quantifiers expanded over a finite domain of the
//!   problem's constants (each its own element) plus [`FRESH_ELEMENTS`] unnamed ones. A SAT
//!   assignment is then a genuine finite structure.
//!
//! Equality: in model search `=` is identity on the domain (constants are distinct elements,
//! and every domain size up to the bound is tried, so models identifying constants are missed,
//! never invented). In refutation `t = t` is true and `s = t` is an uninterpreted symmetric
//! atom: every real structure satisfies whatever that encoding assumes, so unsatisfiability
//! still proves entailment (substitutivity is not used, which only costs completeness).
//! Consequences: premises that force two constants to be equal have no model in the search, so
//! they end Undecided; input formulas with function symbols get no model search, so Undecided.

use crate::logic::fol::{Formula, Term};
use crate::logic::Label;
use batsat::{lbool, Callbacks, Lit, Solver, SolverInterface, SolverOpts};
use std::collections::{BTreeSet, HashMap};

/// Unnamed domain elements added to the named constants in model search.
pub const FRESH_ELEMENTS: usize = 2;
/// Largest model-search domain (constants plus fresh elements).
pub const MAX_DOMAIN: usize = 24;
/// Deepest nesting of function symbols in the ground terms used for refutation.
pub const HERBRAND_DEPTH: usize = 2;
/// Most ground terms used for refutation; deeper terms beyond this are left out (still sound).
pub const MAX_HERBRAND_TERMS: usize = 48;
/// Most ground formula nodes built for one grounding before giving up.
pub const MAX_GROUND_NODES: usize = 400_000;
/// Most SAT conflicts spent on one question before answering "don't know".
pub const MAX_CONFLICTS: u64 = 20_000;

/// The label checker's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// `True`: `P ⊨ q`; `False`: `P ⊨ ¬q`; `Uncertain`: both `P ∧ q` and `P ∧ ¬q` have a model.
    /// `P` is shown satisfiable in every case.
    Proved(Label),
    /// No sound verdict within the bounds, or inconsistent premises; the text says which.
    Undecided(String),
}

/// Decides the FOLIO label of `conclusion` under `premises`; see the module documentation.
pub fn decide(premises: &[Formula], conclusion: &Formula) -> Decision {
    let extras = [conclusion.clone(), negate(conclusion)];
    let models = match find_models(premises, &extras) {
        Ok(found) => found,
        Err(why) => return undecided(&format!("no model search: {why}")),
    };
    let refuted = |which: Option<usize>| refute(premises, &extras, which);
    match models {
        [true, true] => Decision::Proved(Label::Uncertain),
        [true, false] => match refuted(Some(1)) {
            Ok(true) => Decision::Proved(Label::True),
            Ok(false) => undecided("no proof of the conclusion and no countermodel"),
            Err(why) => undecided(&why),
        },
        [false, true] => match refuted(Some(0)) {
            Ok(true) => Decision::Proved(Label::False),
            Ok(false) => undecided("no proof of the negated conclusion and no model of it"),
            Err(why) => undecided(&why),
        },
        [false, false] => match refuted(None) {
            Ok(true) => undecided("premises inconsistent"),
            Ok(false) => undecided("no finite model of the premises within bounds"),
            Err(why) => undecided(&why),
        },
    }
}

/// `Some(true)` when `premises ⊨ goal` is proved (vacuously so if the premises are
/// inconsistent), `Some(false)` when a finite countermodel exists, `None` when neither is found.
pub fn entails(premises: &[Formula], goal: &Formula) -> Option<bool> {
    let extras = [negate(goal)];
    if refute(premises, &extras, Some(0)) == Ok(true) {
        return Some(true);
    }
    let [countermodel] = find_models(premises, &extras).ok()?;
    countermodel.then_some(false)
}

/// `Some(true)` when a finite model is found, `Some(false)` when refuted, `None` otherwise.
pub fn consistent(formulas: &[Formula]) -> Option<bool> {
    if let Ok([true]) = find_models(formulas, &[Formula::And(Vec::new())]) {
        return Some(true);
    }
    refute(formulas, &[], None).ok()?.then_some(false)
}

fn negate(f: &Formula) -> Formula {
    Formula::Not(Box::new(f.clone()))
}

fn undecided(why: &str) -> Decision {
    Decision::Undecided(why.to_string())
}

// ---------------------------------------------------------------------------------------------
// Negation normal form with bound variables renamed apart.

/// A formula in negation normal form; `=` is the predicate `"="` (not an identifier character).
#[derive(Clone, Debug)]
enum Nnf {
    Lit(bool, String, Vec<Term>),
    And(Vec<Nnf>),
    Or(Vec<Nnf>),
    Forall(String, Box<Nnf>),
    Exists(String, Box<Nnf>),
}

const EQUALS: &str = "=";

/// Renames every bound variable to a unique name so later substitutions cannot capture.
#[derive(Default)]
struct Renamer {
    next: usize,
    scope: Vec<(String, String)>,
}

impl Renamer {
    fn term(&self, t: &Term) -> Term {
        match t {
            Term::Var(v) => {
                let renamed = self.scope.iter().rev().find(|(from, _)| from == v);
                Term::Var(renamed.map_or_else(|| v.clone(), |(_, to)| to.clone()))
            }
            Term::Const(_) => t.clone(),
            Term::Fun(f, args) => Term::Fun(f.clone(), args.iter().map(|a| self.term(a)).collect()),
        }
    }

    fn nnf(&mut self, f: &Formula, positive: bool) -> Nnf {
        let both = |r: &mut Self, parts: &[&Formula], signs: &[bool]| -> Vec<Nnf> {
            parts.iter().zip(signs).map(|(p, s)| r.nnf(p, *s)).collect()
        };
        let join = |positive_and: bool, parts: Vec<Nnf>| {
            if positive_and {
                Nnf::And(parts)
            } else {
                Nnf::Or(parts)
            }
        };
        match f {
            Formula::Atom { pred, args } => Nnf::Lit(
                positive,
                pred.clone(),
                args.iter().map(|a| self.term(a)).collect(),
            ),
            Formula::Eq(l, r) => {
                Nnf::Lit(positive, EQUALS.into(), vec![self.term(l), self.term(r)])
            }
            Formula::Not(inner) => self.nnf(inner, !positive),
            Formula::And(parts) => join(
                positive,
                parts.iter().map(|p| self.nnf(p, positive)).collect(),
            ),
            Formula::Or(parts) => join(
                !positive,
                parts.iter().map(|p| self.nnf(p, positive)).collect(),
            ),
            Formula::Implies(a, b) => join(!positive, both(self, &[a, b], &[!positive, positive])),
            Formula::Iff(a, b) | Formula::Xor(a, b) => {
                // a ↔ b ≡ (a ∧ b) ∨ (¬a ∧ ¬b) and a ⊕ b ≡ (a ∧ ¬b) ∨ (¬a ∧ b); ¬(a ↔ b) ≡ a ⊕ b.
                let same = positive == matches!(f, Formula::Iff(..));
                let first = join(true, both(self, &[a, b], &[true, same]));
                let second = join(true, both(self, &[a, b], &[false, !same]));
                join(false, vec![first, second])
            }
            Formula::Forall(v, body) | Formula::Exists(v, body) => {
                let universal = matches!(f, Formula::Forall(..)) == positive;
                let fresh = format!("{v}#{}", self.next);
                self.next += 1;
                self.scope.push((v.clone(), fresh.clone()));
                let body = Box::new(self.nnf(body, positive));
                self.scope.pop();
                if universal {
                    Nnf::Forall(fresh, body)
                } else {
                    Nnf::Exists(fresh, body)
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Skolemisation.

fn substitute_term(t: &Term, var: &str, by: &Term) -> Term {
    match t {
        Term::Var(v) if v == var => by.clone(),
        Term::Var(_) | Term::Const(_) => t.clone(),
        Term::Fun(f, args) => Term::Fun(
            f.clone(),
            args.iter().map(|a| substitute_term(a, var, by)).collect(),
        ),
    }
}

fn substitute(f: &Nnf, var: &str, by: &Term) -> Nnf {
    let all = |parts: &[Nnf]| parts.iter().map(|p| substitute(p, var, by)).collect();
    match f {
        Nnf::Lit(s, p, args) => Nnf::Lit(
            *s,
            p.clone(),
            args.iter().map(|a| substitute_term(a, var, by)).collect(),
        ),
        Nnf::And(parts) => Nnf::And(all(parts)),
        Nnf::Or(parts) => Nnf::Or(all(parts)),
        Nnf::Forall(v, b) => Nnf::Forall(v.clone(), Box::new(substitute(b, var, by))),
        Nnf::Exists(v, b) => Nnf::Exists(v.clone(), Box::new(substitute(b, var, by))),
    }
}

fn term_vars(t: &Term, out: &mut BTreeSet<String>) {
    match t {
        Term::Var(v) => {
            out.insert(v.clone());
        }
        Term::Const(_) => {}
        Term::Fun(_, args) => args.iter().for_each(|a| term_vars(a, out)),
    }
}

fn vars(f: &Nnf, out: &mut BTreeSet<String>) {
    match f {
        Nnf::Lit(_, _, args) => args.iter().for_each(|a| term_vars(a, out)),
        Nnf::And(parts) | Nnf::Or(parts) => parts.iter().for_each(|p| vars(p, out)),
        Nnf::Forall(_, b) | Nnf::Exists(_, b) => vars(b, out),
    }
}

/// Replaces each `∃y φ` by `φ[y := sk(x̄)]`, `x̄` the enclosing universal variables used in `φ`.
struct Skolemiser {
    next: usize,
    universals: Vec<String>,
}

impl Skolemiser {
    fn run(&mut self, f: &Nnf) -> Nnf {
        match f {
            Nnf::Lit(..) => f.clone(),
            Nnf::And(parts) => Nnf::And(parts.iter().map(|p| self.run(p)).collect()),
            Nnf::Or(parts) => Nnf::Or(parts.iter().map(|p| self.run(p)).collect()),
            Nnf::Forall(v, body) => {
                self.universals.push(v.clone());
                let body = self.run(body);
                self.universals.pop();
                Nnf::Forall(v.clone(), Box::new(body))
            }
            Nnf::Exists(v, body) => {
                let mut used = BTreeSet::new();
                vars(body, &mut used);
                let args: Vec<Term> = (self.universals.iter())
                    .filter(|u| used.contains(*u))
                    .map(|u| Term::Var(u.clone()))
                    .collect();
                // '#' cannot occur in parsed names, so Skolem symbols are fresh.
                let name = format!("#sk{}", self.next);
                self.next += 1;
                let witness = if args.is_empty() {
                    Term::Const(name)
                } else {
                    Term::Fun(name, args)
                };
                self.run(&substitute(body, v, &witness))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ground formulas and their SAT encoding.

/// A ground formula over SAT literals, simplified so `Const` only occurs at the top.
enum Ground {
    Const(bool),
    Lit(Lit),
    And(Vec<Ground>),
    Or(Vec<Ground>),
}

/// Combines ground parts under `∧` (`conjunction`) or `∨`, folding constants.
fn combine(conjunction: bool, parts: Vec<Ground>) -> Ground {
    let mut kept = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Ground::Const(b) if b == conjunction => {}
            Ground::Const(_) => return Ground::Const(!conjunction),
            other => kept.push(other),
        }
    }
    match kept.len() {
        0 => Ground::Const(conjunction),
        1 => kept.remove(0),
        _ if conjunction => Ground::And(kept),
        _ => Ground::Or(kept),
    }
}

/// Stops the solver after [`MAX_CONFLICTS`] learnt clauses per question.
#[derive(Default)]
struct ConflictBudget {
    learnt: u64,
}

impl Callbacks for ConflictBudget {
    fn on_new_clause(&mut self, _c: &[Lit], _src: batsat::ClauseKind) {
        self.learnt += 1;
    }

    fn stop(&self) -> bool {
        self.learnt >= MAX_CONFLICTS
    }
}

enum AtomValue {
    Fixed(bool),
    Lit(Lit),
}

enum Answer {
    Sat,
    Unsat,
    Unknown,
}

/// How `s = t` between two distinct ground terms is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Equality {
    /// Terms are domain elements: distinct names are distinct elements.
    Identity,
    /// Terms are Herbrand terms: an uninterpreted symmetric atom.
    Uninterpreted,
}

/// Grounds formulas over a fixed set of ground terms and encodes them for the SAT solver.
struct Grounder<'a> {
    solver: Solver<ConflictBudget>,
    atoms: HashMap<(String, Vec<Term>), Lit>,
    universe: &'a [Term],
    equality: Equality,
    nodes: usize,
}

impl<'a> Grounder<'a> {
    fn new(universe: &'a [Term], equality: Equality) -> Self {
        Grounder {
            solver: Solver::new(SolverOpts::default(), ConflictBudget::default()),
            atoms: HashMap::new(),
            universe,
            equality,
            nodes: 0,
        }
    }

    fn count_node(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_GROUND_NODES {
            return Err(format!("grounding exceeds {MAX_GROUND_NODES} nodes"));
        }
        Ok(())
    }

    fn ground(&mut self, f: &Nnf, env: &mut Vec<(String, Term)>) -> Result<Ground, String> {
        self.count_node()?;
        match f {
            Nnf::Lit(positive, pred, args) => {
                let args = args
                    .iter()
                    .map(|a| instantiate(a, env))
                    .collect::<Result<_, _>>()?;
                Ok(match self.atom(pred, args) {
                    AtomValue::Fixed(b) => Ground::Const(b == *positive),
                    AtomValue::Lit(l) if *positive => Ground::Lit(l),
                    AtomValue::Lit(l) => Ground::Lit(!l),
                })
            }
            Nnf::And(parts) | Nnf::Or(parts) => {
                let mut ground = Vec::with_capacity(parts.len());
                for part in parts {
                    ground.push(self.ground(part, env)?);
                }
                Ok(combine(matches!(f, Nnf::And(_)), ground))
            }
            Nnf::Forall(v, body) | Nnf::Exists(v, body) => {
                let mut ground = Vec::with_capacity(self.universe.len());
                for t in self.universe {
                    env.push((v.clone(), t.clone()));
                    let instance = self.ground(body, env);
                    env.pop();
                    ground.push(instance?);
                }
                Ok(combine(matches!(f, Nnf::Forall(..)), ground))
            }
        }
    }

    /// The literal of a ground atom, or its truth value when equality decides it.
    fn atom(&mut self, pred: &str, mut args: Vec<Term>) -> AtomValue {
        if pred == EQUALS && args.len() == 2 {
            if args[0] == args[1] || self.equality == Equality::Identity {
                return AtomValue::Fixed(args[0] == args[1]);
            }
            args.sort();
        }
        let solver = &mut self.solver;
        let lit = *self
            .atoms
            .entry((pred.to_string(), args))
            .or_insert_with(|| Lit::new(solver.new_var_default(), true));
        AtomValue::Lit(lit)
    }

    /// A literal that implies `g` (one-sided Tseitin encoding, enough for satisfiability).
    fn literal_for(&mut self, g: &Ground) -> Lit {
        match g {
            Ground::Lit(l) => *l,
            Ground::Const(b) => {
                let l = Lit::new(self.solver.new_var_default(), true);
                if !b {
                    self.solver.add_clause_reuse(&mut vec![!l]);
                }
                l
            }
            Ground::And(parts) => {
                let l = Lit::new(self.solver.new_var_default(), true);
                for part in parts {
                    let p = self.literal_for(part);
                    self.solver.add_clause_reuse(&mut vec![!l, p]);
                }
                l
            }
            Ground::Or(parts) => {
                let l = Lit::new(self.solver.new_var_default(), true);
                let mut clause = vec![!l];
                clause.extend(
                    parts
                        .iter()
                        .map(|p| self.literal_for(p))
                        .collect::<Vec<_>>(),
                );
                self.solver.add_clause_reuse(&mut clause);
                l
            }
        }
    }

    fn assert(&mut self, g: &Ground) {
        match g {
            Ground::And(parts) => parts.iter().for_each(|p| self.assert(p)),
            Ground::Or(parts) => {
                let mut clause: Vec<Lit> = parts.iter().map(|p| self.literal_for(p)).collect();
                self.solver.add_clause_reuse(&mut clause);
            }
            other => {
                let l = self.literal_for(other);
                self.solver.add_clause_reuse(&mut vec![l]);
            }
        }
    }

    /// Grounds and asserts `always`; grounds each of `optional` behind a selector literal.
    fn load(&mut self, always: &[Nnf], optional: &[Nnf]) -> Result<Vec<Lit>, String> {
        for f in always {
            let g = self.ground(f, &mut Vec::new())?;
            self.assert(&g);
        }
        let mut selectors = Vec::with_capacity(optional.len());
        for f in optional {
            let g = self.ground(f, &mut Vec::new())?;
            selectors.push(self.literal_for(&g));
        }
        Ok(selectors)
    }

    fn solve(&mut self, assumptions: &[Lit]) -> Answer {
        self.solver.cb_mut().learnt = 0;
        let result = self.solver.solve_limited(assumptions);
        if result == lbool::TRUE {
            Answer::Sat
        } else if result == lbool::FALSE {
            Answer::Unsat
        } else {
            Answer::Unknown
        }
    }
}

fn instantiate(t: &Term, env: &[(String, Term)]) -> Result<Term, String> {
    match t {
        Term::Var(v) => match env.iter().rev().find(|(name, _)| name == v) {
            Some((_, value)) => Ok(value.clone()),
            None => Err(format!("free variable {v}")),
        },
        Term::Const(_) => Ok(t.clone()),
        Term::Fun(f, args) => {
            let args = args
                .iter()
                .map(|a| instantiate(a, env))
                .collect::<Result<_, _>>()?;
            Ok(Term::Fun(f.clone(), args))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Symbols of a problem.

#[derive(Default)]
struct Symbols {
    constants: BTreeSet<String>,
    functions: BTreeSet<(String, usize)>,
    equality: bool,
}

impl Symbols {
    fn of(formulas: &[Nnf]) -> Self {
        let mut symbols = Symbols::default();
        formulas.iter().for_each(|f| symbols.add(f));
        symbols
    }

    fn add(&mut self, f: &Nnf) {
        match f {
            Nnf::Lit(_, pred, args) => {
                self.equality |= pred == EQUALS;
                args.iter().for_each(|a| self.add_term(a));
            }
            Nnf::And(parts) | Nnf::Or(parts) => parts.iter().for_each(|p| self.add(p)),
            Nnf::Forall(_, b) | Nnf::Exists(_, b) => self.add(b),
        }
    }

    fn add_term(&mut self, t: &Term) {
        match t {
            Term::Var(_) => {}
            Term::Const(c) => {
                self.constants.insert(c.clone());
            }
            Term::Fun(f, args) => {
                self.functions.insert((f.clone(), args.len()));
                args.iter().for_each(|a| self.add_term(a));
            }
        }
    }

    /// Ground terms with at most `depth` nested function symbols, at most [`MAX_HERBRAND_TERMS`].
    fn herbrand_terms(&self, depth: usize) -> Vec<Term> {
        let mut terms: Vec<Term> = self.constants.iter().cloned().map(Term::Const).collect();
        if terms.is_empty() {
            terms.push(Term::Const("#c".into()));
        }
        let mut known: BTreeSet<Term> = terms.iter().cloned().collect();
        for _ in 0..depth {
            let previous = terms.clone();
            for (f, arity) in &self.functions {
                for args in tuples(&previous, *arity) {
                    let t = Term::Fun(f.clone(), args);
                    if terms.len() >= MAX_HERBRAND_TERMS {
                        return terms;
                    }
                    if known.insert(t.clone()) {
                        terms.push(t);
                    }
                }
            }
        }
        terms
    }
}

/// All `arity`-tuples over `items`, in lexicographic order of indices.
fn tuples(items: &[Term], arity: usize) -> Vec<Vec<Term>> {
    let mut out: Vec<Vec<Term>> = vec![Vec::new()];
    for _ in 0..arity {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                items.iter().map(move |t| {
                    let mut next = prefix.clone();
                    next.push(t.clone());
                    next
                })
            })
            .collect();
        if out.len() > MAX_HERBRAND_TERMS {
            out.truncate(MAX_HERBRAND_TERMS);
        }
    }
    out
}

fn to_nnf(formulas: &[Formula]) -> Vec<Nnf> {
    let mut renamer = Renamer::default();
    formulas.iter().map(|f| renamer.nnf(f, true)).collect()
}

// ---------------------------------------------------------------------------------------------
// The two procedures.

/// For each of `extras`: does `premises ∧ extra` have a model over the bounded finite domains?
fn find_models<const N: usize>(
    premises: &[Formula],
    extras: &[Formula; N],
) -> Result<[bool; N], String> {
    let always = to_nnf(premises);
    let optional = to_nnf(extras);
    let mut symbols = Symbols::of(&always);
    optional.iter().for_each(|f| symbols.add(f));
    if !symbols.functions.is_empty() {
        return Err("function symbols in the input".into());
    }
    let named = symbols.constants.len();
    // Without equality, a model with any number of extra elements yields one with more.
    let first_fresh = if symbols.equality {
        usize::from(named == 0)
    } else {
        FRESH_ELEMENTS
    };
    if named + first_fresh > MAX_DOMAIN {
        return Err(format!(
            "{named} constants exceed the domain bound {MAX_DOMAIN}"
        ));
    }
    let mut found = [false; N];
    for fresh in first_fresh..=FRESH_ELEMENTS.min(MAX_DOMAIN - named) {
        let mut domain: Vec<Term> = symbols.constants.iter().cloned().map(Term::Const).collect();
        domain.extend((0..fresh).map(|i| Term::Const(format!("#e{i}"))));
        let mut grounder = Grounder::new(&domain, Equality::Identity);
        let selectors = grounder.load(&always, &optional)?;
        for (slot, selector) in found.iter_mut().zip(&selectors) {
            if !*slot {
                *slot = matches!(grounder.solve(&[*selector]), Answer::Sat);
            }
        }
        if found.iter().all(|f| *f) {
            break;
        }
    }
    Ok(found)
}

/// Is `premises ∧ extras[which]` (or the premises alone, for `None`) proved unsatisfiable?
fn refute(premises: &[Formula], extras: &[Formula], which: Option<usize>) -> Result<bool, String> {
    let mut all: Vec<Formula> = premises.to_vec();
    all.extend(which.map(|i| extras[i].clone()));
    let mut skolemiser = Skolemiser {
        next: 0,
        universals: Vec::new(),
    };
    let skolemised: Vec<Nnf> = to_nnf(&all).iter().map(|f| skolemiser.run(f)).collect();
    let symbols = Symbols::of(&skolemised);
    let mut size = 0;
    for depth in 0..=HERBRAND_DEPTH {
        let universe = symbols.herbrand_terms(depth);
        if depth > 0 && universe.len() == size {
            break; // no new terms: deeper grounding adds nothing
        }
        size = universe.len();
        let mut grounder = Grounder::new(&universe, Equality::Uninterpreted);
        grounder.load(&skolemised, &[])?;
        match grounder.solve(&[]) {
            Answer::Unsat => return Ok(true),
            Answer::Sat => {}
            Answer::Unknown => {
                return Err(format!("SAT budget of {MAX_CONFLICTS} conflicts spent"))
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fol::parse_formula;

    fn check(premises: &[&str], conclusion: &str) -> Decision {
        let parse = |s: &str| parse_formula(s).unwrap_or_else(|e| panic!("{e}"));
        let premises: Vec<Formula> = premises.iter().map(|s| parse(s)).collect();
        decide(&premises, &parse(conclusion))
    }

    #[test]
    fn modus_ponens() {
        let p = ["∀x (Man(x) → Mortal(x))", "Man(socrates)"];
        assert_eq!(check(&p, "Mortal(socrates)"), Decision::Proved(Label::True));
        assert_eq!(
            check(&p, "¬Mortal(socrates)"),
            Decision::Proved(Label::False)
        );
        assert_eq!(
            check(&p, "Mortal(plato)"),
            Decision::Proved(Label::Uncertain)
        );
    }

    #[test]
    fn exclusive_or() {
        let p = ["Tea(ann) ⊕ Coffee(ann)", "Tea(ann)"];
        assert_eq!(check(&p, "Coffee(ann)"), Decision::Proved(Label::False));
        let p = ["A(j) ⊕ B(j) ⊕ C(j)", "A(j)", "B(j)"];
        assert_eq!(check(&p, "C(j)"), Decision::Proved(Label::True));
        let p = [
            "∀x (Animal(x) → Vertebrate(x) ⊕ Invertebrate(x))",
            "Animal(k)",
        ];
        assert_eq!(
            check(&p, "Vertebrate(k) ∧ Invertebrate(k)"),
            Decision::Proved(Label::False)
        );
        assert_eq!(
            check(&p, "Vertebrate(k)"),
            Decision::Proved(Label::Uncertain)
        );
    }

    #[test]
    fn existential_witnesses() {
        let p = ["∃x (Bird(x) ∧ Hawk(x))", "∀x (Hawk(x) → ¬Lands(x))"];
        assert_eq!(
            check(&p, "∃x (Bird(x) ∧ ¬Lands(x))"),
            Decision::Proved(Label::True)
        );
        assert_eq!(
            check(&p, "∀x (Bird(x) → Lands(x))"),
            Decision::Proved(Label::False)
        );
        // A witness exists, but nothing says which named individual it is.
        assert_eq!(
            check(&p, "Hawk(tweety)"),
            Decision::Proved(Label::Uncertain)
        );
    }

    #[test]
    fn countermodel_needs_fresh_element() {
        // True on every named constant, but ∃ can pick an unnamed element.
        let p = ["A(a)", "A(b)"];
        assert_eq!(check(&p, "∀x (A(x))"), Decision::Proved(Label::Uncertain));
        // No constants at all.
        assert_eq!(
            check(&["∃x (P(x))"], "∀x (P(x))"),
            Decision::Proved(Label::Uncertain)
        );
    }

    #[test]
    fn skolem_functions() {
        // Everyone has a parent who is a person; so some person has a parent (depth-2 terms).
        let p = [
            "∀x (Person(x) → ∃y (ParentOf(y, x) ∧ Person(y)))",
            "Person(ann)",
        ];
        let goal = "∃x ∃y (ParentOf(x, y) ∧ ∃z (ParentOf(z, x)))";
        assert_eq!(check(&p, goal), Decision::Proved(Label::True));
        // ∀∃ does not give ∃∀.
        let p = ["∀x ∃y (Loves(x, y))"];
        assert_eq!(
            check(&p, "∃y ∀x (Loves(x, y))"),
            Decision::Proved(Label::Uncertain)
        );
        // ∃∀ does give ∀∃.
        let p = ["∃y ∀x (Loves(x, y))"];
        assert_eq!(
            check(&p, "∀x ∃y (Loves(x, y))"),
            Decision::Proved(Label::True)
        );
    }

    #[test]
    fn inconsistent_premises() {
        let p = ["∀x (A(x) → B(x))", "A(j)", "¬B(j)"];
        let d = check(&p, "C(j)");
        assert_eq!(d, Decision::Undecided("premises inconsistent".into()));
        let premises: Vec<Formula> = p.iter().map(|s| parse_formula(s).unwrap()).collect();
        assert_eq!(consistent(&premises), Some(false));
        assert_eq!(consistent(&premises[..2]), Some(true));
    }

    #[test]
    fn equality() {
        assert_eq!(
            check(&["∀x (x = a → Red(x))"], "Red(a)"),
            Decision::Proved(Label::True)
        );
        let p = ["∃x ¬(x = a)", "Red(a)"];
        assert_eq!(
            check(&p, "∃x (¬Red(x))"),
            Decision::Proved(Label::Uncertain)
        );
        // Symmetry and reflexivity are built into the refutation's equality atoms.
        let p = ["¬(a = b)", "∀x ∀y (x = y ∨ y = x)"];
        assert_eq!(
            check(&p, "Red(a)"),
            Decision::Undecided("premises inconsistent".into())
        );
        // A model must identify b with a, which the model search does not do: no guess.
        let p = ["b = a", "Red(a)"];
        assert!(matches!(check(&p, "Red(b)"), Decision::Undecided(_)));
    }

    #[test]
    fn biconditional() {
        let p = ["∀x (Emmet(x) ↔ Blake(x))", "¬Blake(tower)"];
        assert_eq!(check(&p, "Emmet(tower)"), Decision::Proved(Label::False));
        assert_eq!(
            check(&p, "¬(Emmet(tower) ↔ Blake(tower))"),
            Decision::Proved(Label::False)
        );
    }

    #[test]
    fn only_infinite_models_give_no_verdict() {
        // A strict order without a maximum has no finite model: nothing may be claimed,
        // in particular not that the premises are inconsistent.
        let p = [
            "∀x ∃y (Less(x, y))",
            "∀x (¬Less(x, x))",
            "∀x ∀y ∀z (Less(x, y) ∧ Less(y, z) → Less(x, z))",
        ];
        let d = check(&p, "Red(zero)");
        assert_eq!(
            d,
            undecided("no finite model of the premises within bounds")
        );
        // Consequences are still proved, with the Skolem term sk(zero) as the witness.
        let premises: Vec<Formula> = p.iter().map(|s| parse_formula(s).unwrap()).collect();
        let goal = parse_formula("∃y (Less(zero, y))").unwrap();
        assert_eq!(entails(&premises, &goal), Some(true));
    }

    #[test]
    fn bounds_give_undecided() {
        let constants: Vec<String> = (0..=MAX_DOMAIN).map(|i| format!("P(c{i})")).collect();
        let p: Vec<&str> = constants.iter().map(String::as_str).collect();
        assert!(matches!(check(&p, "P(c0)"), Decision::Undecided(why) if why.contains("domain")));
        // A free variable in a hand-built formula is refused, not guessed at.
        let open = Formula::Atom {
            pred: "P".into(),
            args: vec![Term::Var("x".into())],
        };
        assert!(matches!(
            decide(std::slice::from_ref(&open), &open),
            Decision::Undecided(_)
        ));
    }

    #[test]
    fn entails_helper() {
        let parse = |s: &str| parse_formula(s).unwrap();
        let p = vec![parse("∀x (A(x) → B(x))"), parse("A(j)")];
        assert_eq!(entails(&p, &parse("B(j)")), Some(true));
        assert_eq!(entails(&p, &parse("B(k)")), Some(false));
    }
}
