//! The caching scorer with a stand-in model: only missing scores are computed, the prefix tree
//! reaches its lower bound, models and sets add only their own scores, caches merge exactly.

use crate::common;

use common::{members, model_id, score_with};
use deltalogic::benchmarks::deltalogic::{prompts, Episode};
use deltalogic::eval::cache;
use deltalogic::eval::{Normalisation, PromptRecord, ResultRecord, ScoreRecord, ScoreReport};
use deltalogic::store::{Id, Record, Store, StoredSet};
use std::collections::BTreeMap;
use std::path::Path;

fn build(reg: &Store, name: &str, per_type: usize) -> (Id, Vec<(Id, Episode)>) {
    let out = common::generated_set(reg, name, 9, per_type);
    (out.set, members(reg, name))
}

fn score(reg: &Store, model: &'static str, set: &str) -> (ScoreReport, Id) {
    let out = score_with(reg, model, set, None, Normalisation::Mean);
    (out.report, out.result)
}

fn scores(reg: &Store) -> BTreeMap<Id, (Vec<u32>, Vec<u32>)> {
    reg.all::<ScoreRecord>()
        .unwrap()
        .into_iter()
        .map(|(k, s)| {
            (
                k,
                (s.tokens, s.logprobs.iter().map(|x| x.to_bits()).collect()),
            )
        })
        .collect()
}

#[test]
fn computes_only_what_is_missing_and_reaches_the_tree_bound() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let (_, eps) = build(&reg, "set", 10);
    let (first, _) = score(&reg, "m1", "set");
    assert_eq!(first.items, eps.len());
    assert_eq!(first.scores_needed, 6 * eps.len());
    assert_eq!(
        first.scores_computed + first.scores_found_in_cache,
        first.scores_needed
    );
    assert!(first.scores_computed > 0);
    assert_eq!(
        first.forward_tokens, first.tree_tokens,
        "every shared prefix is computed once"
    );
    // Step-1 prompts of one theory share their premises; step 2 shares step 1: far fewer tokens
    // than running every prompt from scratch.
    assert!(first.tree_tokens > 0);

    let (second, _) = score(&reg, "m1", "set");
    assert_eq!((second.scores_computed, second.forward_tokens), (0, 0));
    assert_eq!(second.scores_found_in_cache, second.scores_needed);
}

#[test]
fn a_second_model_and_added_episodes_compute_only_their_own_scores() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let (_, small) = build(&reg, "small", 5);
    let (a, _) = score(&reg, "m1", "small");
    let before = scores(&reg);

    let (b, _) = score(&reg, "m2", "small");
    assert_eq!(
        b.scores_computed, a.scores_computed,
        "the second model computes its own scores"
    );
    let after = scores(&reg);
    for (k, v) in &before {
        assert_eq!(after.get(k), Some(v), "model 2 left model 1's scores alone");
    }

    // A bigger build with the same seed keeps the small set's episodes and adds some.
    let (_, big) = build(&reg, "big", 8);
    let added = big
        .iter()
        .filter(|(id, _)| !small.iter().any(|(s, _)| s == id))
        .count();
    assert_eq!(
        big.len() - small.len(),
        added,
        "the bigger set contains the smaller"
    );
    let (c, _) = score(&reg, "m1", "big");
    assert!(
        c.scores_computed <= 6 * added,
        "{} computed for {added} new episodes",
        c.scores_computed
    );
    assert!(c.scores_computed > 0);
    assert_eq!(c.scores_found_in_cache, c.scores_needed - c.scores_computed);
}

/// Merges with no model available to recompute a sample: every new score comes in unverified.
fn merge_unchecked(reg: &Store, other: &Store) -> anyhow::Result<cache::MergeReport> {
    let mut unavailable = |_: &cache::Computed| Ok(None);
    cache::merge(reg, other, cache::MergeOptions::new(&mut unavailable))
}

fn export(reg: &Store, model: &str, set: &str, to: &Path) {
    common::export(reg, model_id(model), set, to);
}

