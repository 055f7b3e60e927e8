//! Seeded generator of fresh theories in the ProofWriter grammar (the embedded default data).
//!
//! Invented entities, attributes and verbs keep the theories out of any training set. Each theory
//! plants derivation chains (one of exactly the requested depth), a "blocked" rule that one more
//! fact would fire, and distractor facts and rules; every label and depth is then computed by the
//! solver, never taken from the plan. Only [`Rng`] and sorted collections are used, so a seed
//! gives the same theory on every machine.

use super::english::{signature, Atom, Literal, Rule, Statement, Term};
use super::solver::{closure, Closure};
use super::{Label, World};
use crate::rng::Rng;
use std::collections::BTreeSet;

/// Names the generation algorithm. Build specs record it, so changing what `generate` makes
/// must change this name.
pub const VERSION: &str = "generator-2026-11-21";

const NAMES: [&str; 12] = [
    "Quillon", "Varenka", "Teodric", "Ysolde", "Brannoch", "Mirabeth", "Oswin", "Pelagia",
    "Corvin", "Isaura", "Tamsin", "Ludovic",
];
const CREATURES: [&str; 12] = [
    "the marmot",
    "the heron",
    "the ocelot",
    "the tapir",
    "the pangolin",
    "the ibex",
    "the lemur",
    "the wombat",
    "the bittern",
    "the stoat",
    "the quokka",
    "the narwhal",
];
const ATTRIBUTES: [&str; 20] = [
    "glossy", "brisk", "mellow", "gaunt", "frosty", "placid", "dapper", "wary", "nimble", "somber",
    "ruddy", "lanky", "zesty", "plump", "shrewd", "tidy", "fuzzy", "hollow", "dusky", "jolly",
];
/// Base forms; the parser's -s rules invert their third-person forms.
const RELATIONS: [&str; 16] = [
    "admire", "avoid", "greet", "follow", "envy", "tease", "trust", "guard", "praise", "shelter",
    "nudge", "scold", "mimic", "watch", "carry", "outrun",
];

/// Attempts before giving up on reaching the requested depth exactly.
const ATTEMPTS: usize = 16;

/// What to generate. Counts of facts and rules are totals: what the planted chains do not use
/// is filled with distractors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    pub world: World,
    /// Rule applications in the deepest planted derivation.
    pub depth: usize,
    pub entities: usize,
    pub facts: usize,
    pub rules: usize,
    /// Planted derivation chains: the first has `depth` steps, the others 1..=depth.
    pub chains: usize,
    pub queries: usize,
}

impl GenConfig {
    /// A mid-sized theory: 4 entities, 8 facts, 10 rules, 3 chains, 12 queries.
    pub fn new(world: World, depth: usize) -> GenConfig {
        GenConfig {
            world,
            depth,
            entities: 4,
            facts: 8,
            rules: 10 + depth,
            chains: 3,
            queries: 12,
        }
    }
}

/// A generated theory and its labelled queries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    pub statements: Vec<Statement>,
    /// (query, solver label, depth): the depth of the derivation that decides the label (of the
    /// query itself when True, of its complement when False), `usize::MAX` when the label
    /// rests on nothing being derived (Uncertain, or negation as failure).
    pub queries: Vec<(Literal, Label, usize)>,
    /// (query, fact): queries among `queries` whose label changes when `fact` is inserted: a
    /// support (Uncertain or False becomes decided or True) or, in a closed world, a defeater of
    /// a "not" condition (True becomes False). Verified by solving the edited theory.
    pub flips: Vec<(Literal, Literal)>,
    /// The depth of the deepest planted chain as solved; equals `depth` unless every attempt
    /// failed to reach it.
    pub depth: usize,
}

/// A one-place property of an entity: an attribute or a relation to or from a fixed entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Property {
    Attr(usize),
    /// `x rel entity`
    Acts(usize, usize),
    /// `entity rel x`
    Receives(usize, usize),
}

