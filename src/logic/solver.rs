//! Open-world (classical negation) and closed-world (stratified negation as failure) solvers.
//!
//! Both ground every rule over the theory's constants (a rule has at most one variable) and then
//! forward-chain. Open world: positive and negative literals are derived alike; a query is True
//! if derived, False if its complement is derived, Uncertain otherwise (ProofWriter OWA).
//! Closed world (RuleTaker CWA): negation as failure, computed as the well-founded model, which is
//! the stratified model whenever the ground theory is stratified. A theory that leaves some atom
//! undecided (it depends on its own failure, as in "if X is not A then X is B; if X is not B then
//! X is A") is refused with [`SolveError::NotStratified`] rather than answered.
//! Depths count rule applications on the shortest derivation; a "not" condition counts 0.

use super::english::{Atom, Literal, Rule, Statement, Term};
use super::{Label, World};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

/// A theory the solvers give no answer for, rather than a wrong one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SolveError {
    /// Open world: both the literal and its negation follow.
    #[error("the theory is inconsistent: it implies both \"{0}\" and its negation")]
    Inconsistent(String),
    /// Closed world: the literal depends on its own failure through "not" (no stratification).
    #[error("the theory is not stratified: \"{0}\" depends negatively on itself")]
    NotStratified(String),
}

/// Everything a theory implies under one world, for fast repeated queries.
pub struct Closure {
    world: World,
    ids: HashMap<Atom, usize>,
    atoms: Vec<Atom>,
    /// Least derivation depth of each node, indexed by [`node`]; `None` when not derived.
    depth: Vec<Option<u32>>,
}

/// The label of `query` under `world`.
pub fn solve(theory: &[Statement], query: &Literal, world: World) -> Result<Label, SolveError> {
    Ok(closure(theory, world)?.label(query))
}

/// Saturates `theory` under `world`.
pub fn closure(theory: &[Statement], world: World) -> Result<Closure, SolveError> {
    let program = Program::ground(theory, None);
    let depth = match world {
        World::Open => program.saturate_open()?,
        World::Closed => program.saturate_closed()?,
    };
    Ok(Closure {
        world,
        ids: program.ids,
        atoms: program.atoms,
        depth,
    })
}

/// The label of `query` under classical entailment: True when every model of the theory makes it
/// true, False when none does, Uncertain otherwise. Unlike forward chaining this contraposes:
/// "Bob is cold; if something is not red then it is not cold" entails "Bob is red". The theory
/// is grounded over its constants and the query's (no function symbols, so this is complete) and
/// decided with a SAT solver.
pub fn solve_classical(theory: &[Statement], query: &Literal) -> Result<Label, SolveError> {
    use batsat::{lbool, BasicSolver, Lit, SolverInterface};
    let mut program = Program::ground(theory, Some(&query.atom));
    let q = program.lit(query, None);
    let mut sat = BasicSolver::default();
    let vars: Vec<Lit> = (0..program.atoms.len())
        .map(|_| Lit::new(sat.new_var_default(), true))
        .collect();
    let lit = |(id, positive): GroundLit| if positive { vars[id] } else { !vars[id] };
    for &fact in &program.facts {
        sat.add_clause_reuse(&mut vec![lit(fact)]);
    }
    for rule in &program.rules {
        let mut clause: Vec<Lit> = rule.body.iter().map(|&b| !lit(b)).collect();
        clause.push(lit(rule.head));
        sat.add_clause_reuse(&mut clause);
    }
    let mut unsat = |assume: &[Lit]| sat.solve_limited(assume) == lbool::FALSE;
    if unsat(&[]) {
        // Every literal follows from a contradiction; name the query's.
        return Err(SolveError::Inconsistent(program.describe(q)));
    }
    Ok(if unsat(&[!lit(q)]) {
        Label::True
    } else if unsat(&[lit(q)]) {
        Label::False
    } else {
        Label::Uncertain
    })
}

