//! Parser of FOLIO first-order annotations.
//!
//! Grammar, loosest binding first: `↔`, `→` (right-associative), `⊕`, `∨`, `∧`, then the prefix
//! forms `¬`, `∀x`, `∃x` and atoms. `t = u` and `t ≠ u` are equality atoms.
//!
//! Identifiers: `Name(args)` is a predicate (or, inside arguments, a function term); a bare
//! identifier in argument position is a variable when an enclosing quantifier binds it and a
//! **constant otherwise** — FOLIO writes constants in lower case (`bonnie`) but also `Jess`, `kO`,
//! `a`, so case says nothing. A name that a quantifier in the same formula binds but that occurs
//! outside that quantifier's scope is an error, not a constant. A bare identifier in formula
//! position is a 0-ary predicate.
//!
//! Quantifier scope follows how FOLIO annotators write it: `∀x (φ) ∧ ψ` scopes over the
//! parenthesised group only (`∀x ∃y (φ)` chains to that group), while `∀x A(x) → B(x)` (no
//! parenthesis after the variable) scopes as far right as possible.
//!
//! Tolerated stray spellings: `^` for `∧`, `⟷` for `↔`, one trailing `.`, spaces between a
//! predicate and its `(`, multi-word names in argument position (`captain america` is read as
//! `captain_america`), and identifier characters `- + . ’ ' _` and non-ASCII letters
//! (`Anti-abortion`, `c++`, `mr.smith`, `Companies’Stocks`, `IgaŚwiątek`). Unbalanced parentheses
//! and other real syntax errors are errors.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Deepest nesting of parentheses, negations, quantifiers and function terms accepted, so that
/// hostile input gets an error instead of overflowing the stack.
pub const MAX_NESTING: usize = 128;

/// A first-order term.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Term {
    Var(String),
    Const(String),
    Fun(String, Vec<Term>),
}

/// A first-order formula. `And`/`Or` are n-ary (an unparenthesised chain is one node).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Formula {
    Atom { pred: String, args: Vec<Term> },
    Eq(Term, Term),
    Not(Box<Formula>),
    And(Vec<Formula>),
    Or(Vec<Formula>),
    Implies(Box<Formula>, Box<Formula>),
    Iff(Box<Formula>, Box<Formula>),
    Xor(Box<Formula>, Box<Formula>),
    Forall(String, Box<Formula>),
    Exists(String, Box<Formula>),
}

/// A syntax error: `position` counts characters (not bytes) from the start of `input`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} at character {position} of {input:?}")]
pub struct FolError {
    pub input: String,
    pub position: usize,
    pub message: String,
}

