//! Synthetic chains (the paper's SynDeduct idea): word problems whose solution has exactly `hops`
//! steps, each step deriving one person's count from the previous person's, so that a model
//! cannot have seen them. Seeded: the same seed, hops and index give the same problem.
//!
//! A problem names `hops + 1` distinct people and one kind of object; the first premise gives
//! the first person's count, each later premise relates the next person to the one before
//! (`more`, `fewer`, `times as many`, `half as many`). Every count stays a whole number between 1
//! and [`MAX_COUNT`]; the question asks for the last person's count.

use super::problem::{Problem, ProblemStep};
use super::rational::Rational;
use super::template::evaluate;
use crate::rng::Rng;
use anyhow::{bail, Result};

pub const MAX_HOPS: usize = 12;
pub const MAX_COUNT: i128 = 999;

const NAMES: [&str; 40] = [
    "Ava", "Ben", "Chloe", "Dario", "Elena", "Farid", "Greta", "Hiro", "Imani", "Jonas", "Keiko",
    "Luca", "Maya", "Nikolai", "Olga", "Pavel", "Quinn", "Rosa", "Samir", "Tessa", "Umar", "Vera",
    "Wendell", "Ximena", "Yusuf", "Zara", "Anselm", "Bea", "Cyrus", "Delia", "Emeka", "Freya",
    "Gustav", "Hana", "Ilya", "Jade", "Kofi", "Lena", "Mateo", "Noor",
];

const OBJECTS: [&str; 12] = [
    "marbles",
    "stickers",
    "stamps",
    "seashells",
    "pencils",
    "postcards",
    "coins",
    "buttons",
    "beads",
    "acorns",
    "crayons",
    "keychains",
];

/// How one person's count follows from the previous one's.
enum Relation {
    More(i128),
    Fewer(i128),
    Times(i128),
    Half,
}

impl Relation {
    fn draw(prev: i128, rng: &mut Rng) -> Option<Relation> {
        let r = match rng.below(4) {
            0 => Relation::More(2 + rng.below(19) as i128),
            1 => Relation::Fewer(1 + rng.below(usize::try_from(prev - 1).ok()?.max(1)) as i128),
            2 => Relation::Times(2 + rng.below(3) as i128),
            _ => Relation::Half,
        };
        let next = r.apply(prev);
        ((1..=MAX_COUNT).contains(&next) && (!matches!(r, Relation::Half) || prev % 2 == 0))
            .then_some(r)
    }

    fn apply(&self, prev: i128) -> i128 {
        match self {
            Relation::More(a) => prev + a,
            Relation::Fewer(a) => prev - a,
            Relation::Times(m) => prev * m,
            Relation::Half => prev / 2,
        }
    }

    fn premise(&self, who: &str, of: &str, object: &str) -> String {
        match self {
            Relation::More(a) => format!("{who} has {a} more {object} than {of}."),
            Relation::Fewer(a) => format!("{who} has {a} fewer {object} than {of}."),
            Relation::Times(m) => format!("{who} has {m} times as many {object} as {of}."),
            Relation::Half => format!("{who} has half as many {object} as {of}."),
        }
    }

    fn expression(&self, prev: i128) -> String {
        match self {
            Relation::More(a) => format!("{prev}+{a}"),
            Relation::Fewer(a) => format!("{prev}-{a}"),
            Relation::Times(m) => format!("{prev}*{m}"),
            Relation::Half => format!("{prev}/2"),
        }
    }
}

/// The `index`-th synthetic problem of `hops` steps under `seed`.
pub fn problem(seed: u64, hops: usize, index: usize) -> Result<Problem> {
    if !(1..=MAX_HOPS).contains(&hops) {
        bail!("--hops must be 1..={MAX_HOPS}, not {hops}");
    }
    let mut rng = Rng::derive(seed, &format!("deduce/synthetic/{hops}/{index}"));
    let mut names: Vec<&str> = NAMES.to_vec();
    rng.shuffle(&mut names);
    let object = *rng.choose(&OBJECTS);
    let first = 2 + rng.below(30) as i128;
    let mut premises = vec![format!("{} has {first} {object}.", names[0])];
    let mut steps = Vec::new();
    let mut count = first;
    for h in 1..=hops {
        // A relation that keeps the count in range always exists (`More` from a small count,
        // `Fewer` from a large one), so the draw ends.
        let rel = loop {
            if let Some(r) = Relation::draw(count, &mut rng) {
                break r;
            }
        };
        premises.push(rel.premise(names[h], names[h - 1], object));
        let expr = rel.expression(count);
        let next = rel.apply(count);
        // The generator's arithmetic is checked by the same evaluator that verifies GSM8K.
        if evaluate(&expr).ok() != Some(Rational::int(next)) {
            bail!("synthetic step `{expr}` does not give {next}");
        }
        steps.push(ProblemStep {
            text: format!(
                "{} has {} = <<{expr}={next}>>{next} {object}.",
                names[h],
                expr.replace('+', " + ")
                    .replace('-', " - ")
                    .replace('*', " * ")
                    .replace('/', " / ")
            ),
            value: next.to_string(),
        });
        count = next;
    }
    Ok(Problem {
        dataset: "synthetic".to_string(),
        origin: format!("synthetic seed {seed} hops {hops} item {index}"),
        perturbed: false,
        question: format!(
            "{} How many {object} does {} have?",
            premises.join(" "),
            names[hops]
        ),
        steps,
        answer: count.to_string(),
    })
}