/// Closed world: a negative fact, or a negative conclusion of a rule that fires, about an atom
/// that is derived. Negation as failure ignores negative statements (they say what it assumes
/// anyway), so such a theory contradicts itself without the closed-world answer showing it.
pub fn closed_world_conflict(theory: &[Statement]) -> Result<Option<Literal>, SolveError> {
    let program = Program::ground(theory, None);
    let derived = program.saturate_closed()?;
    let holds = |&(id, positive): &GroundLit| derived[id].is_some() == positive;
    let negative_facts = program.facts.iter().filter(|f| !f.1);
    let fired_negative_heads = program
        .rules
        .iter()
        .filter(|r| !r.head.1 && r.body.iter().all(holds))
        .map(|r| &r.head);
    let conflict = negative_facts
        .chain(fired_negative_heads)
        .find(|&&(id, _)| derived[id].is_some());
    Ok(conflict.map(|&(id, positive)| Literal {
        atom: program.atoms[id].clone(),
        positive,
    }))
}

/// Open world: two nodes per atom, its positive and negative literal. Closed world: one.
fn node(world: World, atom: usize, positive: bool) -> usize {
    match world {
        World::Open => 2 * atom + usize::from(!positive),
        World::Closed => atom,
    }
}

impl Closure {
    pub fn world(&self) -> World {
        self.world
    }

    pub fn label(&self, query: &Literal) -> Label {
        let holds = |positive| self.derivation(&query.atom, positive).is_some();
        match self.world {
            World::Open if holds(query.positive) => Label::True,
            World::Open if holds(!query.positive) => Label::False,
            World::Open => Label::Uncertain,
            // Negation as failure: a negative literal holds exactly when its atom is not derived.
            World::Closed if holds(true) == query.positive => Label::True,
            World::Closed => Label::False,
        }
    }

    /// The number of rule applications in the shortest derivation of `lit` (0 for a fact), or
    /// `None` when it is not derived. Closed world: negative literals are never derived (they hold
    /// by failure), so they have no depth.
    pub fn depth(&self, lit: &Literal) -> Option<usize> {
        self.derivation(&lit.atom, lit.positive).map(|d| d as usize)
    }

    fn derivation(&self, atom: &Atom, positive: bool) -> Option<u32> {
        if self.world == World::Closed && !positive {
            return None;
        }
        let &id = self.ids.get(atom)?;
        self.depth[node(self.world, id, positive)]
    }

    /// Every ground atom of the grounded theory (its facts and rule instances), sorted.
    pub fn atoms(&self) -> Vec<&Atom> {
        let mut atoms: Vec<&Atom> = self.atoms.iter().collect();
        atoms.sort();
        atoms
    }

    /// Every derived literal with its depth, sorted.
    pub fn derived(&self) -> Vec<(Literal, usize)> {
        let signs: &[bool] = match self.world {
            World::Open => &[true, false],
            World::Closed => &[true],
        };
        let mut out: Vec<(Literal, usize)> = self
            .atoms
            .iter()
            .enumerate()
            .flat_map(|(id, atom)| {
                signs.iter().filter_map(move |&positive| {
                    let d = self.depth[node(self.world, id, positive)]?;
                    let lit = Literal {
                        atom: atom.clone(),
                        positive,
                    };
                    Some((lit, d as usize))
                })
            })
            .collect();
        out.sort();
        out
    }
}

/// A ground literal: an atom id and a sign.
type GroundLit = (usize, bool);

struct GroundRule {
    body: Vec<GroundLit>,
    head: GroundLit,
}

/// The theory with atoms numbered and every rule instantiated for every constant.
struct Program {
    ids: HashMap<Atom, usize>,
    atoms: Vec<Atom>,
    facts: Vec<GroundLit>,
    rules: Vec<GroundRule>,
}

