//! The ProofWriter/RuleTaker English grammar: sentences to facts and rules, and back.
//!
//! Facts: "Bob is cold.", "The bear is not red.", "Tweety is a penguin.", "The lamp is shining.",
//! "Tweety cannot fly.", "The bear chases the cat.", "The circuit does not have the power
//! switch." Rules: "If <condition> and ... then <conclusion>.", "Red, cold things are round.",
//! "All quiet people are not rough.", "If someone is a penguin and injured then they cannot fly."
//! A rule has at most one variable, written something/someone (first mention) and it/they (later
//! mentions). Verbs are stored in their base form ("chase", "have"; see [`super::verbs`]) so that
//! "chases", "does not chase" and "they chase" are one predicate. A class noun is stored with its
//! article ("a penguin") and an ability with its modal ("can fly"), so neither meets an attribute
//! of the same spelling and both render as written.
//!
//! Anything else is refused, and so is what the grammar could misread: a subject that does not
//! agree with its verb ("Bob are red", "they is red" — a capitalised plural like "Penguins are
//! birds" would otherwise pass for a name), an -s word after "are" (a plural noun, "they are
//! birds", would otherwise pass for an attribute), adverbs and modals inside an entity ("the bear
//! never" would otherwise be an entity that chases), verb forms the morphology cannot invert,
//! and an indefinite entity ("The circuit has a switch": which switch is "the switch"?).

use super::verbs;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// An argument: a named entity, kept as written ("Bob", "the bald eagle"), or the rule variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Term {
    Const(String),
    Var,
}

/// `pred(args)`: one argument for an attribute ("cold"), two for a relation ("chase").
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Atom {
    pub pred: String,
    pub args: Vec<Term>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Literal {
    pub atom: Atom,
    pub positive: bool,
}

/// `body[0] and body[1] ... -> head`, read with one implicit variable. RobustLR's forms add
/// "or" between the conditions and "and" between conclusions; the extra fields are left out of
/// the serialised form when unused, so every ProofWriter/RuleTaker rule encodes as before.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rule {
    pub body: Vec<Literal>,
    pub head: Literal,
    /// The conditions are joined by "or" (any one fires the rule) rather than "and".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disjunctive: bool,
    /// Further conclusions after `head`: "then A and B" concludes both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_heads: Vec<Literal>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Statement {
    Fact(Literal),
    Rule(Rule),
}

/// A sentence outside the grammar. `index` is the sentence's position in its theory, if any.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}cannot parse \"{sentence}\": {message}", index.map(|i| format!("sentence {}: ", i + 1)).unwrap_or_default())]
pub struct ParseError {
    pub sentence: String,
    pub index: Option<usize>,
    pub message: String,
}

/// The names a theory uses, each list sorted and without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// Entities as written in the theory ("Bob", "the bald eagle").
    pub constants: Vec<String>,
    /// Unary predicates ("cold").
    pub attributes: Vec<String>,
    /// Binary predicates in base form ("chase").
    pub relations: Vec<String>,
}

const VAR_WORDS: [&str; 5] = ["something", "someone", "it", "they", "them"];
const KEYWORDS: [&str; 17] = [
    "if", "then", "and", "or", "is", "are", "not", "does", "do", "the", "all", "things", "people",
    "a", "an", "can", "cannot",
];
/// Words that cannot be part of an entity's name: without this, "The bear never chases the
/// cat." would read as the entity "the bear never" chasing the cat.
const NOT_IN_ENTITY: [&str; 17] = [
    "no",
    "never",
    "always",
    "also",
    "often",
    "sometimes",
    "usually",
    "still",
    "only",
    "could",
    "will",
    "would",
    "should",
    "may",
    "might",
    "must",
    "to",
];

impl Term {
    pub fn is_var(&self) -> bool {
        matches!(self, Term::Var)
    }
}

impl Atom {
    pub fn is_ground(&self) -> bool {
        !self.args.iter().any(Term::is_var)
    }

    /// The atom with the variable replaced by `value`.
    pub fn substitute(&self, value: &str) -> Atom {
        let args = self
            .args
            .iter()
            .map(|t| match t {
                Term::Var => Term::Const(value.to_string()),
                c => c.clone(),
            })
            .collect();
        Atom {
            pred: self.pred.clone(),
            args,
        }
    }
}

