//! The perturbations of one base theory, following the RobustLR tables: pick a rule the query's
//! proof needs, rewrite it, and let the solver label every variant.

use super::{label, Item, SetName};
use crate::logic::english::{signature, Atom, Literal, Rule, Statement, Term};
use crate::logic::Label;
use crate::logic::Semantics;
use crate::rng::Rng;

/// Invented attributes for the unseen predicate `t`: none occurs in ProofWriter, RuleTaker or
/// the generator's vocabulary, and each is checked against the theory's own names.
const FRESH: [&str; 12] = [
    "vorpal",
    "brambly",
    "quaggy",
    "frumpish",
    "glimmery",
    "snarly",
    "tufty",
    "wizened",
    "plinky",
    "murky",
    "sprightly",
    "gnarled",
];

/// Why a base item gave no family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Skip {
    /// The solver refuses the base theory (inconsistent, not stratified, a closed-world conflict).
    Unsolvable,
    /// No rule of the needed shape whose removal changes the label.
    NoNeededRule,
    /// A variant the solver refuses.
    VariantUnsolvable,
}

/// A parsed base item.
pub(super) struct Base<'a> {
    pub texts: &'a [String],
    pub theory: Vec<Statement>,
    pub query_text: &'a str,
    pub query: Literal,
}

/// One variant: the rule at the chosen position replaced (or kept), statements appended.
struct Variant {
    group: &'static str,
    replace: Option<Statement>,
    append: Vec<Statement>,
}

impl Variant {
    fn new(group: &'static str, replace: Option<Rule>, append: Vec<Statement>) -> Variant {
        Variant {
            group,
            replace: replace.map(Statement::Rule),
            append,
        }
    }
}

/// The family of `base` under `set`, base item first, or why there is none.
pub(super) fn family(base: &Base, set: SetName, rng: &mut Rng) -> Result<Vec<Item>, Skip> {
    let semantics = set.semantics();
    let y0 = label(semantics, &base.theory, &base.query).map_err(|_| Skip::Unsolvable)?;
    let needed = needed_rules(base, set, semantics, y0);
    let Some(&(at, ref rule)) = (!needed.is_empty()).then(|| rng.choose(&needed)) else {
        return Err(Skip::NoNeededRule);
    };
    let fresh = fresh_attribute(&base.theory, rng);
    let variants = match set {
        SetName::CCs | SetName::DCs => {
            let (subject, constant) =
                instance(base, at, rule, semantics, y0).ok_or(Skip::NoNeededRule)?;
            operator_contrast(set, rule, &fresh, subject, constant)
        }
        SetName::NCs => negation_contrast(rule, rng),
        SetName::CEs => vec![
            Variant::new("BASE", None, Vec::new()),
            Variant::new(
                "CONTRAPOSITIVE",
                Some(Rule::new(vec![rule.head.negated()], rule.body[0].negated())),
                Vec::new(),
            ),
        ],
        SetName::D1Es => {
            // p→q and p→t (t unseen, so the base keeps its label) ≡ p→q∧t.
            let t = attribute(&fresh, rule.head.atom.args[0].clone(), true);
            let merged = Rule {
                more_heads: vec![t.clone()],
                ..rule.clone()
            };
            vec![
                Variant::new("BASE", None, vec![rule_statement(rule.body.clone(), t)]),
                Variant::new("DISTRIBUTIVE-1", Some(merged), Vec::new()),
            ]
        }
        SetName::D2Es => {
            // p→q and t→q (t unseen) ≡ p∨t→q.
            let t = attribute(&fresh, rule.body[0].atom.args[0].clone(), true);
            let either = Rule {
                body: vec![rule.body[0].clone(), t.clone()],
                disjunctive: true,
                ..rule.clone()
            };
            vec![
                Variant::new(
                    "BASE",
                    None,
                    vec![rule_statement(vec![t], rule.head.clone())],
                ),
                Variant::new("DISTRIBUTIVE-2", Some(either), Vec::new()),
            ]
        }
    };
    variants
        .into_iter()
        .map(|v| item(base, at, v, semantics))
        .collect()
}

fn rule_statement(body: Vec<Literal>, head: Literal) -> Statement {
    Statement::Rule(Rule::new(body, head))
}

/// Rules of the shape `set` rewrites whose removal changes the label: the proof needs them.
fn needed_rules(base: &Base, set: SetName, semantics: Semantics, y0: Label) -> Vec<(usize, Rule)> {
    let single_condition = matches!(set, SetName::DCs | SetName::CEs | SetName::D2Es);
    base.theory
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Statement::Rule(r)
                if !r.disjunctive
                    && r.more_heads.is_empty()
                    && (!single_condition || r.body.len() == 1) =>
            {
                Some((i, r.clone()))
            }
            _ => None,
        })
        .filter(|(i, _)| {
            let mut without = base.theory.clone();
            without.remove(*i);
            label(semantics, &without, &base.query).is_ok_and(|y| y != y0)
        })
        .collect()
}

