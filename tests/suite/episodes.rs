//! DeltaLogic episodes: re-verified, one premise edited, stable ids, all-or-nothing builds.

use deltalogic::benchmarks::deltalogic::{
    self as episodes, BuildSpec, Edit, EditType, Episode, PremiseSource,
};
use deltalogic::datasets::Format;
use deltalogic::store::{ingest, Id, Store};
use std::collections::BTreeSet;
use std::path::Path;

fn spec(from: PremiseSource, seed: u64) -> BuildSpec {
    BuildSpec {
        seed,
        from,
        per_type: None,
        extended: false,
    }
}

fn set_episodes(reg: &Store, name: &str) -> Vec<(Id, Episode)> {
    let (_, set) = reg.set_by_name(name).unwrap().expect("set stored");
    set.member_ids()
        .map(|id| {
            (
                id,
                reg.get::<Episode>(&id).unwrap().expect("episode stored"),
            )
        })
        .collect()
}

/// The checks every built episode must pass, whatever its source.
fn assert_sound(eps: &[(Id, Episode)]) {
    for (id, ep) in eps {
        episodes::verify(ep).unwrap_or_else(|e| panic!("episode {}: {e:#}", id.short()));
        let after = ep.premises_after().unwrap();
        let (p, q) = (&ep.premises, &after);
        match &ep.edit {
            Edit::Insert { .. } => assert_eq!(q.len(), p.len() + 1),
            Edit::Remove { .. } => assert_eq!(q.len() + 1, p.len()),
            Edit::Replace { .. } => assert_eq!(q.len(), p.len()),
        }
        let before: BTreeSet<_> = p.iter().map(|x| &x.text).collect();
        let now: BTreeSet<_> = q.iter().map(|x| &x.text).collect();
        assert_eq!(
            before.symmetric_difference(&now).count(),
            if matches!(ep.edit, Edit::Replace { .. }) {
                2
            } else {
                1
            }
        );
    }
}

#[test]
fn generated_set_is_sound_and_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open_write(&dir.path().join("a.redb")).unwrap();
    let b = Store::open_write(&dir.path().join("b.redb")).unwrap();
    let out_a = episodes::build(&a, &spec(PremiseSource::Generated, 3), "fresh").unwrap();
    let out_b = episodes::build(&b, &spec(PremiseSource::Generated, 3), "fresh").unwrap();
    assert_eq!(out_a.set, out_b.set, "same seed, same set id");
    assert_eq!(out_a.episodes, 100, "{:#?}", out_a.cells);
    let eps = set_episodes(&a, "fresh");
    assert_sound(&eps);
    let types: BTreeSet<EditType> = eps.iter().map(|(_, e)| e.edit_type).collect();
    assert_eq!(types.len(), 4, "every edit type is made");
    // A rebuild adds nothing; another seed gives another set.
    let again = episodes::build(&a, &spec(PremiseSource::Generated, 3), "fresh").unwrap();
    assert_eq!((again.set, again.new_episodes), (out_a.set, 0));
    let other = episodes::build(&a, &spec(PremiseSource::Generated, 4), "other").unwrap();
    assert_ne!(other.set, out_a.set);
}

fn ingest_all(reg: &Store, folio: &Path, proofwriter: &Path) {
    ingest::ingest(reg, Format::Folio, folio, false).unwrap();
    ingest::ingest(reg, Format::ProofWriter, proofwriter, false).unwrap();
}

/// Writes a JSON-array file or a JSON-lines file with its records in a seeded shuffled order.
fn shuffled_copy(src: &Path, dst: &Path, seed: u64) {
    let text = std::fs::read_to_string(src).unwrap();
    let mut rng = deltalogic::rng::Rng::new(seed);
    if src.extension().is_some_and(|e| e == "json") {
        let mut v: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        rng.shuffle(&mut v);
        std::fs::write(dst, serde_json::to_string(&v).unwrap()).unwrap();
    } else {
        let mut lines: Vec<&str> = text.lines().collect();
        rng.shuffle(&mut lines);
        std::fs::write(dst, lines.join("\n") + "\n").unwrap();
    }
}