impl Literal {
    pub fn negated(&self) -> Literal {
        Literal {
            atom: self.atom.clone(),
            positive: !self.positive,
        }
    }

    /// The literal as a fact sentence ("The bear does not chase the cat.").
    pub fn to_english(&self) -> String {
        sentence(&render_literal(self, &mut Mentions::default()))
    }
}

impl Rule {
    /// A ProofWriter rule: conditions joined by "and", one conclusion.
    pub fn new(body: Vec<Literal>, head: Literal) -> Rule {
        Rule {
            body,
            head,
            disjunctive: false,
            more_heads: Vec::new(),
        }
    }

    /// Every conclusion: `head`, then `more_heads`.
    pub fn heads(&self) -> impl Iterator<Item = &Literal> {
        std::iter::once(&self.head).chain(&self.more_heads)
    }

    pub fn literals(&self) -> impl Iterator<Item = &Literal> {
        self.body.iter().chain(self.heads())
    }

    pub fn has_var(&self) -> bool {
        self.literals()
            .any(|l| l.atom.args.iter().any(Term::is_var))
    }
}

impl Statement {
    /// The canonical sentence, with its final period: rules always read "If ... then ...".
    pub fn to_english(&self) -> String {
        match self {
            Statement::Fact(l) => l.to_english(),
            Statement::Rule(r) => {
                let mut mentions = Mentions::default();
                let body: Vec<String> = r
                    .body
                    .iter()
                    .map(|l| render_literal(l, &mut mentions))
                    .collect();
                let heads: Vec<String> = r
                    .heads()
                    .map(|l| render_literal(l, &mut mentions))
                    .collect();
                let joint = if r.disjunctive { " or " } else { " and " };
                sentence(&format!(
                    "If {} then {}",
                    body.join(joint),
                    heads.join(" and ")
                ))
            }
        }
    }

    pub fn literals(&self) -> Vec<&Literal> {
        match self {
            Statement::Fact(l) => vec![l],
            Statement::Rule(r) => r.literals().collect(),
        }
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_english())
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_english())
    }
}

/// The constants, attributes and relations of a theory.
pub fn signature(theory: &[Statement]) -> Signature {
    let mut constants = BTreeSet::new();
    let mut attributes = BTreeSet::new();
    let mut relations = BTreeSet::new();
    for lit in theory.iter().flat_map(Statement::literals) {
        for arg in &lit.atom.args {
            if let Term::Const(c) = arg {
                constants.insert(c.clone());
            }
        }
        let set = if lit.atom.args.len() == 1 {
            &mut attributes
        } else {
            &mut relations
        };
        set.insert(lit.atom.pred.clone());
    }
    Signature {
        constants: constants.into_iter().collect(),
        attributes: attributes.into_iter().collect(),
        relations: relations.into_iter().collect(),
    }
}

/// Splits a context into sentences at a period followed by whitespace or the end; each keeps
/// its period.
pub fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let at_break = chars.get(k + 1).is_none_or(|&(_, n)| n.is_whitespace());
        if c == '.' && at_break {
            push_trimmed(&mut out, &text[start..=i]);
            start = i + 1;
        }
    }
    push_trimmed(&mut out, &text[start..]);
    out
}

fn push_trimmed(out: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
}

/// Parses every sentence of a theory; the first sentence outside the grammar is an error.
pub fn parse_theory(text: &str) -> Result<Vec<Statement>, ParseError> {
    split_sentences(text)
        .iter()
        .enumerate()
        .map(|(i, s)| {
            parse_statement(s).map_err(|e| ParseError {
                index: Some(i),
                ..e
            })
        })
        .collect()
}

/// A ground fact sentence used as a question ("The cat is not round.").
pub fn parse_query(sentence: &str) -> Result<Literal, ParseError> {
    match parse_statement(sentence)? {
        Statement::Fact(l) => Ok(l),
        Statement::Rule(_) => Err(error(sentence, "a query must be a fact, not a rule")),
    }
}

/// Parses one fact or rule, with or without its final period.
pub fn parse_statement(sentence: &str) -> Result<Statement, ParseError> {
    let text = sentence.trim();
    let text = text.strip_suffix('.').unwrap_or(text);
    let toks = tokenize(text);
    parse_tokens(&toks).map_err(|m| error(sentence, &m))
}

