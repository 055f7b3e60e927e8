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
//! Relations may carry up to two prepositions or particles (`PREPOSITIONS`): "The current flows
//! into the bulb.", "The battery does not run out of the power.", "If someone lives in the barn
//! then they hunt for the mouse." The predicate is the base form with its prepositions ("flow
//! into"): "flows into", "does not flow into" and "they flow into" meet, "flows through" does
//! not. "is" + [one adjective or participle] + preposition is a relation whose predicate keeps
//! its "is" ("is connected to", "is made of", "is in"), so it never meets a verb.
//!
//! Anything else is refused, and so is what the grammar could misread: a subject that does not
//! agree with its verb ("Bob are red", "they is red" — a capitalised plural like "Penguins are
//! birds" would otherwise pass for a name), an -s word after "are" (a plural noun, "they are
//! birds", would otherwise pass for an attribute), adverbs and modals inside an entity ("the bear
//! never" would otherwise be an entity that chases; "the cat quickly" one that is chased), verb
//! forms the morphology cannot invert, past tenses ("they liked"), identities ("Bob is Anne"),
//! and an indefinite entity ("The circuit has a switch": which switch is "the switch"?). With
//! prepositions: a preposition is never a verb ("The boat moves towards the shore" is not the
//! entity "the boat moves" doing "toward"), no entity ends in one ("lets the cat in"), and a
//! progressive ("is flowing into") is refused, as it would be a second relation beside "flows
//! into". See docs/grammar.md.

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
/// cat." would read as the entity "the bear never" chasing the cat. Adverbs ending in -ly are
/// caught by their ending (see [`parse_term`]).
const NOT_IN_ENTITY: [&str; 31] = [
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
    "again",
    "almost",
    "already",
    "even",
    "ever",
    "here",
    "just",
    "now",
    "quite",
    "rather",
    "seldom",
    "there",
    "too",
    "yet",
];
/// Prepositions and particles: the words between a verb (or "is" and a participle) and its
/// object in a relation ("flows into", "runs out of", "is connected to"). None is a verb, none
/// starts an entity, and no entity ends in one: "Bob lets the cat in" would otherwise make an
/// entity of "the cat in". "like" (a verb too) and "round" (an attribute) are left out.
const PREPOSITIONS: [&str; 50] = [
    "about",
    "above",
    "across",
    "after",
    "against",
    "along",
    "alongside",
    "among",
    "around",
    "at",
    "away",
    "back",
    "before",
    "behind",
    "below",
    "beneath",
    "beside",
    "between",
    "beyond",
    "by",
    "down",
    "for",
    "from",
    "in",
    "inside",
    "into",
    "near",
    "of",
    "off",
    "on",
    "onto",
    "out",
    "outside",
    "over",
    "past",
    "than",
    "through",
    "throughout",
    "to",
    "toward",
    "towards",
    "under",
    "underneath",
    "until",
    "up",
    "upon",
    "via",
    "with",
    "within",
    "without",
];
/// At most this many prepositions and particles after a verb: "runs out of", "gets along with".
const MAX_PREPOSITIONS: usize = 2;

fn is_preposition(tok: &str) -> bool {
    PREPOSITIONS.contains(&tok)
}

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
    let head = copula_predicate(Term::Var, &toks[noun + 2..], Copula::Are, false)?;
    Ok(Rule::new(body, head))
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
        // "Bob is Anne" says who Bob is, which no attribute does.
        [w] if is_name(w) => Err(format!(
            "\"{w}\" may be a name: the grammar reads attributes (lowercase), not identities"
        )),
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
        return copula_predicate(subject, &toks[i + 1..], copula, true);
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
        let rest = &toks[i + 3..];
        let k = leading_prepositions(rest);
        return relation(subject, verb, &rest[..k], &rest[k..], false);
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