/// Parses one FOLIO formula; see the module documentation for the accepted syntax.
pub fn parse_formula(s: &str) -> Result<Formula, FolError> {
    let tokens = tokenize(s)?;
    let mut parser = Parser {
        input: s,
        tokens,
        pos: 0,
        bound: Vec::new(),
        quantified: Vec::new(),
        depth: 0,
        constants: Vec::new(),
    };
    let formula = parser.formula()?;
    // `∀x (A(x)) ∧ B(x)`: reading the second `x` as a constant would be a guess.
    let misplaced = (parser.constants.iter()).find(|(name, _)| parser.quantified.contains(name));
    if let Some((name, at)) = misplaced {
        return Err(parser.error_at(
            *at,
            &format!("variable {name} outside its quantifier's scope"),
        ));
    }
    if parser.peek() == Some(&Tok::Dot) {
        parser.pos += 1;
    }
    match parser.tokens.get(parser.pos) {
        None => Ok(formula),
        Some((Tok::RParen, at)) => Err(parser.error_at(*at, "unbalanced ')'")),
        Some((_, at)) => Err(parser.error_at(*at, "unexpected token after a complete formula")),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Forall,
    Exists,
    Not,
    And,
    Or,
    Xor,
    Implies,
    Iff,
    Eq,
    Neq,
    LParen,
    RParen,
    Comma,
    Dot,
    Ident(String),
}

fn symbol_token(c: char) -> Option<Tok> {
    Some(match c {
        '∀' => Tok::Forall,
        '∃' => Tok::Exists,
        '¬' => Tok::Not,
        '∧' | '^' => Tok::And,
        '∨' => Tok::Or,
        '⊕' => Tok::Xor,
        '→' => Tok::Implies,
        '↔' | '⟷' => Tok::Iff,
        '=' => Tok::Eq,
        '≠' => Tok::Neq,
        '(' => Tok::LParen,
        ')' => Tok::RParen,
        ',' => Tok::Comma,
        '.' => Tok::Dot,
        _ => return None,
    })
}

fn is_ident_start(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    is_ident_start(c) || matches!(c, '-' | '+' | '.' | '’' | '\'')
}

/// Tokens with their character positions.
fn tokenize(s: &str) -> Result<Vec<(Tok, usize)>, FolError> {
    let chars: Vec<char> = s.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            // A trailing '.' ends the sentence rather than the name (`Giant(gpt-3)).`).
            while chars[i - 1] == '.' {
                i -= 1;
            }
            tokens.push((Tok::Ident(chars[start..i].iter().collect()), start));
        } else if let Some(tok) = symbol_token(c) {
            tokens.push((tok, i));
            i += 1;
        } else {
            return Err(FolError {
                input: s.to_string(),
                position: i,
                message: format!("unexpected character {c:?}"),
            });
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    input: &'a str,
    tokens: Vec<(Tok, usize)>,
    pos: usize,
    /// Variables bound by enclosing quantifiers, innermost last.
    bound: Vec<String>,
    /// Every quantified variable, and every constant with its position, seen so far.
    quantified: Vec<String>,
    constants: Vec<(String, usize)>,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn error_at(&self, position: usize, message: &str) -> FolError {
        FolError {
            input: self.input.to_string(),
            position,
            message: message.to_string(),
        }
    }

    fn error_here(&self, message: &str) -> FolError {
        let at = self
            .tokens
            .get(self.pos)
            .map_or(self.input.chars().count(), |(_, at)| *at);
        self.error_at(at, message)
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        let hit = self.peek() == Some(tok);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn expect(&mut self, tok: &Tok, what: &str) -> Result<(), FolError> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(self.error_here(&format!("expected {what}")))
        }
    }

    fn formula(&mut self) -> Result<Formula, FolError> {
        let mut left = self.implication()?;
        while self.eat(&Tok::Iff) {
            let right = self.implication()?;
            left = Formula::Iff(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn implication(&mut self) -> Result<Formula, FolError> {
        let left = self.xor()?;
        if self.eat(&Tok::Implies) {
            let right = self.implication()?;
            return Ok(Formula::Implies(Box::new(left), Box::new(right)));
        }
        Ok(left)
    }

    fn xor(&mut self) -> Result<Formula, FolError> {
        let mut left = self.disjunction()?;
        while self.eat(&Tok::Xor) {
            let right = self.disjunction()?;
            left = Formula::Xor(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn disjunction(&mut self) -> Result<Formula, FolError> {
        let mut parts = vec![self.conjunction()?];
        while self.eat(&Tok::Or) {
            parts.push(self.conjunction()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Formula::Or(parts)
        })
    }

    fn conjunction(&mut self) -> Result<Formula, FolError> {
        let mut parts = vec![self.unary()?];
        while self.eat(&Tok::And) {
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Formula::And(parts)
        })
    }

    /// Runs `inner` one nesting level deeper, refusing to go past [`MAX_NESTING`].
    fn nested<T>(&mut self, inner: fn(&mut Self) -> Result<T, FolError>) -> Result<T, FolError> {
        if self.depth >= MAX_NESTING {
            return Err(self.error_here("formula nested too deeply"));
        }
        self.depth += 1;
        let result = inner(self);
        self.depth -= 1;
        result
    }

    fn unary(&mut self) -> Result<Formula, FolError> {
        self.nested(Self::prefixed)
    }

    fn prefixed(&mut self) -> Result<Formula, FolError> {
        match self.peek() {
            Some(Tok::Not) => {
                self.pos += 1;
                Ok(Formula::Not(Box::new(self.unary()?)))
            }
            Some(Tok::Forall | Tok::Exists) => self.quantified(),
            Some(Tok::LParen) => {
                self.pos += 1;
                let inner = self.formula()?;
                self.expect(&Tok::RParen, "')'")?;
                Ok(inner)
            }
            Some(Tok::Ident(_)) => self.atom(),
            _ => Err(self.error_here("expected a formula")),
        }
    }

    fn quantified(&mut self) -> Result<Formula, FolError> {
        let universal = self.peek() == Some(&Tok::Forall);
        self.pos += 1;
        let var = match self.peek() {
            Some(Tok::Ident(name)) => name.clone(),
            _ => return Err(self.error_here("expected a variable after the quantifier")),
        };
        self.pos += 1;
        self.bound.push(var.clone());
        self.quantified.push(var.clone());
        // Narrow scope over a following group or quantifier, wide scope otherwise (module docs).
        let body = match self.peek() {
            Some(Tok::LParen | Tok::Forall | Tok::Exists) => self.unary(),
            _ => self.formula(),
        };
        self.bound.pop();
        let body = Box::new(body?);
        Ok(if universal {
            Formula::Forall(var, body)
        } else {
            Formula::Exists(var, body)
        })
    }

    /// A predicate atom, a 0-ary atom, or an equation between terms.
    fn atom(&mut self) -> Result<Formula, FolError> {
        let start = self.pos;
        let (name, args) = self.application()?;
        if matches!(self.peek(), Some(Tok::Eq | Tok::Neq)) {
            let negated = self.peek() == Some(&Tok::Neq);
            // Re-read the left side as a term now that we know it is one.
            self.pos = start;
            let left = self.term()?;
            self.pos += 1;
            let right = self.term()?;
            let eq = Formula::Eq(left, right);
            return Ok(if negated {
                Formula::Not(Box::new(eq))
            } else {
                eq
            });
        }
        Ok(Formula::Atom {
            pred: name,
            args: args.unwrap_or_default(),
        })
    }

    /// `name` or `name(t, ...)`; the argument list is `None` when there are no parentheses.
    fn application(&mut self) -> Result<(String, Option<Vec<Term>>), FolError> {
        let name = match self.peek() {
            Some(Tok::Ident(name)) => name.clone(),
            _ => return Err(self.error_here("expected a name")),
        };
        self.pos += 1;
        if !self.eat(&Tok::LParen) {
            return Ok((name, None));
        }
        let mut args = vec![self.nested(Self::term)?];
        while self.eat(&Tok::Comma) {
            args.push(self.nested(Self::term)?);
        }
        self.expect(&Tok::RParen, "',' or ')' in an argument list")?;
        Ok((name, Some(args)))
    }

    fn term(&mut self) -> Result<Term, FolError> {
        let at = self.tokens.get(self.pos).map_or(0, |(_, at)| *at);
        let (mut name, args) = self.application()?;
        if args.is_none() {
            // A multi-word name (`ComeFrom(x, dc universe)`) becomes one: `dc_universe`.
            while let Some(Tok::Ident(word)) = self.peek() {
                name = format!("{name}_{word}");
                self.pos += 1;
            }
        }
        Ok(match args {
            Some(args) => Term::Fun(name, args),
            None if self.bound.contains(&name) => Term::Var(name),
            None => {
                self.constants.push((name.clone(), at));
                Term::Const(name)
            }
        })
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Var(name) | Term::Const(name) => f.write_str(name),
            Term::Fun(name, args) => write!(f, "{name}({})", join(args, ", ")),
        }
    }
}

fn join<T: fmt::Display>(items: &[T], sep: &str) -> String {
    items
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

/// Wraps binary and n-ary formulas in parentheses so that any nesting prints unambiguously.
struct Operand<'a>(&'a Formula);

impl fmt::Display for Operand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Formula::And(_)
            | Formula::Or(_)
            | Formula::Implies(..)
            | Formula::Iff(..)
            | Formula::Xor(..)
            | Formula::Eq(..) => write!(f, "({})", self.0),
            _ => write!(f, "{}", self.0),
        }
    }
}

/// Canonical text: parses back to an equal `Formula`. Hand-built formulas round-trip too as long
/// as every name is an identifier and no constant shares its name with a quantified variable;
/// the parser never produces anything else.
impl fmt::Display for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Formula::Atom { pred, args } if args.is_empty() => f.write_str(pred),
            Formula::Atom { pred, args } => write!(f, "{pred}({})", join(args, ", ")),
            Formula::Eq(l, r) => write!(f, "{l} = {r}"),
            Formula::Not(inner) => write!(f, "¬{}", Operand(inner)),
            Formula::And(parts) => write_chain(f, parts, " ∧ "),
            Formula::Or(parts) => write_chain(f, parts, " ∨ "),
            Formula::Implies(l, r) => write!(f, "{} → {}", Operand(l), Operand(r)),
            Formula::Iff(l, r) => write!(f, "{} ↔ {}", Operand(l), Operand(r)),
            Formula::Xor(l, r) => write!(f, "{} ⊕ {}", Operand(l), Operand(r)),
            Formula::Forall(v, body) => write_quantified(f, '∀', v, body),
            Formula::Exists(v, body) => write_quantified(f, '∃', v, body),
        }
    }
}