fn error(sentence: &str, message: &str) -> ParseError {
    ParseError {
        sentence: sentence.trim().to_string(),
        index: None,
        message: message.to_string(),
    }
}

/// Words, with commas as tokens of their own.
fn tokenize(text: &str) -> Vec<String> {
    let mut toks = Vec::new();
    for word in text.split_whitespace() {
        match word.strip_suffix(',') {
            Some(w) => {
                if !w.is_empty() {
                    toks.push(w.to_string());
                }
                toks.push(",".to_string());
            }
            None => toks.push(word.to_string()),
        }
    }
    toks
}

fn lower(tok: &str) -> String {
    tok.to_ascii_lowercase()
}

fn is_kw(tok: &str, kw: &str) -> bool {
    tok.eq_ignore_ascii_case(kw)
}

fn parse_tokens(toks: &[String]) -> Result<Statement, String> {
    let first = toks.first().ok_or("empty sentence")?;
    if is_kw(first, "if") {
        return parse_if(&toks[1..]).map(Statement::Rule);
    }
    if is_kw(first, "all") {
        return parse_generic(&toks[1..]).map(Statement::Rule);
    }
    if generic_noun_at(toks).is_some() {
        return parse_generic(toks).map(Statement::Rule);
    }
    let lit = parse_clause(toks)?;
    if !lit.atom.is_ground() {
        return Err("a fact cannot mention something/someone".into());
    }
    Ok(Statement::Fact(lit))
}

/// Position of "things"/"people" followed by "are": the mark of "Red, cold things are round".
fn generic_noun_at(toks: &[String]) -> Option<usize> {
    toks.windows(2)
        .position(|w| (is_kw(&w[0], "things") || is_kw(&w[0], "people")) && is_kw(&w[1], "are"))
}

/// "red , cold things are [not] round" → red(x) ∧ cold(x) → [¬]round(x).
fn parse_generic(toks: &[String]) -> Result<Rule, String> {
    let noun = generic_noun_at(toks).ok_or("expected \"... things are ...\"")?;
    let adjectives = &toks[..noun];
    if adjectives.is_empty() {
        return Err("expected an attribute before \"things\"/\"people\"".into());
    }
    let mut body = Vec::new();
    for (k, tok) in adjectives.iter().enumerate() {
        // Attributes alternate with commas: "red , cold" (a comma is optional: "big red").
        if tok == "," {
            if k == 0 || k + 1 == adjectives.len() || adjectives[k - 1] == "," {
                return Err("misplaced comma in the attribute list".into());
            }
            continue;
        }
        body.push(attribute(Term::Var, tok, true)?);
    }
    let (positive, pred) = complement(&toks[noun + 2..], Copula::Are, false)?;
    Ok(Rule::new(body, unary(Term::Var, pred, positive)))
}

/// Which form of "to be" a complement follows.
#[derive(Clone, Copy, PartialEq)]
enum Copula {
    Is,
    Are,
    /// An elided clause ("... is red and not big"): its verb may have been "are".
    Elided,
}

/// What follows "is"/"are": `[not] attribute` or `[not] a/an class-noun` (when `nouns`), as
/// (positive, predicate).
fn complement(toks: &[String], copula: Copula, nouns: bool) -> Result<(bool, String), String> {
    let (positive, rest) = match toks {
        [n, rest @ ..] if is_kw(n, "not") => (false, rest),
        _ => (true, toks),
    };
    match rest {
        [w] if is_word(w) => {
            let w = lower(w);
            if copula != Copula::Is && w.ends_with('s') {
                return Err(format!(
                    "\"{w}\" after \"are\" may be a plural noun; the grammar takes attributes and \
                     \"a\"/\"an\" with a singular class noun"
                ));
            }
            Ok((positive, w))
        }
        [article, noun] if nouns && (is_kw(article, "a") || is_kw(article, "an")) => {
            class_noun(article, noun).map(|pred| (positive, pred))
        }
        _ => Err(format!(
            "expected an attribute or \"a\"/\"an\" and a class noun, found \"{}\"",
            toks.join(" ")
        )),
    }
}