struct Vocab {
    entities: Vec<String>,
    attributes: Vec<String>,
    relations: Vec<String>,
}

impl Vocab {
    fn choose(rng: &mut Rng, cfg: &GenConfig) -> Vocab {
        let n = cfg.entities.clamp(1, NAMES.len() + CREATURES.len());
        let names = n / 2;
        let mut entities = pick(rng, &NAMES, names);
        entities.extend(pick(rng, &CREATURES, n - names));
        Vocab {
            entities,
            attributes: pick(rng, &ATTRIBUTES, (6 + 2 * cfg.depth).min(ATTRIBUTES.len())),
            relations: pick(rng, &RELATIONS, 4),
        }
    }

    fn literal(&self, p: Property, subject: &Term, positive: bool) -> Literal {
        let entity = |e: usize| Term::Const(self.entities[e].clone());
        let (pred, args) = match p {
            Property::Attr(a) => (&self.attributes[a], vec![subject.clone()]),
            Property::Acts(r, e) => (&self.relations[r], vec![subject.clone(), entity(e)]),
            Property::Receives(r, e) => (&self.relations[r], vec![entity(e), subject.clone()]),
        };
        Literal {
            atom: Atom {
                pred: pred.clone(),
                args,
            },
            positive,
        }
    }
}

/// `k` distinct items in random order.
fn pick(rng: &mut Rng, pool: &[&str], k: usize) -> Vec<String> {
    let mut all: Vec<String> = pool.iter().map(|s| s.to_string()).collect();
    rng.shuffle(&mut all);
    all.truncate(k);
    all
}

/// Unused properties, drawn half attributes and half relations so that each chain property
/// is fresh (planted chains do not interfere).
struct Fresh {
    attributes: Vec<Property>,
    relations: Vec<Property>,
}

impl Fresh {
    fn new(rng: &mut Rng, vocab: &Vocab) -> Fresh {
        let mut attributes: Vec<Property> =
            (0..vocab.attributes.len()).map(Property::Attr).collect();
        let mut relations = Vec::new();
        for r in 0..vocab.relations.len() {
            for e in 0..vocab.entities.len() {
                relations.push(Property::Acts(r, e));
                relations.push(Property::Receives(r, e));
            }
        }
        rng.shuffle(&mut attributes);
        rng.shuffle(&mut relations);
        Fresh {
            attributes,
            relations,
        }
    }

    fn take(&mut self, rng: &mut Rng) -> Option<Property> {
        let (first, second) = if rng.chance(1, 2) {
            (&mut self.attributes, &mut self.relations)
        } else {
            (&mut self.relations, &mut self.attributes)
        };
        first.pop().or_else(|| second.pop())
    }
}

/// Statements under construction, and the literal the main chain must derive.
struct Plan<'a> {
    cfg: &'a GenConfig,
    vocab: Vocab,
    fresh: Fresh,
    facts: Vec<Statement>,
    rules: Vec<Statement>,
    target: Option<Literal>,
    /// Conclusions of the blocked rules about their entity: open until one fact is inserted.
    blocked: Vec<Atom>,
}

/// Generates the theory for `seed`: the same (seed, cfg) always gives the same result.
pub fn generate(seed: u64, cfg: &GenConfig) -> Generated {
    let mut best: Option<Generated> = None;
    for attempt in 0..ATTEMPTS {
        let mut rng = Rng::derive(seed, &format!("logic-generator/{attempt}"));
        let Some(generated) = attempt_theory(&mut rng, cfg) else {
            continue;
        };
        if generated.depth == cfg.depth {
            return generated;
        }
        best = best.or(Some(generated));
    }
    best.unwrap_or(Generated {
        statements: Vec::new(),
        queries: Vec::new(),
        flips: Vec::new(),
        depth: 0,
    })
}