#[test]
#[cfg_attr(
    any(
        dataset_missing = "folio/v0.0",
        dataset_missing = "proofwriter/logic-lm"
    ),
    ignore = "needs the datasets folio/v0.0 and proofwriter/logic-lm (deltalogic datasets where)"
)]
fn paper_set_from_folio_and_proofwriter_is_sound_and_order_independent() {
    let dir = tempfile::tempdir().unwrap();
    let folio = crate::common::dataset("folio/v0.0/folio-validation.jsonl");
    let pw = crate::common::dataset("proofwriter/logic-lm/dev.json");
    let a = Store::open_write(&dir.path().join("a.redb")).unwrap();
    ingest_all(&a, &folio, &pw);
    let out = episodes::build(&a, &spec(PremiseSource::Ingested, 11), "paper").unwrap();
    for c in &out.cells {
        eprintln!("{c:?}");
    }
    let eps = set_episodes(&a, "paper");
    assert_sound(&eps);
    let sources: BTreeSet<&str> = eps.iter().map(|(_, e)| e.source.as_str()).collect();
    assert_eq!(sources, BTreeSet::from(["folio", "proofwriter"]));

    // The same records in another order (and the files ingested in the other order).
    let shuffled = tempfile::tempdir().unwrap();
    let (f2, p2) = (
        shuffled.path().join("folio.jsonl"),
        shuffled.path().join("pw.json"),
    );
    shuffled_copy(&folio, &f2, 1);
    shuffled_copy(&pw, &p2, 2);
    let b = Store::open_write(&dir.path().join("b.redb")).unwrap();
    ingest::ingest(&b, Format::ProofWriter, &p2, false).unwrap();
    ingest::ingest(&b, Format::Folio, &f2, false).unwrap();
    let out_b = episodes::build(&b, &spec(PremiseSource::Ingested, 11), "paper").unwrap();
    assert_eq!(out.set, out_b.set, "ids do not depend on input order");
}

#[test]
#[cfg_attr(
    any(
        dataset_missing = "proofwriter/logic-lm",
        dataset_missing = "ruletaker_cwa"
    ),
    ignore = "needs the datasets proofwriter/logic-lm and ruletaker_cwa (deltalogic datasets where)"
)]
fn killed_ingest_leaves_the_store_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let bin = env!("CARGO_BIN_EXE_deltalogic");
    let status = std::process::Command::new(bin)
        .args(["--store", store.to_str().unwrap(), "ingest", "proofwriter"])
        .arg(crate::common::dataset("proofwriter/logic-lm/dev.json"))
        .status()
        .unwrap();
    assert!(status.success());
    let before = Store::open_write(&store)
        .unwrap()
        .all::<deltalogic::datasets::BaseItem>()
        .unwrap()
        .len();
    // Kill a large ingest part way, several times at different moments.
    for delay_ms in [50, 150, 400] {
        let mut child = std::process::Command::new(bin)
            .args(["--store", store.to_str().unwrap(), "ingest", "ruletaker"])
            .arg(crate::common::dataset("ruletaker_cwa"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        let finished_first = child.wait().unwrap().success();
        let reg = Store::open_write(&store).unwrap();
        let n = reg.all::<deltalogic::datasets::BaseItem>().unwrap().len();
        if !finished_first {
            assert_eq!(
                n, before,
                "killed after {delay_ms} ms: the store must be unchanged"
            );
        }
    }
}

#[test]
#[cfg_attr(
    any(
        dataset_missing = "folio/v0.0",
        dataset_missing = "proofwriter/logic-lm",
        dataset_missing = "ruletaker_cwa"
    ),
    ignore = "needs the datasets folio/v0.0, proofwriter/logic-lm and ruletaker_cwa (deltalogic datasets where)"
)]
fn extended_sets_cover_closed_world_and_every_source() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Store::open_write(&dir.path().join("x.redb")).unwrap();
    let extended = |from, seed| BuildSpec {
        seed,
        from,
        per_type: Some(5),
        extended: true,
    };
    let generated = episodes::build(&reg, &extended(PremiseSource::Generated, 5), "gen").unwrap();
    assert_eq!(generated.episodes, 7 * 5, "{:#?}", generated.cells);

    ingest::ingest(
        &reg,
        Format::Folio,
        &crate::common::dataset("folio/v0.0/folio-validation.jsonl"),
        false,
    )
    .unwrap();
    ingest::ingest(
        &reg,
        Format::ProofWriter,
        &crate::common::dataset("proofwriter/logic-lm/dev.json"),
        false,
    )
    .unwrap();
    ingest::ingest(
        &reg,
        Format::RuleTaker,
        &crate::common::dataset("ruletaker_cwa/depth-2/dev.jsonl"),
        false,
    )
    .unwrap();
    let ingested = episodes::build(&reg, &extended(PremiseSource::Ingested, 5), "ing").unwrap();
    assert_eq!(ingested.episodes, 11 * 5, "{:#?}", ingested.cells);

    let mut cells = BTreeSet::new();
    for name in ["gen", "ing"] {
        let eps = set_episodes(&reg, name);
        assert_sound(&eps);
        cells.extend(
            eps.iter()
                .map(|(_, e)| (e.source.clone(), e.semantics, e.edit_type)),
        );
    }
    assert_eq!(cells.len(), 7 + 11, "every cell is made: {cells:?}");
}