/// "a penguin", "an ostrich": one lowercase word with the article its first letter calls for,
/// so that "a ostrich" cannot become a second predicate beside "an ostrich".
fn class_noun(article: &str, noun: &str) -> Result<String, String> {
    if !is_adjective(noun) {
        return Err(format!("\"{noun}\" is not a class noun"));
    }
    let want = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    if !is_kw(article, want) {
        return Err(format!(
            "write \"{want} {noun}\": the grammar takes \"an\" before a vowel letter and \"a\" \
             otherwise"
        ));
    }
    Ok(format!("{want} {noun}"))
}

fn parse_if(toks: &[String]) -> Result<Rule, String> {
    let then = toks
        .iter()
        .position(|t| is_kw(t, "then"))
        .ok_or("expected \"then\"")?;
    if toks[then + 1..].iter().any(|t| is_kw(t, "then")) {
        return Err("more than one \"then\"".into());
    }
    let condition = &toks[..then];
    let has = |kw| condition.iter().any(|t| is_kw(t, kw));
    // Mixed "and"/"or" would need brackets the grammar does not have.
    if has("and") && has("or") {
        return Err("a condition cannot mix \"and\" with \"or\"".into());
    }
    let disjunctive = has("or");
    let body = conjuncts(condition, if disjunctive { "or" } else { "and" })?;
    if body.is_empty() {
        return Err("a rule needs a condition".into());
    }
    let mut heads = conjuncts(&toks[then + 1..], "and")?.into_iter();
    let head = heads.next().ok_or("empty condition or conclusion")?;
    Ok(Rule {
        body,
        head,
        disjunctive,
        more_heads: heads.collect(),
    })
}

/// Clauses separated by `joint`; "is red and [not] cold" shares the previous subject.
fn conjuncts(toks: &[String], joint: &str) -> Result<Vec<Literal>, String> {
    let mut out: Vec<Literal> = Vec::new();
    for clause in toks.split(|t| is_kw(t, joint)) {
        let lit = match out.last() {
            Some(prev) if prev.atom.args.len() == 1 && is_elided(clause) => {
                let (positive, pred) = complement(clause, Copula::Elided, true)?;
                unary(prev.atom.args[0].clone(), pred, positive)
            }
            _ => parse_clause(clause)?,
        };
        out.push(lit);
    }
    Ok(out)
}

/// A clause that is only a complement ("[not] red", "[not] a penguin"), continuing the
/// previous clause's subject.
fn is_elided(clause: &[String]) -> bool {
    let rest = match clause {
        [n, rest @ ..] if is_kw(n, "not") => rest,
        _ => clause,
    };
    match rest {
        [w] => is_adjective(w),
        [article, noun] => (is_kw(article, "a") || is_kw(article, "an")) && is_adjective(noun),
        _ => false,
    }
}

/// One literal: "X is [not] A", "X is [not] a N", "they are [not] A", "X does not V Y",
/// "they do not V Y", "X Vs Y", "they V Y".
fn parse_clause(toks: &[String]) -> Result<Literal, String> {
    if toks.is_empty() {
        return Err("empty condition or conclusion".into());
    }
    if let Some(i) = toks.iter().position(|t| is_kw(t, "is") || is_kw(t, "are")) {
        let copula = if is_kw(&toks[i], "are") {
            Copula::Are
        } else {
            Copula::Is
        };
        let subject = parse_subject(&toks[..i], copula == Copula::Are, &toks[i])?;
        let (positive, pred) = complement(&toks[i + 1..], copula, true)?;
        return Ok(unary(subject, pred, positive));
    }
    if let Some(i) = toks
        .windows(2)
        .position(|w| (is_kw(&w[0], "does") || is_kw(&w[0], "do")) && is_kw(&w[1], "not"))
    {
        let subject = parse_subject(&toks[..i], is_kw(&toks[i], "do"), &toks[i])?;
        let verb = toks.get(i + 2).ok_or("expected a verb after \"not\"")?;
        if !is_adjective(verb) {
            return Err(format!("\"{verb}\" is not a verb"));
        }
        verbs::check_base(verb)?;
        return relation(subject, verb, &toks[i + 3..], false);
    }
    if let Some(i) = toks
        .iter()
        .position(|t| is_kw(t, "can") || is_kw(t, "cannot"))
    {
        return ability(&toks[..i], is_kw(&toks[i], "can"), &toks[i + 1..]);
    }
    parse_positive_relation(toks)
}