impl Program {
    /// Grounds over the constants of `theory` and of `also` (a query about a new entity).
    fn ground(theory: &[Statement], also: Option<&Atom>) -> Program {
        let domain: BTreeSet<String> = theory
            .iter()
            .flat_map(Statement::literals)
            .flat_map(|l| &l.atom.args)
            .chain(also.into_iter().flat_map(|a| &a.args))
            .filter_map(|t| match t {
                Term::Const(c) => Some(c.clone()),
                Term::Var => None,
            })
            .collect();
        let mut program = Program {
            ids: HashMap::new(),
            atoms: Vec::new(),
            facts: Vec::new(),
            rules: Vec::new(),
        };
        for statement in theory {
            match statement {
                Statement::Fact(l) => {
                    let fact = program.lit(l, None);
                    program.facts.push(fact);
                }
                Statement::Rule(r) if r.has_var() => {
                    for value in &domain {
                        program.instantiate(r, Some(value));
                    }
                }
                Statement::Rule(r) => program.instantiate(r, None),
            }
        }
        program
    }

    /// Adds the Horn rules of one instance: "if a or b then c and d" is the four rules a→c,
    /// a→d, b→c, b→d; a ProofWriter rule is one.
    fn instantiate(&mut self, rule: &Rule, value: Option<&str>) {
        let body: Vec<GroundLit> = rule.body.iter().map(|l| self.lit(l, value)).collect();
        let bodies: Vec<Vec<GroundLit>> = if rule.disjunctive {
            body.into_iter().map(|l| vec![l]).collect()
        } else {
            vec![body]
        };
        let heads: Vec<GroundLit> = rule.heads().map(|l| self.lit(l, value)).collect();
        for body in &bodies {
            for &head in &heads {
                self.rules.push(GroundRule {
                    body: body.clone(),
                    head,
                });
            }
        }
    }

    fn lit(&mut self, l: &Literal, value: Option<&str>) -> GroundLit {
        let atom = match value {
            Some(v) => l.atom.substitute(v),
            None => l.atom.clone(),
        };
        let id = match self.ids.get(&atom) {
            Some(&id) => id,
            None => {
                self.atoms.push(atom.clone());
                self.ids.insert(atom, self.atoms.len() - 1);
                self.atoms.len() - 1
            }
        };
        (id, l.positive)
    }

    fn describe(&self, (id, positive): GroundLit) -> String {
        Literal {
            atom: self.atoms[id].clone(),
            positive,
        }
        .to_english()
    }

    /// Classical reading: every literal is a node, rules are Horn clauses over them.
    fn saturate_open(&self) -> Result<Vec<Option<u32>>, SolveError> {
        let world = World::Open;
        let to_node = |&(id, positive): &GroundLit| node(world, id, positive);
        let mut depth = vec![None; 2 * self.atoms.len()];
        for fact in &self.facts {
            depth[to_node(fact)] = Some(0);
        }
        let horn: Vec<HornRule> = self
            .rules
            .iter()
            .map(|r| HornRule {
                body: r.body.iter().map(to_node).collect(),
                head: to_node(&r.head),
            })
            .collect();
        saturate(&mut depth, &horn);
        match (0..self.atoms.len())
            .find(|&id| depth[2 * id].is_some() && depth[2 * id + 1].is_some())
        {
            Some(id) => Err(SolveError::Inconsistent(self.describe((id, true)))),
            None => Ok(depth),
        }
    }

    /// Negation as failure, read as the well-founded model (Van Gelder's alternating fixpoint):
    /// on a stratified theory it is the stratified model, and it also answers theories that are
    /// stratified only once rules that can never fire are set aside. An atom it leaves undecided
    /// depends on its own failure: that is an error, not a guess. Negative facts and negative
    /// conclusions state what the closed world already assumes, so they add nothing.
    fn saturate_closed(&self) -> Result<Vec<Option<u32>>, SolveError> {
        let mut truth = vec![None; self.atoms.len()];
        loop {
            let possible = self.reduct_closure(&truth);
            let next = self.reduct_closure(&possible);
            if same_set(&next, &truth) {
                let undecided =
                    (0..self.atoms.len()).find(|&a| possible[a].is_some() && next[a].is_none());
                return match undecided {
                    Some(a) => Err(SolveError::NotStratified(self.describe((a, true)))),
                    None => Ok(next),
                };
            }
            truth = next;
        }
    }