/// "X Vs [P] Y", "they V [P] Y", with up to [`MAX_PREPOSITIONS`] prepositions P: every cut of the
/// clause into a subject, a verb, prepositions and an object that begins with "the", a name or
/// a pronoun is tried, and exactly one must read. One at most can: a second reading would need
/// its verb among the first's prepositions or its subject's words, or its object to begin inside
/// an entity, and no preposition is a verb, no entity ends in a preposition and no entity holds
/// "the", a name or a pronoun. (Without prepositions this is the issue-12 rule: the verb is the
/// word right before the first place where an object begins.)
fn parse_positive_relation(toks: &[String]) -> Result<Literal, String> {
    let mut readings: Vec<Literal> = Vec::new();
    // The first error of a cut whose verb is no preposition, else the first error: the more
    // telling one when nothing reads.
    let (mut error, mut preposition_error) = (None, None);
    for v in 1..toks.len().saturating_sub(1) {
        let Ok(subject) = parse_term(&toks[..v]) else {
            continue;
        };
        // No preposition begins an object, so the object begins after all of them.
        let k = toks[v + 1..]
            .iter()
            .take_while(|t| is_preposition(t))
            .count();
        let o = v + 1 + k;
        if !toks.get(o).is_some_and(|t| starts_term(t)) {
            continue;
        }
        let reading = if k > MAX_PREPOSITIONS {
            Err(format!(
                "\"{}\": the grammar takes at most {MAX_PREPOSITIONS} prepositions after a verb",
                toks[v..o].join(" ")
            ))
        } else {
            verb_relation(subject, &toks[..v], &toks[v], &toks[v + 1..o], &toks[o..])
        };
        match reading {
            Ok(lit) if !readings.contains(&lit) => readings.push(lit),
            Ok(_) => {}
            Err(e) if is_preposition(&toks[v]) => {
                preposition_error.get_or_insert(e);
            }
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    match readings.len() {
        1 => Ok(readings.remove(0)),
        0 => Err(error
            .or(preposition_error)
            .unwrap_or_else(|| format!("not a fact or condition: \"{}\"", toks.join(" ")))),
        _ => Err(format!(
            "\"{}\" reads two ways: {}",
            toks.join(" "),
            readings
                .iter()
                .map(|l| format!("\"{}\"", render_literal(l, &mut Mentions::default())))
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

/// One cut of "X Vs [P] Y": the verb agrees with the subject ("they" takes the base form, any
/// other subject the -s form).
fn verb_relation(
    subject: Term,
    subject_toks: &[String],
    verb: &str,
    prepositions: &[String],
    object: &[String],
) -> Result<Literal, String> {
    if !is_adjective(verb) {
        return Err(format!("\"{verb}\" is not a verb"));
    }
    let base = match subject_toks {
        [t] if is_kw(t, "they") => verbs::check_base(verb).map(|()| verb.to_string())?,
        [t] if is_kw(t, "them") => return Err("\"them\" cannot be a subject".into()),
        _ => {
            if is_preposition(verb) {
                return Err(preposition_as_verb(verb));
            }
            verbs::base_of_third_person(verb)?
        }
    };
    relation(subject, &base, prepositions, object, true)
}

fn preposition_as_verb(word: &str) -> String {
    format!("\"{word}\" is a preposition, not a verb")
}

/// How many of `toks`' first words are prepositions, up to [`MAX_PREPOSITIONS`].
fn leading_prepositions(toks: &[String]) -> usize {
    toks.iter()
        .take(MAX_PREPOSITIONS)
        .take_while(|t| is_preposition(t))
        .count()
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

/// `verb` is a base form already checked by [`verbs`]; the relation is the verb with its
/// prepositions ("chase", "flow into", "run out of").
fn relation(
    subject: Term,
    verb: &str,
    prepositions: &[String],
    object: &[String],
    positive: bool,
) -> Result<Literal, String> {
    if !is_word(verb) {
        return Err(format!("\"{verb}\" is not a verb"));
    }
    if is_preposition(verb) {
        return Err(preposition_as_verb(verb));
    }
    let object = parse_term(object)?;
    let pred = std::iter::once(verb)
        .chain(prepositions.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(binary(subject, pred, object, positive))
}

fn binary(subject: Term, pred: String, object: Term, positive: bool) -> Literal {
    Literal {
        atom: Atom {
            pred,
            args: vec![subject, object],
        },
        positive,
    }
}

/// What follows "is"/"are": an attribute or class noun ([`complement`]), or a relation written
/// "is [not] [participle] P Y" ("is connected to the battery", "is in the box", "is not made of
/// wood"), whose predicate keeps its "is" ("is connected to") so that it never meets a verb.
fn copula_predicate(
    subject: Term,
    toks: &[String],
    copula: Copula,
    nouns: bool,
) -> Result<Literal, String> {
    let (positive, rest) = match toks {
        [n, rest @ ..] if is_kw(n, "not") => (false, rest),
        _ => (true, toks),
    };
    let first_preposition = rest.iter().position(|t| is_preposition(t));
    match first_preposition {
        Some(p) if p <= 1 && rest.len() > 1 => copular_relation(subject, positive, rest, p, copula),
        Some(p) if p > 1 => Err(format!(
            "\"{}\" cannot stand between \"is\" and a preposition: the grammar takes one \
             adjective or participle there (\"is connected to\")",
            rest[..p].join(" ")
        )),
        _ => {
            let (positive, pred) = complement(toks, copula, nouns)?;
            Ok(unary(subject, pred, positive))
        }
    }
}

/// "[participle] P [P] Y" after "is [not]", the first preposition at `p` (0 or 1).
fn copular_relation(
    subject: Term,
    positive: bool,
    rest: &[String],
    p: usize,
    copula: Copula,
) -> Result<Literal, String> {
    let mut words = vec![COPULAR.trim_end().to_string()];
    if p == 1 {
        let w = &rest[0];
        if !is_adjective(w) || NOT_IN_ENTITY.contains(&w.as_str()) {
            return Err(format!(
                "\"{w}\" cannot stand between \"is\" and a preposition: the grammar takes one \
                 adjective or participle there (\"is connected to\")"
            ));
        }
        // "is flowing into" would be a second relation beside "flows into".
        if w.ends_with("ing") {
            return Err(format!(
                "\"is {w} {}\" may be the progressive of a verb: write the verb in the present \
                 simple (\"flows into\"), so that both forms are not two relations",
                rest[1]
            ));
        }
        if copula != Copula::Is && w.ends_with('s') {
            return Err(format!(
                "\"{w}\" after \"are\" may be a plural noun; the grammar takes an adjective or \
                 participle before a preposition"
            ));
        }
        words.push(w.clone());
    }
    let after = &rest[p..];
    let k = leading_prepositions(after);
    words.extend(after[..k].iter().cloned());
    let object = parse_term(&after[k..])?;
    Ok(binary(subject, words.join(" "), object, positive))
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
            let last = rest.last().map(String::as_str).unwrap_or_default();
            if is_preposition(last) {
                Err(format!(
                    "\"{}\" ends in a preposition, which may belong to the verb (\"lets the \
                     cat in\"): not an entity",
                    toks.join(" ")
                ))
            } else if rest.len() > 1 && last.ends_with("ly") {
                // "the cat quickly": an adverb after the entity ("the butterfly" is one word).
                Err(format!(
                    "\"{}\" ends in \"{last}\", which may be an adverb: not an entity",
                    toks.join(" ")
                ))
            } else if rest
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
/// The prefix of a relation written with "is" ("is connected to"): rendered "is connected to" /
/// "is not connected to".
const COPULAR: &str = "is ";

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
            let pred = &lit.atom.pred;
            if let Some(rest) = pred.strip_prefix(COPULAR) {
                return format!("{subject} is {not}{rest} {object}");
            }
            if lit.positive {
                let (verb, prepositions) = pred.split_at(pred.find(' ').unwrap_or(pred.len()));
                format!(
                    "{subject} {}{prepositions} {object}",
                    verbs::third_person(verb)
                )
            } else {
                format!("{subject} does not {pred} {object}")
            }
        }
    }
}

/// Words a sentence's shape keeps as written besides the grammar's own (see [`shape`]): pronouns,
/// quantifiers, auxiliaries and connectives that a refused sentence often turns on.
const SHAPE_WORDS: [&str; 44] = [
    "am",
    "any",
    "be",
    "because",
    "been",
    "being",
    "both",
    "but",
    "did",
    "each",
    "either",
    "every",
    "everybody",
    "everyone",
    "everything",
    "had",
    "he",
    "her",
    "him",
    "his",
    "its",
    "neither",
    "nobody",
    "none",
    "nor",
    "nothing",
    "once",
    "she",
    "so",
    "some",
    "that",
    "their",
    "these",
    "this",
    "those",
    "unless",
    "very",
    "was",
    "were",
    "what",
    "when",
    "whenever",
    "which",
    "who",
];

/// The shape of a sentence, for grouping refused ones: entities become `E` (a name, or "the"
/// and the words after it; "Erin's" becomes `E's`), verbs `V` (a word after an entity or a
/// pronoun, or after "does not"), class nouns `N` (after "a"/"an" or `E's`) and other content
/// words `A`; grammar words, prepositions, adverbs, modals and pronouns stay as written.
/// "The aunt of Charlie is Erin." → "E of E is E"; "Bob runs through the wire quickly." →
/// "E V through E"; "If someone is kind then she is nice." → "if someone is A then she is A".
/// A heuristic: only a label to group by, never a parse.
pub fn shape(sentence: &str) -> String {
    let text = sentence.trim();
    let toks = tokenize(text.strip_suffix('.').unwrap_or(text));
    let kept = |w: &str| {
        let w = lower(w);
        KEYWORDS.contains(&w.as_str())
            || VAR_WORDS.contains(&w.as_str())
            || is_preposition(&w)
            || NOT_IN_ENTITY.contains(&w.as_str())
            || SHAPE_WORDS.contains(&w.as_str())
    };
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if is_kw(t, "the") {
            let words = toks[i + 1..]
                .iter()
                .take_while(|w| is_adjective(w) && !kept(w))
                .count();
            if words == 0 {
                out.push("the".into());
            } else {
                out.push("E".into());
                // "the bear chases": the last word is the verb.
                let last = &toks[i + words];
                if words > 1 && verbs::base_of_third_person(last).is_ok() {
                    out.push("V".into());
                }
            }
            i += 1 + words;
            continue;
        }
        let word = if kept(t) {
            lower(t)
        } else if t.strip_suffix("'s").is_some_and(is_name) {
            "E's".into()
        } else if is_name(t) {
            "E".into()
        } else if is_adjective(t) {
            let before = |k: usize| out.len().checked_sub(k).map(|j| out[j].as_str());
            let after_do = matches!(before(2), Some("does" | "do"));
            match before(1) {
                Some("a" | "an" | "E's") => "N",
                Some("does" | "do" | "can" | "cannot" | "E" | "who") => "V",
                Some(w) if VAR_WORDS.contains(&w) || ["he", "she"].contains(&w) => "V",
                Some("not") if after_do => "V",
                _ => "A",
            }
            .into()
        } else {
            lower(t)
        };
        out.push(word);
        i += 1;
    }
    out.join(" ")
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
    fn relations_with_prepositions() {
        let x = || Term::Var;
        let cases = [
            (
                "The current flows into the red wire.",
                Statement::Fact(lit(
                    "flow into",
                    vec![c("the current"), c("the red wire")],
                    true,
                )),
            ),
            (
                "The battery does not run out of the power.",
                Statement::Fact(lit(
                    "run out of",
                    vec![c("the battery"), c("the power")],
                    false,
                )),
            ),
            (
                "The bulb is not connected to Bob.",
                Statement::Fact(lit("is connected to", vec![c("the bulb"), c("Bob")], false)),
            ),
            (
                "The nest is in the oak tree.",
                Statement::Fact(lit("is in", vec![c("the nest"), c("the oak tree")], true)),
            ),
            (
                "If someone lives in the barn then they hunt for the mouse.",
                Statement::Rule(Rule::new(
                    vec![lit("live in", vec![x(), c("the barn")], true)],
                    lit("hunt for", vec![x(), c("the mouse")], true),
                )),
            ),
            (
                "If the battery is connected to something then the current flows into it.",
                Statement::Rule(Rule::new(
                    vec![lit("is connected to", vec![c("the battery"), x()], true)],
                    lit("flow into", vec![c("the current"), x()], true),
                )),
            ),
            (
                "All red things are made of the copper.",
                Statement::Rule(Rule::new(
                    vec![lit("red", vec![x()], true)],
                    lit("is made of", vec![x(), c("the copper")], true),
                )),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_statement(text), Ok(want.clone()), "{text}");
            assert_eq!(parse_statement(&want.to_english()), Ok(want), "{text}");
        }
    }

    #[test]
    fn shapes_abstract_entities_and_verbs() {
        for (text, want) in [
            ("The aunt of Charlie is Erin.", "E of E is E"),
            ("Anne is not Bob's son.", "E is not E's N"),
            ("Dave is big if Bob is red.", "E is A if E is A"),
            ("The bald eagle chases the cat.", "E V E"),
            (
                "The current runs through the wire quickly.",
                "E V through E",
            ),
            ("The electrician lets the cat in.", "E V E in"),
            (
                "If someone is kind then she is nice.",
                "if someone is A then she is A",
            ),
            ("The circuit has a switch.", "E V a N"),
            ("Bob does not flow into the bulb.", "E does not V into E"),
            ("Tweety can fly over the nest.", "E can V over E"),
        ] {
            assert_eq!(shape(text), want, "{text}");
        }
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