fn attempt_theory(rng: &mut Rng, cfg: &GenConfig) -> Option<Generated> {
    let vocab = Vocab::choose(rng, cfg);
    let fresh = Fresh::new(rng, &vocab);
    let mut plan = Plan {
        cfg,
        vocab,
        fresh,
        facts: Vec::new(),
        rules: Vec::new(),
        target: None,
        blocked: Vec::new(),
    };
    for chain in 0..cfg.chains.max(1) {
        let length = if chain == 0 {
            cfg.depth
        } else {
            1 + rng.below(cfg.depth.max(1))
        };
        plan.chain(rng, length, chain == 0);
    }
    plan.blocked_rule(rng);
    plan.distractors(rng);
    let mut statements = plan.facts;
    statements.extend(plan.rules);
    rng.shuffle(&mut statements);
    let closed = closure(&statements, cfg.world).ok()?;
    let target = plan.target?;
    let depth = closed.depth(&target)?;
    let queries = choose_queries(rng, cfg, &statements, &closed, (&target, &plan.blocked));
    let flips = flips(&statements, cfg.world, &closed, &queries);
    Some(Generated {
        statements,
        queries,
        flips,
        depth,
    })
}

impl Plan<'_> {
    fn sign(&self, rng: &mut Rng) -> bool {
        // Closed world: negative facts and conclusions add nothing, so all are positive.
        self.cfg.world == World::Closed || !rng.chance(1, 3)
    }

    fn entity(&self, rng: &mut Rng) -> Term {
        Term::Const(rng.choose(&self.vocab.entities).clone())
    }

    /// A fact, then `length` rules each deriving the next property from the previous one, on
    /// one entity or hopping to another ("If something is glossy then the marmot is brisk").
    fn chain(&mut self, rng: &mut Rng, length: usize, main: bool) {
        let Some(mut prop) = self.fresh.take(rng) else {
            return;
        };
        let mut entity = self.entity(rng);
        let mut positive = self.sign(rng);
        let mut last = self.vocab.literal(prop, &entity, positive);
        self.facts.push(Statement::Fact(last.clone()));
        for step in 0..length {
            let Some(next) = self.fresh.take(rng) else {
                return;
            };
            let ground = rng.chance(1, 5);
            let subject = if ground { entity.clone() } else { Term::Var };
            let mut body = vec![self.vocab.literal(prop, &subject, positive)];
            // The main chain of a closed-world theory always rests on one failure ("not").
            let force_naf = main && step == 0 && self.cfg.world == World::Closed;
            if force_naf || rng.chance(1, 3) {
                self.extra_condition(rng, &subject, &entity, force_naf, &mut body);
            }
            let hop = self.vocab.entities.len() > 1 && rng.chance(1, 4);
            if hop {
                entity = self.entity(rng);
            }
            let head_subject = if hop || ground {
                entity.clone()
            } else {
                Term::Var
            };
            positive = self.sign(rng);
            let head = self.vocab.literal(next, &head_subject, positive);
            self.rules.push(Statement::Rule(Rule::new(body, head)));
            prop = next;
            last = self.vocab.literal(prop, &entity, positive);
        }
        if main {
            self.target = Some(last);
        }
    }

    /// A second condition that holds for `entity`: a stated fact, or (closed world) the failure
    /// of a property nothing derives.
    fn extra_condition(
        &mut self,
        rng: &mut Rng,
        subject: &Term,
        entity: &Term,
        naf: bool,
        body: &mut Vec<Literal>,
    ) {
        let Some(q) = self.fresh.take(rng) else {
            return;
        };
        if self.cfg.world == World::Closed && (naf || rng.chance(1, 2)) {
            body.push(self.vocab.literal(q, subject, false));
            return;
        }
        let positive = self.sign(rng);
        self.facts
            .push(Statement::Fact(self.vocab.literal(q, entity, positive)));
        body.push(self.vocab.literal(q, subject, positive));
    }

    /// A rule one fact short of firing, and a rule using its conclusion: both conclusions stay
    /// open (Uncertain, or False in a closed world) until that fact is inserted.
    fn blocked_rule(&mut self, rng: &mut Rng) {
        let (Some(p), Some(missing), Some(h1), Some(h2)) = (
            self.fresh.take(rng),
            self.fresh.take(rng),
            self.fresh.take(rng),
            self.fresh.take(rng),
        ) else {
            return;
        };
        let entity = self.entity(rng);
        let positive = self.sign(rng);
        self.facts
            .push(Statement::Fact(self.vocab.literal(p, &entity, positive)));
        let (m, s1, s2) = (self.sign(rng), self.sign(rng), self.sign(rng));
        let x = Term::Var;
        for h in [h1, h2] {
            self.blocked.push(self.vocab.literal(h, &entity, true).atom);
        }
        self.rules.push(Statement::Rule(Rule::new(
            vec![
                self.vocab.literal(p, &x, positive),
                self.vocab.literal(missing, &x, m),
            ],
            self.vocab.literal(h1, &x, s1),
        )));
        self.rules.push(Statement::Rule(Rule::new(
            vec![self.vocab.literal(h1, &x, s1)],
            self.vocab.literal(h2, &x, s2),
        )));
    }

    /// Random facts and rules over the whole vocabulary, each kept only if the theory stays
    /// solvable and the main chain keeps its depth.
    fn distractors(&mut self, rng: &mut Rng) {
        let facts = self.cfg.facts.saturating_sub(self.facts.len());
        let rules = self.cfg.rules.saturating_sub(self.rules.len());
        let before = self.target_depth();
        for k in 0..facts + rules {
            let statement = if k < facts {
                let positive = self.sign(rng);
                let entity = self.entity(rng);
                Statement::Fact(
                    self.vocab
                        .literal(self.any_property(rng), &entity, positive),
                )
            } else {
                Statement::Rule(self.random_rule(rng))
            };
            let is_fact = matches!(statement, Statement::Fact(_));
            let list = if is_fact {
                &mut self.facts
            } else {
                &mut self.rules
            };
            list.push(statement);
            if self.target_depth() != before {
                let list = if is_fact {
                    &mut self.facts
                } else {
                    &mut self.rules
                };
                list.pop();
            }
        }
    }

    fn any_property(&self, rng: &mut Rng) -> Property {
        let r = rng.below(self.vocab.relations.len());
        let e = rng.below(self.vocab.entities.len());
        match rng.below(4) {
            0 => Property::Acts(r, e),
            1 => Property::Receives(r, e),
            _ => Property::Attr(rng.below(self.vocab.attributes.len())),
        }
    }

    fn random_rule(&self, rng: &mut Rng) -> Rule {
        let x = Term::Var;
        let mut body = Vec::new();
        for _ in 0..1 + rng.below(2) {
            // Closed world: bodies may test failure ("it is not glossy").
            let positive = match self.cfg.world {
                World::Open => self.sign(rng),
                World::Closed => !rng.chance(1, 4),
            };
            body.push(self.vocab.literal(self.any_property(rng), &x, positive));
        }
        let head = self
            .vocab
            .literal(self.any_property(rng), &x, self.sign(rng));
        Rule::new(body, head)
    }

    /// The main target's depth in the theory so far; `None` also when it is unsolvable.
    fn target_depth(&self) -> Option<Option<usize>> {
        let target = self.target.as_ref()?;
        let statements: Vec<Statement> = self.facts.iter().chain(&self.rules).cloned().collect();
        let closed = closure(&statements, self.cfg.world).ok()?;
        Some(closed.depth(target))
    }
}