    /// What the positive rules derive when "not a" holds exactly for the atoms `assumed` lacks.
    fn reduct_closure(&self, assumed: &[Option<u32>]) -> Vec<Option<u32>> {
        let mut depth = vec![None; self.atoms.len()];
        for &(id, positive) in &self.facts {
            if positive {
                depth[id] = Some(0);
            }
        }
        let horn: Vec<HornRule> = self
            .rules
            .iter()
            .filter(|r| r.head.1)
            .filter(|r| r.body.iter().all(|&(b, pos)| pos || assumed[b].is_none()))
            .map(|r| HornRule {
                body: r.body.iter().filter(|l| l.1).map(|l| l.0).collect(),
                head: r.head.0,
            })
            .collect();
        saturate(&mut depth, &horn);
        depth
    }
}

fn same_set(a: &[Option<u32>], b: &[Option<u32>]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.is_some() == y.is_some())
}

/// A definite clause over node numbers.
struct HornRule {
    body: Vec<usize>,
    head: usize,
}

/// Derives everything `rules` yield from the nodes `depth` already holds, each at its least
/// depth (1 + the deepest body node): nodes are settled in order of depth, as in Dijkstra's
/// algorithm, so the first derivation of a node is a shallowest one.
fn saturate(depth: &mut [Option<u32>], rules: &[HornRule]) {
    let mut waiting = vec![0usize; rules.len()];
    let mut base = vec![0u32; rules.len()];
    let mut watchers: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut queue = BinaryHeap::new();
    for (r, rule) in rules.iter().enumerate() {
        for &b in &rule.body {
            match depth[b] {
                Some(d) => base[r] = base[r].max(d),
                None => {
                    waiting[r] += 1;
                    watchers.entry(b).or_default().push(r);
                }
            }
        }
        if waiting[r] == 0 {
            queue.push(Reverse((base[r] + 1, rule.head)));
        }
    }
    while let Some(Reverse((d, n))) = queue.pop() {
        if depth[n].is_some() {
            continue;
        }
        depth[n] = Some(d);
        for &r in watchers.get(&n).map(Vec::as_slice).unwrap_or_default() {
            waiting[r] -= 1;
            base[r] = base[r].max(d);
            if waiting[r] == 0 {
                queue.push(Reverse((base[r] + 1, rules[r].head)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::english::{parse_query, parse_theory};

    fn label(theory: &str, query: &str, world: World) -> Label {
        let theory = parse_theory(theory).expect("theory parses");
        let query = parse_query(query).expect("query parses");
        solve(&theory, &query, world).expect("solvable")
    }

    #[test]
    fn open_world_three_labels() {
        let t = "Bob is cold. If something is cold then it is not red. Red things are big.";
        assert_eq!(label(t, "Bob is cold.", World::Open), Label::True);
        assert_eq!(label(t, "Bob is red.", World::Open), Label::False);
        assert_eq!(label(t, "Bob is not red.", World::Open), Label::True);
        assert_eq!(label(t, "Bob is big.", World::Open), Label::Uncertain);
        assert_eq!(label(t, "The cat is big.", World::Open), Label::Uncertain);
    }

    #[test]
    fn closed_world_negation_as_failure() {
        let t = "The cat is cold. If something is not red then it chases the dog. \
                 If the cat chases the dog then the dog is big.";
        assert_eq!(
            label(t, "The cat chases the dog.", World::Closed),
            Label::True
        );
        assert_eq!(label(t, "The dog is big.", World::Closed), Label::True);
        assert_eq!(label(t, "The dog is not big.", World::Closed), Label::False);
        assert_eq!(label(t, "The cat is red.", World::Closed), Label::False);
        assert_eq!(label(t, "The cat is not red.", World::Closed), Label::True);
    }

    #[test]
    fn cycles_through_rules_that_cannot_fire_are_answered() {
        // blue needs "not quiet" and kind needs "not blue": a ground cycle through "not", but
        // nothing makes Bob quiet, so the second rule never fires and the answer is clear.
        let t = "Bob is kind. If someone is kind and not quiet then they are blue. \
                 If someone is quiet and not blue then they are kind.";
        assert_eq!(label(t, "Bob is blue.", World::Closed), Label::True);
        assert_eq!(label(t, "Bob is not quiet.", World::Closed), Label::True);
    }

    #[test]
    fn classical_entailment_contraposes() {
        let classical = |t: &str, q: &str| {
            let t = parse_theory(t).expect("theory parses");
            solve_classical(&t, &parse_query(q).expect("query parses"))
        };
        let t = "Bob is cold. If something is not red then it is not cold.";
        assert_eq!(classical(t, "Bob is red."), Ok(Label::True));
        assert_eq!(label(t, "Bob is red.", World::Open), Label::Uncertain);
        assert_eq!(classical(t, "Bob is big."), Ok(Label::Uncertain));
        assert_eq!(classical(t, "Bob is not red."), Ok(Label::False));
        // Reasoning by cases reaches an entity the theory never names.
        let t = "If something is red then it is big. If something is not red then it is big.";
        assert_eq!(classical(t, "Anne is big."), Ok(Label::True));
        // Disjunctive conditions and conjunctive conclusions.
        let t = "Bob is kind. If Bob is red or Bob is kind then Erin is big and Erin is not cold.";
        assert_eq!(classical(t, "Erin is cold."), Ok(Label::False));
        assert_eq!(label(t, "Erin is big.", World::Open), Label::True);
        assert!(matches!(
            classical("Bob is red. Bob is not red.", "Bob is big."),
            Err(SolveError::Inconsistent(_))
        ));
    }

    #[test]
    fn closed_world_conflicts_are_found() {
        let conflict =
            |t: &str| closed_world_conflict(&parse_theory(t).expect("parses")).expect("stratified");
        assert_eq!(conflict("Bob is red. If Bob is red then Bob is big."), None);
        let found = conflict("Bob is red. Bob is big. If Bob is red then Bob is not big.");
        assert_eq!(found, Some(parse_query("Bob is not big.").unwrap()));
        assert!(conflict("Bob is big. Bob is not big.").is_some());
        // A negative conclusion whose rule does not fire is no conflict.
        assert_eq!(
            conflict("Bob is big. If Bob is red then Bob is not big."),
            None
        );
    }

    #[test]
    fn depths_are_shortest_derivations() {
        let t = parse_theory(
            "Bob is cold. If something is cold then it is red. If something is red then it is big. \
             If something is cold then it is big.",
        )
        .expect("parses");
        let c = closure(&t, World::Open).expect("consistent");
        let depth = |q: &str| c.depth(&parse_query(q).expect("parses"));
        assert_eq!(depth("Bob is cold."), Some(0));
        assert_eq!(depth("Bob is red."), Some(1));
        assert_eq!(depth("Bob is big."), Some(1));
        assert_eq!(depth("Bob is not big."), None);
    }

    #[test]
    fn contradictions_and_cycles_are_errors() {
        let t = parse_theory("Bob is cold. Bob is not red. Cold things are red.").expect("parses");
        let q = parse_query("Bob is red.").expect("parses");
        assert!(matches!(
            solve(&t, &q, World::Open),
            Err(SolveError::Inconsistent(_))
        ));
        // An odd and an even cycle through "not": no single model to answer from.
        for t in [
            "If Bob is not red then Bob is red.",
            "Bob is big. If something is big and not red then it is blue. \
             If something is not blue then it is red.",
        ] {
            let t = parse_theory(t).expect("parses");
            assert!(matches!(
                solve(&t, &q, World::Closed),
                Err(SolveError::NotStratified(_))
            ));
        }
    }
}