#[test]
fn merging_caches_built_apart_equals_building_together() {
    let dir = tempfile::tempdir().unwrap();
    let apart1 = Store::open_write(&dir.path().join("a1.redb")).unwrap();
    let apart2 = Store::open_write(&dir.path().join("a2.redb")).unwrap();
    let together = Store::open_write(&dir.path().join("t.redb")).unwrap();
    for r in [&apart1, &apart2, &together] {
        build(r, "set", 4);
    }
    score(&apart1, "m1", "set");
    score(&apart2, "m2", "set");
    score(&together, "m1", "set");
    score(&together, "m2", "set");
    export(&apart1, "m1", "set", &dir.path().join("c1.redb"));
    export(&apart2, "m2", "set", &dir.path().join("c2.redb"));

    let merged = Store::open_write(&dir.path().join("m.redb")).unwrap();
    for c in ["c1.redb", "c2.redb"] {
        let other = Store::open_read(&dir.path().join(c)).unwrap();
        assert!(cache::verify(&other, deltalogic::benchmarks::ALL)
            .unwrap()
            .problems
            .is_empty());
        let report = merge_unchecked(&merged, &other).unwrap();
        assert!(report.conflicts.is_empty(), "{:?}", report.conflicts);
    }
    assert_eq!(scores(&merged), scores(&together));
    for kind in [
        Episode::KIND,
        StoredSet::KIND,
        ResultRecord::KIND,
        PromptRecord::KIND,
    ] {
        let ids = |r: &Store| {
            r.raw_all(kind)
                .unwrap()
                .into_iter()
                .map(|(id, _)| id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&merged), ids(&together), "{kind:?}");
    }
    // Merging again adds nothing.
    let again = merge_unchecked(
        &merged,
        &Store::open_read(&dir.path().join("c1.redb")).unwrap(),
    )
    .unwrap();
    assert!(again.added.is_empty());
}

#[test]
fn a_conflicting_merge_keeps_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let ours = Store::open_write(&dir.path().join("ours.redb")).unwrap();
    build(&ours, "set", 2);
    score(&ours, "m1", "set");
    let theirs_path = dir.path().join("theirs.redb");
    export(&ours, "m1", "set", &theirs_path);

    // Their cache holds a different value under one of our keys.
    let (key, mut changed) = ours.all::<ScoreRecord>().unwrap().remove(0);
    changed.logprobs[0] -= 1.0;
    let theirs = Store::open_read(&theirs_path).unwrap();
    let forged = Store::open_write(&dir.path().join("forged.redb")).unwrap();
    forged.write(|w| w.put(&changed).map(drop)).unwrap();
    let original = scores(&ours);

    let report = merge_unchecked(&ours, &forged).unwrap();
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert_eq!(report.conflicts[0].key, key);
    assert_eq!(scores(&ours), original, "the original score stays");
    assert!(merge_unchecked(&ours, &theirs)
        .unwrap()
        .conflicts
        .is_empty());
}

#[test]
fn corrupt_or_missing_cache_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ours = Store::open_write(&dir.path().join("ours.redb")).unwrap();
    let err = Store::open_read(&dir.path().join("nope.redb"))
        .err()
        .expect("missing")
        .to_string();
    assert!(err.contains("nope.redb"), "{err}");
    let junk = dir.path().join("junk.redb");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    let err = Store::open_read(&junk).err().expect("junk").to_string();
    assert!(err.contains("junk.redb"), "{err}");
    // A truncated copy of a real cache.
    build(&ours, "set", 2);
    score(&ours, "m1", "set");
    let full = dir.path().join("full.redb");
    export(&ours, "m1", "set", &full);
    let bytes = std::fs::read(&full).unwrap();
    let cut = dir.path().join("cut.redb");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let before = scores(&ours);
    if let Ok(other) = Store::open_read(&cut) {
        // If redb can open what is left, the records must still fail validation or be absent.
        let _ = merge_unchecked(&ours, &other);
    }
    assert_eq!(scores(&ours), before);
}

/// SmolLM2-135M-Instruct's chat template, as its GGUF file carries it.
const SMOLLM2_CHAT: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

#[test]
fn step_two_continues_step_one_in_both_templates() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("s.redb")).unwrap();
    let (_, eps) = build(&reg, "set", 1);
    let chat = prompts::chat(SMOLLM2_CHAT).unwrap();
    for t in [prompts::plain(), chat] {
        for (_, ep) in &eps {
            let after = ep.premises_after().unwrap();
            let s1 = t.step1(ep).unwrap();
            let s2 = t
                .step2(ep, deltalogic::logic::Label::False, None, &after)
                .unwrap();
            let answered = format!("{s1}{}", t.label_text(deltalogic::logic::Label::False));
            assert!(
                s2.starts_with(&answered),
                "{}: step 2 must continue step 1 and its answer",
                t.name
            );
            assert!(
                s2.contains(&after.last().map_or(String::new(), |p| p.text.clone()))
                    || after.len() < ep.premises.len()
            );
        }
    }
    assert_ne!(
        prompts::plain().record().id(),
        prompts::chat(SMOLLM2_CHAT).unwrap().record().id()
    );
    assert!(
        prompts::chat("{% for m in messages %}").is_err(),
        "a broken chat template is refused up front"
    );
}