/// Every literal over the theory's ground atoms with its label and deciding depth.
fn candidates(closed: &Closure) -> Vec<(Literal, Label, usize)> {
    let mut out = Vec::new();
    for atom in closed.atoms() {
        for positive in [true, false] {
            let lit = Literal {
                atom: atom.clone(),
                positive,
            };
            let label = closed.label(&lit);
            let deciding = match label {
                Label::True => closed.depth(&lit),
                Label::False => closed.depth(&lit.negated()),
                Label::Uncertain => None,
            };
            out.push((lit, label, deciding.unwrap_or(usize::MAX)));
        }
    }
    out
}

/// Up to `cfg.queries` queries, round-robin over the labels; within a label, queries at the
/// requested depth come first (the main target leads), the rest in random order.
fn choose_queries(
    rng: &mut Rng,
    cfg: &GenConfig,
    statements: &[Statement],
    closed: &Closure,
    (target, blocked): (&Literal, &[Atom]),
) -> Vec<(Literal, Label, usize)> {
    let mut all = candidates(closed);
    rng.shuffle(&mut all);
    // Rule conclusions make the interesting open questions ("rconc" in RuleTaker's terms).
    let concluded = concluded_atoms(statements);
    all.sort_by_key(|(lit, label, d)| {
        let undecided = *label == Label::Uncertain || (*label == Label::False && lit.positive);
        let rank = if lit.atom == target.atom {
            0
        } else if undecided && blocked.contains(&lit.atom) {
            1
        } else {
            2
        };
        (rank, *d != cfg.depth, !concluded.contains(&lit.atom))
    });
    let mut groups: Vec<Vec<(Literal, Label, usize)>> = Label::ALL
        .iter()
        .map(|&label| all.iter().filter(|q| q.1 == label).cloned().collect())
        .collect();
    let mut chosen = Vec::new();
    while chosen.len() < cfg.queries && groups.iter().any(|g| !g.is_empty()) {
        for group in groups.iter_mut().filter(|g| !g.is_empty()) {
            if chosen.len() < cfg.queries {
                chosen.push(group.remove(0));
            }
        }
    }
    chosen
}