/// "X can V" / "X cannot V" with one intransitive verb: the attribute "can V" and its negation.
/// "can" shows no number, so a subject ending in -s is refused: "Birds can fly" would otherwise
/// make a name of "Birds" ("the birds", an entity).
fn ability(subject: &[String], positive: bool, rest: &[String]) -> Result<Literal, String> {
    let term = parse_term(subject)?;
    let plural_looking = subject.last().is_some_and(|w| lower(w).ends_with('s'));
    if plural_looking || matches!(subject, [t] if is_kw(t, "them")) {
        return Err(format!(
            "\"{}\" may be plural; \"can\" takes a singular subject or \"they\"",
            subject.join(" ")
        ));
    }
    match rest {
        [verb] if is_adjective(verb) => {
            verbs::check_base(verb)?;
            Ok(unary(term, format!("{ABILITY}{verb}"), positive))
        }
        _ => Err(
            "\"can\"/\"cannot\" take one verb and nothing after it (\"they cannot fly\")".into(),
        ),
    }
}

/// "X Vs Y", "they V Y": the verb is the word right before the first place where an object term
/// begins. No later split can read too: its subject would have to contain that term's first
/// word ("the", a name or a pronoun), which no entity contains and no verb is.
fn parse_positive_relation(toks: &[String]) -> Result<Literal, String> {
    for v in 1..toks.len().saturating_sub(1) {
        let (Ok(subject), true) = (parse_term(&toks[..v]), starts_term(&toks[v + 1])) else {
            continue;
        };
        let verb = &toks[v];
        if !is_adjective(verb) {
            return Err(format!("\"{verb}\" is not a verb"));
        }
        let base = match &toks[..v] {
            [t] if is_kw(t, "they") => verbs::check_base(verb).map(|()| verb.clone())?,
            [t] if is_kw(t, "them") => return Err("\"them\" cannot be a subject".into()),
            _ => verbs::base_of_third_person(verb)?,
        };
        return relation(subject, &base, &toks[v + 1..], true);
    }
    Err(format!("not a fact or condition: \"{}\"", toks.join(" ")))
}

/// The subject of "is"/"are"/"does"/"do", which must agree with it: "they" takes the plural
/// verb, every other subject the singular (the grammar has no plural entities).
fn parse_subject(toks: &[String], plural_verb: bool, verb: &str) -> Result<Term, String> {
    let term = parse_term(toks)?;
    let plural = matches!(toks, [t] if is_kw(t, "they"));
    if matches!(toks, [t] if is_kw(t, "them")) || plural != plural_verb {
        return Err(format!(
            "\"{}\" does not agree with \"{verb}\"",
            toks.join(" ")
        ));
    }
    Ok(term)
}

fn starts_term(tok: &str) -> bool {
    is_kw(tok, "the") || VAR_WORDS.iter().any(|v| is_kw(tok, v)) || is_name(tok)
}

/// `verb` is a base form already checked by [`verbs`].
fn relation(
    subject: Term,
    verb: &str,
    object: &[String],
    positive: bool,
) -> Result<Literal, String> {
    if !is_word(verb) {
        return Err(format!("\"{verb}\" is not a verb"));
    }
    let object = parse_term(object)?;
    Ok(Literal {
        atom: Atom {
            pred: verb.to_string(),
            args: vec![subject, object],
        },
        positive,
    })
}

fn attribute(subject: Term, adj: &str, positive: bool) -> Result<Literal, String> {
    if !is_word(adj) {
        return Err(format!("\"{adj}\" is not an attribute"));
    }
    Ok(unary(subject, lower(adj), positive))
}

fn unary(subject: Term, pred: String, positive: bool) -> Literal {
    Literal {
        atom: Atom {
            pred,
            args: vec![subject],
        },
        positive,
    }
}

/// A lowercase-able plain word that is not part of the grammar's own vocabulary.
fn is_word(tok: &str) -> bool {
    !tok.is_empty()
        && tok.chars().all(|c| c.is_ascii_alphabetic())
        && !KEYWORDS.iter().any(|k| is_kw(tok, k))
        && !VAR_WORDS.iter().any(|k| is_kw(tok, k))
}

fn is_adjective(tok: &str) -> bool {
    is_word(tok) && tok.chars().all(|c| c.is_ascii_lowercase())
}

