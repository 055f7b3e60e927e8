//! Verb morphology for the theory grammar: a relation is stored under its base form ("have"), so
//! "The circuit has the bulb." and "The circuit does not have the bulb." are one predicate.
//!
//! English spelling does not determine a base from its -s form ("reaches" could be "reach" or
//! "reache", "lies" "ly" or "lie"), so the rules below pick the common reading and a table lists
//! the irregular verbs and the known exceptions. Both directions are checked on every word, so
//! whatever the grammar accepts maps one way only: an -s form is accepted only if the base it
//! gives spells it back, and a base only if its -s form leads back to it and it is not itself an
//! -s form ("does not chases" is refused, not read as a verb "chases"). A verb outside the table
//! whose spelling the rules get wrong is then refused in one of its two forms, never read as two
//! relations.

/// (base, third person singular) where the spelling rules would give another pair.
const EXCEPTIONS: [(&str, &str); 19] = [
    ("have", "has"),
    // Bases ending in -e whose -s form looks like -ches/-xes/-oes/-ies.
    ("ache", "aches"),
    ("cache", "caches"),
    ("axe", "axes"),
    ("shoe", "shoes"),
    ("canoe", "canoes"),
    ("hoe", "hoes"),
    ("toe", "toes"),
    ("tiptoe", "tiptoes"),
    ("die", "dies"),
    ("lie", "lies"),
    ("tie", "ties"),
    ("vie", "vies"),
    ("untie", "unties"),
    ("belie", "belies"),
    // Bases ending in a single -s or -z.
    ("focus", "focuses"),
    ("bias", "biases"),
    ("quiz", "quizzes"),
    ("whiz", "whizzes"),
];

/// Words that take the place of a verb but are not one: auxiliaries, modals, and -s adverbs
/// the rules would otherwise strip. "is", "are", "does", "do" are grammar keywords.
const NOT_VERBS: [&str; 21] = [
    "was",
    "were",
    "am",
    "be",
    "been",
    "being",
    "had",
    "did",
    "can",
    "cannot",
    "could",
    "will",
    "would",
    "shall",
    "should",
    "may",
    "might",
    "must",
    "always",
    "sometimes",
    "perhaps",
];

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

/// The third person singular of a base form: "chase" → "chases", "carry" → "carries",
/// "watch" → "watches", "go" → "goes", "have" → "has".
pub fn third_person(base: &str) -> String {
    if let Some(&(_, s)) = EXCEPTIONS.iter().find(|(b, _)| *b == base) {
        return s.to_string();
    }
    let before_last = base.chars().rev().nth(1);
    let consonant_before = before_last.is_some_and(|c| !is_vowel(c));
    if base.ends_with('y') && consonant_before {
        format!("{}ies", &base[..base.len() - 1])
    } else if ["s", "sh", "ch", "x", "z"]
        .iter()
        .any(|e| base.ends_with(e))
        || (base.ends_with('o') && consonant_before)
    {
        format!("{base}es")
    } else {
        format!("{base}s")
    }
}