/// The ground conclusions of every rule instance.
fn concluded_atoms(theory: &[Statement]) -> BTreeSet<Atom> {
    let constants = signature(theory).constants;
    let mut out = BTreeSet::new();
    for statement in theory {
        if let Statement::Rule(rule) = statement {
            for value in instances(rule, &constants) {
                out.insert(ground(&rule.head, value).atom);
            }
        }
    }
    out
}

/// The values the rule's variable takes: every constant, or none for a ground rule.
fn instances<'a>(rule: &Rule, constants: &'a [String]) -> Vec<Option<&'a str>> {
    if rule.has_var() {
        constants.iter().map(|c| Some(c.as_str())).collect()
    } else {
        vec![None]
    }
}

fn ground(lit: &Literal, value: Option<&str>) -> Literal {
    match value {
        Some(v) => Literal {
            atom: lit.atom.substitute(v),
            positive: lit.positive,
        },
        None => lit.clone(),
    }
}

/// For each query, the first candidate fact (in sorted order) whose insertion changes its label.
fn flips(
    theory: &[Statement],
    world: World,
    closed: &Closure,
    queries: &[(Literal, Label, usize)],
) -> Vec<(Literal, Literal)> {
    let mut found: Vec<Option<Literal>> = vec![None; queries.len()];
    for fact in insertable_facts(theory, closed) {
        if found.iter().all(Option::is_some) {
            break;
        }
        let mut edited = theory.to_vec();
        edited.push(Statement::Fact(fact.clone()));
        // An insertion that makes the theory unsolvable flips nothing we could label.
        let Ok(edited) = closure(&edited, world) else {
            continue;
        };
        for (slot, (query, label, _)) in found.iter_mut().zip(queries) {
            if slot.is_none() && edited.label(query) != *label {
                *slot = Some(fact.clone());
            }
        }
    }
    queries
        .iter()
        .zip(found)
        .filter_map(|((query, _, _), fact)| Some((query.clone(), fact?)))
        .collect()
}