/// A proper name: one capitalised word ("Bob").
fn is_name(tok: &str) -> bool {
    is_word(tok) && tok.chars().next().is_some_and(|c| c.is_ascii_uppercase())
}

/// "something"/"it"/..., "Bob", or "the" followed by lowercase words ("the bald eagle").
fn parse_term(toks: &[String]) -> Result<Term, String> {
    match toks {
        [] => Err("missing entity".into()),
        [t] if VAR_WORDS.iter().any(|v| is_kw(t, v)) => Ok(Term::Var),
        [t] if is_name(t) => Ok(Term::Const(t.clone())),
        [the, rest @ ..] if is_kw(the, "the") && !rest.is_empty() => {
            if rest
                .iter()
                .all(|w| is_adjective(w) && !NOT_IN_ENTITY.contains(&w.as_str()))
            {
                Ok(Term::Const(format!("the {}", rest.join(" "))))
            } else {
                Err(format!("not an entity: \"{}\"", toks.join(" ")))
            }
        }
        _ => Err(format!("not an entity: \"{}\"", toks.join(" "))),
    }
}

/// The prefix of an ability's predicate ("can fly"): rendered "can fly" / "cannot fly".
const ABILITY: &str = "can ";

/// Tracks whether the variable was mentioned yet: first "something", then "it".
#[derive(Default)]
struct Mentions {
    var_seen: bool,
}

impl Mentions {
    fn term(&mut self, t: &Term) -> String {
        match t {
            Term::Const(c) => c.clone(),
            Term::Var if self.var_seen => "it".to_string(),
            Term::Var => {
                self.var_seen = true;
                "something".to_string()
            }
        }
    }
}

fn render_literal(lit: &Literal, mentions: &mut Mentions) -> String {
    let subject = lit
        .atom
        .args
        .first()
        .map(|t| mentions.term(t))
        .unwrap_or_default();
    let not = if lit.positive { "" } else { "not " };
    match lit.atom.args.get(1) {
        None => match lit.atom.pred.strip_prefix(ABILITY) {
            Some(verb) if lit.positive => format!("{subject} can {verb}"),
            Some(verb) => format!("{subject} cannot {verb}"),
            None => format!("{subject} is {not}{}", lit.atom.pred),
        },
        Some(object) => {
            let object = mentions.term(object);
            if lit.positive {
                format!("{subject} {} {object}", verbs::third_person(&lit.atom.pred))
            } else {
                format!("{subject} does not {} {object}", lit.atom.pred)
            }
        }
    }
}