fn write_chain(f: &mut fmt::Formatter<'_>, parts: &[Formula], sep: &str) -> fmt::Result {
    let shown: Vec<String> = parts.iter().map(|p| Operand(p).to_string()).collect();
    f.write_str(&shown.join(sep))
}

fn write_quantified(f: &mut fmt::Formatter<'_>, q: char, var: &str, body: &Formula) -> fmt::Result {
    match body {
        Formula::Forall(..) | Formula::Exists(..) => write!(f, "{q}{var} {body}"),
        _ => write!(f, "{q}{var} ({body})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atom(pred: &str, args: &[Term]) -> Formula {
        Formula::Atom {
            pred: pred.to_string(),
            args: args.to_vec(),
        }
    }
    fn c(name: &str) -> Term {
        Term::Const(name.to_string())
    }
    fn v(name: &str) -> Term {
        Term::Var(name.to_string())
    }
    fn p(s: &str) -> Formula {
        parse_formula(s).unwrap_or_else(|e| panic!("{e}"))
    }
    fn roundtrip(s: &str) {
        let f = p(s);
        assert_eq!(p(&f.to_string()), f, "{s} printed as {f}");
    }

    #[test]
    fn constants_and_variables() {
        let f = p("∀x (Likes(x, bonnie))");
        let body = atom("Likes", &[v("x"), c("bonnie")]);
        assert_eq!(f, Formula::Forall("x".into(), Box::new(body)));
        // Unbound names are constants, whatever their case or length.
        assert_eq!(p("Luxury(Jess)"), atom("Luxury", &[c("Jess")]));
        assert_eq!(p("Grade(a)"), atom("Grade", &[c("a")]));
    }

    #[test]
    fn precedence() {
        let (a, b, cc) = (
            atom("A", &[c("j")]),
            atom("B", &[c("j")]),
            atom("C", &[c("j")]),
        );
        let and = |x: &Formula, y: &Formula| Formula::And(vec![x.clone(), y.clone()]);
        let or = |x: &Formula, y: &Formula| Formula::Or(vec![x.clone(), y.clone()]);
        let imp = |x: Formula, y: Formula| Formula::Implies(Box::new(x), Box::new(y));
        let xor = |x: Formula, y: Formula| Formula::Xor(Box::new(x), Box::new(y));
        assert_eq!(p("A(j) ∧ B(j) ∨ C(j)"), or(&and(&a, &b), &cc));
        assert_eq!(p("A(j) ∨ B(j) → C(j)"), imp(or(&a, &b), cc.clone()));
        assert_eq!(
            p("A(j) ⊕ B(j) → C(j)"),
            imp(xor(a.clone(), b.clone()), cc.clone())
        );
        assert_eq!(
            p("C(j) → A(j) ⊕ B(j)"),
            imp(cc.clone(), xor(a.clone(), b.clone()))
        );
        assert_eq!(p("A(j) ∨ B(j) ⊕ C(j)"), xor(or(&a, &b), cc.clone()));
        assert_eq!(
            p("A(j) → B(j) → C(j)"),
            imp(a.clone(), imp(b.clone(), cc.clone()))
        );
        assert_eq!(
            p("A(j) ⊕ B(j) ⊕ C(j)"),
            xor(xor(a.clone(), b.clone()), cc.clone())
        );
        assert_eq!(
            p("¬A(j) ∧ B(j)"),
            and(&Formula::Not(Box::new(a.clone())), &b)
        );
        let iff = Formula::Iff(Box::new(and(&a, &b)), Box::new(cc.clone()));
        assert_eq!(p("A(j) ∧ B(j) ↔ C(j)"), iff);
    }

    #[test]
    fn quantifier_scope() {
        // A parenthesised body ends the scope, so `x` in `B(x)` is out of scope: an error.
        let e = parse_formula("∀x (A(x)) ∧ B(x)").unwrap_err();
        assert_eq!(e.position, 14);
        let e = parse_formula("∀x ∃y (R(x, y)) → S(x, y)").unwrap_err();
        assert!(e.message.contains("variable x"), "{e}");
        let f = p("∀x (A(x)) ∧ B(j)");
        let Formula::And(parts) = f else {
            panic!("{f:?}")
        };
        assert_eq!(parts[1], atom("B", &[c("j")]));
        // Without a parenthesis the scope extends to the right.
        let f = p("∀x A(x) → B(x)");
        let imp = Formula::Implies(
            Box::new(atom("A", &[v("x")])),
            Box::new(atom("B", &[v("x")])),
        );
        assert_eq!(f, Formula::Forall("x".into(), Box::new(imp)));
        // Chained quantifiers share the group.
        let f = p("∀x ∃y (R(x, y)) ∧ S(j)");
        let Formula::And(parts) = &f else {
            panic!("{f:?}")
        };
        let r = atom("R", &[v("x"), v("y")]);
        let exists = Formula::Exists("y".into(), Box::new(r));
        assert_eq!(parts[0], Formula::Forall("x".into(), Box::new(exists)));
        // ¬ applies to the quantified formula.
        let f = p("¬∃x (A(x) ∧ B(x))");
        assert!(matches!(f, Formula::Not(ref q) if matches!(**q, Formula::Exists(..))));
        // Inner ∃ with its own group inside an implication (FOLIO train line 18).
        let f = p("∀x ∀y (∃z (Know(x, z) ∧ Know(y, z)) → Communicate(x, y))");
        let Formula::Forall(_, inner) = f else {
            panic!()
        };
        let Formula::Forall(_, body) = *inner else {
            panic!()
        };
        assert!(matches!(*body, Formula::Implies(ref l, _) if matches!(**l, Formula::Exists(..))));
    }

    #[test]
    fn stray_symbols() {
        assert_eq!(p("A(j) ^ B(j)"), p("A(j) ∧ B(j)"));
        assert_eq!(p("A(j) ⟷ B(j)"), p("A(j) ↔ B(j)"));
        assert_eq!(p("A(j) → B(j)."), p("A(j) → B(j)"));
        assert_eq!(p("Eel (seaEel)"), atom("Eel", &[c("seaEel")]));
        assert_eq!(
            p("Anti-abortion(l-2021)"),
            atom("Anti-abortion", &[c("l-2021")])
        );
        assert_eq!(
            p("WrittenIn(x, c++)"),
            atom("WrittenIn", &[c("x"), c("c++")])
        );
        assert_eq!(p("Visited(mr.smith)"), atom("Visited", &[c("mr.smith")]));
        assert_eq!(
            p("Companies’Stocks(kO)"),
            atom("Companies’Stocks", &[c("kO")])
        );
        assert_eq!(
            p("LostToIgaŚwiątek(x)"),
            atom("LostToIgaŚwiątek", &[c("x")])
        );
        assert_eq!(p(" Giant(gpt-3). ").to_string(), "Giant(gpt-3)");
        let name = atom("ComeFrom", &[c("captain_america"), c("dc_universe")]);
        assert_eq!(p("ComeFrom(captain america, dc universe)"), name);
        assert!(parse_formula("Country(x) Nearby(x)").is_err());
    }

    #[test]
    fn equality_and_functions() {
        let f = p("∀x (f(x) = a ∨ g(x, b) ≠ x)");
        let fx = Term::Fun("f".into(), vec![v("x")]);
        let gx = Term::Fun("g".into(), vec![v("x"), c("b")]);
        let eq1 = Formula::Eq(fx, c("a"));
        let neq = Formula::Not(Box::new(Formula::Eq(gx, v("x"))));
        assert_eq!(
            f,
            Formula::Forall("x".into(), Box::new(Formula::Or(vec![eq1, neq])))
        );
    }

    #[test]
    fn syntax_errors_are_located() {
        let e = parse_formula("¬WorkAtPool(mary))").unwrap_err();
        assert_eq!(e.position, 17);
        assert!(e.to_string().contains("character 17"), "{e}");
        let e = parse_formula("∀x (Road(x) → (A(x) ∨ B(x))").unwrap_err();
        assert_eq!(e.position, 27);
        assert!(parse_formula("").is_err());
        assert!(parse_formula("A(x) ∧").is_err());
        assert!(parse_formula("A(x) B(x)").is_err());
        assert!(parse_formula("A(x) # B(x)").is_err());
        assert!(parse_formula("∀ (A(x))").is_err());
        assert!(parse_formula("A(x,)").is_err());
        let deep = format!("{}A(j){}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse_formula(&deep)
            .unwrap_err()
            .message
            .contains("nested too deeply"));
        let deep = format!("P({}j{})", "f(".repeat(100_000), ")".repeat(100_000));
        assert!(parse_formula(&deep).is_err());
        assert!(parse_formula(&format!("{}A(j)", "¬".repeat(100_000))).is_err());
        let fine = format!("{}A(j){}", "(".repeat(100), ")".repeat(100));
        assert!(parse_formula(&fine).is_ok());
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "∀x (TalentShows(x) → Engaged(x))",
            "(Engaged(bonnie) ∧ Students(bonnie)) ⊕ (¬Engaged(bonnie) ∧ ¬Students(bonnie))",
            "∀x ∀y (GoodGuy(x) ∧ Fights(x, y) ⟷ BadGuy(y) ∧ Fights(y, x))",
            "¬(∃x (A(x)) ∨ ∀y ∃z (R(y, z))) ∧ P",
            "A(j) ⊕ B(j) ⊕ (C(j) ⊕ D(j))",
            "(A(j) ∧ B(j)) ∧ C(j) → (D(j) → E(j)) → F(j)",
            "∀x (f(x) = a ∨ ¬(x = b))",
            "∀x A(x) → ∃y (R(x, y) ∧ ∀z (S(z)))",
        ] {
            roundtrip(s);
        }
    }
}