/// Facts worth inserting, sorted: the single unmet condition of a rule instance (a support), and,
/// in a closed world, the atom under "not" in a rule instance that fires (a defeater).
fn insertable_facts(theory: &[Statement], closed: &Closure) -> BTreeSet<Literal> {
    let constants = signature(theory).constants;
    let mut out = BTreeSet::new();
    for statement in theory {
        let Statement::Rule(rule) = statement else {
            continue;
        };
        for value in instances(rule, &constants) {
            let body: Vec<Literal> = rule.body.iter().map(|l| ground(l, value)).collect();
            let unmet: Vec<&Literal> = body
                .iter()
                .filter(|l| closed.label(l) != Label::True)
                .collect();
            match (unmet.as_slice(), closed.world()) {
                // Only a stated fact can be inserted; a closed-world "not" cannot be met that way.
                ([lit], World::Open) => {
                    out.insert((*lit).clone());
                }
                ([lit], World::Closed) if lit.positive => {
                    out.insert((*lit).clone());
                }
                ([], World::Closed) => {
                    out.extend(body.iter().filter(|l| !l.positive).map(Literal::negated));
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::english::parse_statement;

    fn configs() -> Vec<GenConfig> {
        let mut out = Vec::new();
        for world in [World::Open, World::Closed] {
            for depth in [0, 1, 3, 5] {
                out.push(GenConfig::new(world, depth));
            }
        }
        out
    }

    #[test]
    fn same_seed_same_theory_other_seed_other_theory() {
        for cfg in configs() {
            let a = generate(7, &cfg);
            assert_eq!(a, generate(7, &cfg));
            assert_ne!(a.statements, generate(8, &cfg).statements);
        }
    }

    #[test]
    fn every_sentence_round_trips() {
        for cfg in configs() {
            for seed in 0..20 {
                let g = generate(seed, &cfg);
                for s in &g.statements {
                    assert_eq!(parse_statement(&s.to_english()).as_ref(), Ok(s), "{s}");
                }
                for (q, _, _) in &g.queries {
                    assert_eq!(
                        parse_statement(&q.to_english()),
                        Ok(Statement::Fact(q.clone()))
                    );
                }
            }
        }
    }

    #[test]
    fn labels_and_depths_come_from_the_solver() {
        for cfg in configs() {
            for seed in 0..20 {
                let g = generate(seed, &cfg);
                assert_eq!(g.depth, cfg.depth, "seed {seed}, {cfg:?}");
                let closed = closure(&g.statements, cfg.world).expect("generated theories solve");
                for (q, label, _) in &g.queries {
                    assert_eq!(closed.label(q), *label);
                }
                let at_depth = g
                    .queries
                    .iter()
                    .any(|(_, l, d)| *l == Label::True && *d == cfg.depth);
                assert!(at_depth, "a True query at the requested depth");
                let deep = closed.derived().iter().filter(|(_, d)| *d >= 1).count();
                assert!(deep >= 2, "several derivations: seed {seed}, {cfg:?}");
                let naf = g.statements.iter().any(|s| match s {
                    Statement::Rule(r) => r.body.iter().any(|l| !l.positive),
                    Statement::Fact(_) => false,
                });
                assert!(naf || cfg.world == World::Open || cfg.depth == 0);
            }
        }
    }

    #[test]
    fn label_mix_per_world() {
        for cfg in configs() {
            let mut labels = BTreeSet::new();
            let (mut supported, mut defeated) = (0, 0);
            for seed in 0..20 {
                let g = generate(seed, &cfg);
                labels.extend(g.queries.iter().map(|q| q.1));
                for (q, _) in &g.flips {
                    let before = g.queries.iter().find(|x| &x.0 == q).map(|x| x.1);
                    match before {
                        Some(Label::True) if q.positive => defeated += 1,
                        _ => supported += 1,
                    }
                }
            }
            let want: BTreeSet<Label> = match cfg.world {
                World::Open => Label::ALL.into_iter().collect(),
                World::Closed => [Label::True, Label::False].into_iter().collect(),
            };
            assert_eq!(labels, want, "{cfg:?}");
            assert!(supported > 0, "some queries one fact decides: {cfg:?}");
            if cfg.world == World::Closed && cfg.depth > 0 {
                assert!(defeated > 0, "some derivations one fact defeats: {cfg:?}");
            }
        }
    }
}