/// Capitalises the first letter and adds the final period.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => format!("{}{}.", c.to_ascii_uppercase(), chars.as_str()),
        None => ".".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Term {
        Term::Const(s.to_string())
    }

    fn lit(pred: &str, args: Vec<Term>, positive: bool) -> Literal {
        Literal {
            atom: Atom {
                pred: pred.to_string(),
                args,
            },
            positive,
        }
    }

    #[test]
    fn facts() {
        let cases = [
            ("Bob is cold.", lit("cold", vec![c("Bob")], true)),
            ("Bob is not cold", lit("cold", vec![c("Bob")], false)),
            (
                "The bald eagle chases the cat.",
                lit("chase", vec![c("the bald eagle"), c("the cat")], true),
            ),
            (
                "The bear does not see the bald eagle.",
                lit("see", vec![c("the bear"), c("the bald eagle")], false),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_statement(text), Ok(Statement::Fact(want)), "{text}");
        }
    }

    #[test]
    fn rules_of_every_shape() {
        let x = || Term::Var;
        let cases = [
            (
                "Red, cold things are round.",
                vec![lit("red", vec![x()], true), lit("cold", vec![x()], true)],
                lit("round", vec![x()], true),
            ),
            (
                "All quiet people are not rough.",
                vec![lit("quiet", vec![x()], true)],
                lit("rough", vec![x()], false),
            ),
            (
                "If someone is kind and not rough then they chase the dog.",
                vec![lit("kind", vec![x()], true), lit("rough", vec![x()], false)],
                lit("chase", vec![x(), c("the dog")], true),
            ),
            (
                "If something does not chase the dog then the dog chases the cow.",
                vec![lit("chase", vec![x(), c("the dog")], false)],
                lit("chase", vec![c("the dog"), c("the cow")], true),
            ),
            (
                "If the cow visits something then it is red.",
                vec![lit("visit", vec![c("the cow"), x()], true)],
                lit("red", vec![x()], true),
            ),
            (
                "If the bear is red and the bear chases the cat then the cat is kind.",
                vec![
                    lit("red", vec![c("the bear")], true),
                    lit("chase", vec![c("the bear"), c("the cat")], true),
                ],
                lit("kind", vec![c("the cat")], true),
            ),
            (
                "If someone sees Bob and they do not like the cat then they are not big.",
                vec![
                    lit("see", vec![x(), c("Bob")], true),
                    lit("like", vec![x(), c("the cat")], false),
                ],
                lit("big", vec![x()], false),
            ),
        ];
        for (text, body, head) in cases {
            let want = Statement::Rule(Rule::new(body, head));
            assert_eq!(parse_statement(text), Ok(want.clone()), "{text}");
            assert_eq!(parse_statement(&want.to_english()), Ok(want), "{text}");
        }
    }

    #[test]
    fn robustlr_forms_round_trip() {
        let x = || Term::Var;
        let cases = [
            (
                "If Charlie is tall and Charlie is round then Erin is kind.",
                Rule::new(
                    vec![
                        lit("tall", vec![c("Charlie")], true),
                        lit("round", vec![c("Charlie")], true),
                    ],
                    lit("kind", vec![c("Erin")], true),
                ),
            ),
            (
                "If Erin is not kind then Charlie is not tall.",
                Rule::new(
                    vec![lit("kind", vec![c("Erin")], false)],
                    lit("tall", vec![c("Charlie")], false),
                ),
            ),
            (
                "If something is red or it does not see the cat then it is big and it is not kind.",
                Rule {
                    body: vec![
                        lit("red", vec![x()], true),
                        lit("see", vec![x(), c("the cat")], false),
                    ],
                    head: lit("big", vec![x()], true),
                    disjunctive: true,
                    more_heads: vec![lit("kind", vec![x()], false)],
                },
            ),
        ];
        for (text, rule) in cases {
            let want = Statement::Rule(rule);
            assert_eq!(parse_statement(text), Ok(want.clone()), "{text}");
            assert_eq!(want.to_english(), text);
        }
        // Elided attributes work after "or" and in conclusions too.
        let s = parse_statement("If Bob is red or not big then Bob is cold and round.").unwrap();
        assert_eq!(
            s.to_english(),
            "If Bob is red or Bob is not big then Bob is cold and Bob is round."
        );
        assert!(
            parse_statement("If Bob is red and Bob is big or Bob is cold then Bob is nice.")
                .is_err()
        );
    }

    #[test]
    fn rendering_is_canonical() {
        let s = parse_statement("Red, cold things are round.").expect("parses");
        assert_eq!(
            s.to_english(),
            "If something is red and it is cold then it is round."
        );
        let s = parse_statement("The bald eagle does not chase Bob").expect("parses");
        assert_eq!(s.to_english(), "The bald eagle does not chase Bob.");
    }

    #[test]
    fn bad_sentences_are_errors() {
        for bad in [
            "",
            "Bob",
            "Bob is",
            "Bob is very cold.",
            "If Bob is cold.",
            "Something is cold.",
            "If Bob is cold then then Bob is red.",
            "The bear chase.",
            ", things are red.",
            "Bob is cold and red.",
        ] {
            assert!(parse_statement(bad).is_err(), "{bad:?} should not parse");
        }
        let err = parse_theory("Bob is cold. Bob is very red.").expect_err("second is bad");
        assert_eq!(err.index, Some(1));
        assert!(err.to_string().contains("Bob is very red."));
    }

    #[test]
    fn sentences_split_on_period_and_space() {
        assert_eq!(
            split_sentences(" Bob is cold. The cat is red.  Anne is big"),
            vec!["Bob is cold.", "The cat is red.", "Anne is big"]
        );
    }

    #[test]
    fn signature_lists_names() {
        let theory = parse_theory("Bob is cold. If something chases the cat then it is red.")
            .expect("parses");
        let sig = signature(&theory);
        assert_eq!(sig.constants, vec!["Bob", "the cat"]);
        assert_eq!(sig.attributes, vec!["cold", "red"]);
        assert_eq!(sig.relations, vec!["chase"]);
    }
}