/// The base form the spelling rules read an -s form as, without the round-trip check.
fn rule_base(form: &str) -> Option<String> {
    if let Some(&(b, _)) = EXCEPTIONS.iter().find(|(_, s)| *s == form) {
        return Some(b.to_string());
    }
    if let Some(stem) = form.strip_suffix("ies") {
        if stem.chars().last().is_some_and(|c| !is_vowel(c)) {
            return Some(format!("{stem}y"));
        }
    }
    for ending in ["sses", "shes", "ches", "xes", "zzes", "oes"] {
        if form.ends_with(ending) {
            return Some(form[..form.len() - 2].to_string());
        }
    }
    form.strip_suffix('s')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The base form of a third person singular verb ("has" → "have"), or why it is refused.
pub fn base_of_third_person(form: &str) -> Result<String, String> {
    check_word(form)?;
    let refused = || {
        format!("\"{form}\" is not a verb in the third person singular (-s form) the grammar knows")
    };
    if EXCEPTIONS.iter().any(|(b, _)| *b == form) {
        return Err(refused());
    }
    match rule_base(form) {
        // A base ending in a, i or u would make verbs of "was", "this", "bus", "gas"; the few
        // real ones ("skis") are refused with them.
        Some(base) if base.ends_with(['a', 'i', 'u']) => Err(refused()),
        Some(base) if third_person(&base) == form => check_not_past(&base).map(|()| base),
        _ => Err(refused()),
    }
}

/// A base form as written after "does not", "do not" or "they" ("have"), checked to be one.
pub fn check_base(base: &str) -> Result<(), String> {
    check_word(base)?;
    check_not_past(base)?;
    if base_of_third_person(base).is_ok() && !EXCEPTIONS.iter().any(|(b, _)| *b == base) {
        return Err(format!(
            "\"{base}\" is an -s form where the base form of a verb is expected"
        ));
    }
    match rule_base(&third_person(base)) {
        Some(back) if back == base => Ok(()),
        _ => Err(format!(
            "the grammar cannot tell the -s form of \"{base}\" unambiguously"
        )),
    }
}

fn check_word(word: &str) -> Result<(), String> {
    if NOT_VERBS.contains(&word) {
        return Err(format!("\"{word}\" is not a relation verb"));
    }
    Ok(())
}

/// A base form ending in -ed but not -eed ("connected", "liked") is a past tense or a
/// participle: "they connected to the wire" would otherwise be a verb "connected", never meeting
/// "connects". The few real bases so spelled ("shed", "wed") are refused with them; "need",
/// "feed" and the other -eed verbs read.
fn check_not_past(base: &str) -> Result<(), String> {
    if base.ends_with("ed") && !base.ends_with("eed") {
        return Err(format!(
            "\"{base}\" may be a past tense or participle; the grammar reads verbs in the present \
             simple"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_and_irregular_verbs_round_trip() {
        for (base, form) in [
            ("chase", "chases"),
            ("see", "sees"),
            ("watch", "watches"),
            ("carry", "carries"),
            ("obey", "obeys"),
            ("go", "goes"),
            ("echo", "echoes"),
            ("woo", "woos"),
            ("miss", "misses"),
            ("buzz", "buzzes"),
            ("fix", "fixes"),
            ("wish", "wishes"),
            ("have", "has"),
            ("lie", "lies"),
            ("untie", "unties"),
            ("ache", "aches"),
            ("shoe", "shoes"),
            ("focus", "focuses"),
            ("quiz", "quizzes"),
            ("use", "uses"),
            ("freeze", "freezes"),
            ("say", "says"),
        ] {
            assert_eq!(third_person(base), form, "{base}");
            assert_eq!(base_of_third_person(form).as_deref(), Ok(base), "{form}");
            assert_eq!(check_base(base), Ok(()), "{base}");
        }
    }

    #[test]
    fn wrong_forms_are_refused() {
        // An -s form where a base belongs, and a base where an -s form belongs.
        for base in ["chases", "has", "goes", "carries", "was", "can", "cannot"] {
            assert!(check_base(base).is_err(), "{base} accepted as a base");
        }
        for form in [
            "chase", "have", "go", "miss", "was", "is", "can", "haves", "focus", "bus", "gas",
            "this",
        ] {
            assert!(
                base_of_third_person(form).is_err(),
                "{form} accepted as an -s form"
            );
        }
        // Spellings the rules cannot invert are refused as bases rather than given a second
        // predicate: "waltz" → "waltzes" → "waltze", "bus" → "buses" → "buse".
        assert!(check_base("waltz").is_err());
        assert!(check_base("bus").is_err());
        // Past tenses and participles are no bases; -eed verbs are.
        for past in ["connected", "liked", "chased", "visited", "shed"] {
            assert!(check_base(past).is_err(), "{past}");
            assert!(
                base_of_third_person(&format!("{past}s")).is_err(),
                "{past}s"
            );
        }
        for (base, form) in [("need", "needs"), ("feed", "feeds"), ("exceed", "exceeds")] {
            assert_eq!(check_base(base), Ok(()));
            assert_eq!(base_of_third_person(form).as_deref(), Ok(base));
        }
    }
}