/// Where the unseen predicate goes: the rule's variable (and, for the added fact, the first
/// constant whose instance of the rule alone keeps the label: the instance the proof uses), or,
/// in a rule without a variable, its first condition's subject.
fn instance(
    base: &Base,
    at: usize,
    rule: &Rule,
    semantics: Semantics,
    y0: Label,
) -> Option<(Term, Term)> {
    if !rule.has_var() {
        let subject = rule.body[0].atom.args[0].clone();
        return Some((subject.clone(), subject));
    }
    signature(&base.theory).constants.into_iter().find_map(|c| {
        let mut theory = base.theory.clone();
        theory[at] = Statement::Rule(ground(rule, &c));
        (label(semantics, &theory, &base.query).ok() == Some(y0))
            .then_some((Term::Var, Term::Const(c)))
    })
}

fn ground(rule: &Rule, value: &str) -> Rule {
    let sub = |l: &Literal| Literal {
        atom: l.atom.substitute(value),
        positive: l.positive,
    };
    Rule {
        body: rule.body.iter().map(sub).collect(),
        head: sub(&rule.head),
        disjunctive: rule.disjunctive,
        more_heads: rule.more_heads.iter().map(sub).collect(),
    }
}

/// Conjunction (C-CS) or disjunction (D-CS) contrast: `t` joins the conditions with "and"/"or";
/// `t` or `¬t` may be stated as a fact, and the conclusion may be negated. The paper's groups:
/// the operator alone (no fact or `t`, conclusion kept) and the operator with a negation
/// (`¬t` stated, or the conclusion negated).
fn operator_contrast(
    set: SetName,
    rule: &Rule,
    fresh: &str,
    subject: Term,
    constant: Term,
) -> Vec<Variant> {
    let (op, op_neg, disjunctive) = match set {
        SetName::DCs => ("DISJ", "DISJ+NEG", true),
        _ => ("CONJ", "CONJ+NEG", false),
    };
    let t = attribute(fresh, subject, true);
    let fact = |positive| Statement::Fact(attribute(fresh, constant.clone(), positive));
    let mut out = vec![Variant::new("BASE", None, Vec::new())];
    // (stated fact: None, Some(t), Some(¬t); conclusion negated)
    let cases = [
        (op, None, false),
        (op, Some(true), false),
        (op_neg, Some(false), false),
        (op_neg, None, true),
        (op_neg, Some(true), true),
        (op_neg, Some(false), true),
    ];
    for (group, stated, negate_head) in cases {
        let mut body = rule.body.clone();
        body.push(t.clone());
        let head = if negate_head {
            rule.head.negated()
        } else {
            rule.head.clone()
        };
        let changed = Rule {
            body,
            head,
            disjunctive,
            more_heads: Vec::new(),
        };
        out.push(Variant::new(
            group,
            Some(changed),
            stated.map(fact).into_iter().collect(),
        ));
    }
    out
}

/// Negation contrast: one condition negated, the conclusion negated, or both.
fn negation_contrast(rule: &Rule, rng: &mut Rng) -> Vec<Variant> {
    let j = rng.below(rule.body.len());
    let with = |negate_condition: bool, negate_head: bool| {
        let mut r = rule.clone();
        if negate_condition {
            r.body[j] = r.body[j].negated();
        }
        if negate_head {
            r.head = r.head.negated();
        }
        r
    };
    vec![
        Variant::new("BASE", None, Vec::new()),
        Variant::new("NEG", Some(with(true, false)), Vec::new()),
        Variant::new("NEG", Some(with(false, true)), Vec::new()),
        Variant::new("NEG", Some(with(true, true)), Vec::new()),
    ]
}

fn attribute(pred: &str, subject: Term, positive: bool) -> Literal {
    Literal {
        atom: Atom {
            pred: pred.to_string(),
            args: vec![subject],
        },
        positive,
    }
}

/// An attribute the theory does not use: one of [`FRESH`] drawn by `rng`, or, should a theory
/// use all twelve, the first unused compound of two.
fn fresh_attribute(theory: &[Statement], rng: &mut Rng) -> String {
    let sig = signature(theory);
    let unused = |a: &String| !sig.attributes.contains(a) && !sig.relations.contains(a);
    let single: Vec<String> = FRESH.iter().map(|s| s.to_string()).filter(unused).collect();
    if !single.is_empty() {
        return rng.choose(&single).clone();
    }
    FRESH
        .iter()
        .flat_map(|a| FRESH.iter().map(move |b| format!("{a}{b}")))
        .find(unused)
        .unwrap_or_else(|| "vorpalvorpalvorpal".to_string())
}

/// The variant's premises (untouched sentences keep their original text) and solver label.
fn item(base: &Base, at: usize, v: Variant, semantics: Semantics) -> Result<Item, Skip> {
    let mut theory = base.theory.clone();
    let mut premises = base.texts.to_vec();
    if let Some(s) = v.replace {
        premises[at] = s.to_english();
        theory[at] = s;
    }
    for s in v.append {
        premises.push(s.to_english());
        theory.push(s);
    }
    let label = label(semantics, &theory, &base.query).map_err(|_| Skip::VariantUnsolvable)?;
    Ok(Item {
        group: v.group.to_string(),
        premises,
        query: base.query_text.to_string(),
        label,
        semantics,
    })
}
