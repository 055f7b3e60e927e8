//! `score --shard I/N`: disjoint parts that cover the set, the same for the same set and N;
//! forward tokens summed over the parts within 2% of one run's; `cache merge` of the part stores
//! then `score` gives the single run's result and a byte-identical report (stand-in model on a
//! large set; the real SmolLM2 on a small one through the command line).

use crate::common;

use common::{dl, model_id, score_with, set, ByteModel, NoChat};
use deltalogic::benchmarks::deltalogic::{self as episodes, BuildSpec, PremiseSource};
use deltalogic::benchmarks::{self, Models};
use deltalogic::eval::cache::{self, MergeOptions};
use deltalogic::eval::shard::{self, Shard};
use deltalogic::eval::{self, Normalisation, PromptRecord, Quiet, ScoreRecord};
use deltalogic::report::{self, Format};
use deltalogic::store::{Id, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn build(path: &Path, per_type: usize) {
    let reg = Store::open_write(path).unwrap();
    let spec = BuildSpec {
        seed: 3,
        from: PremiseSource::Generated,
        per_type: Some(per_type),
        extended: true,
    };
    episodes::build(&reg, &spec, "set").unwrap();
}

fn copy(from: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to
}

fn report_json(reg: &Store) -> String {
    report::render(
        &report::entries(reg, deltalogic::benchmarks::ALL, &[], &[]).unwrap(),
        Format::Json,
    )
    .unwrap()
}

#[test]
fn shard_syntax_is_checked() {
    assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
    for bad in ["4/4", "1", "a/2", "0/0", "-1/3", "1/2/3"] {
        let err = bad.parse::<Shard>().unwrap_err();
        assert!(err.contains(bad) && err.contains("I/N"), "{err}");
    }
}

#[test]
fn parts_are_disjoint_cover_the_set_and_are_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    build(&path, 6);
    let reg = Store::open_write(&path).unwrap();
    let (_, stored) = set(&reg, "set");
    let b = benchmarks::ALL.named(&stored.benchmark).unwrap();
    let models = Models {
        subject: &NoChat,
        judge: model_id("m"),
    };
    let prepared = b.prepare(&reg, &stored, "plain", &models).unwrap();
    let n = prepared.items().len();
    assert!(n > 40, "{n} items");
    for count in [1, 2, 3, 7, n + 2] {
        let parts = shard::parts(&*prepared, count).unwrap();
        assert_eq!(parts.len(), count);
        let mut all: Vec<usize> = parts.concat();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..n).collect::<Vec<_>>(),
            "{count} parts cover the set once"
        );
        // Balanced within the cut's slack (a part of a set smaller than N may be empty).
        if count <= n {
            let (lo, hi) = (n / count, n.div_ceil(count));
            let slack = (n / count / 8).max(1);
            for p in &parts {
                assert!(
                    p.len() + 2 * slack >= lo && p.len() <= hi + 2 * slack,
                    "{count}: {}",
                    p.len()
                );
            }
        }
        let again = b.prepare(&reg, &stored, "plain", &models).unwrap();
        assert_eq!(shard::parts(&*again, count).unwrap(), parts);
    }
}

/// Recomputes a merged score with the stand-in model `m`, reading its prompt from `from`.
fn recompute_from(
    from: &Store,
) -> impl FnMut(&cache::Computed) -> anyhow::Result<Option<cache::Recomputed>> + '_ {
    move |c| {
        let cache::Computed::Score(s) = c else {
            panic!("DeltaLogic's plain template generates nothing")
        };
        let text = from.get::<PromptRecord>(&Id(s.prompt))?.unwrap().text;
        Ok(Some(cache::Recomputed::Logprobs(eval::rescore(
            &ByteModel::new("m"),
            &text,
            &s.label,
        )?)))
    }
}

#[test]
fn merged_parts_equal_a_single_run() {
    const N: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.redb");
    build(&base, 60);

    let single = Store::open_write(&copy(&base, dir.path(), "single.redb")).unwrap();
    let one = score_with(&single, "m", "set", None, Normalisation::Mean);
    assert!(one.report.items >= 400, "a large set: {}", one.report.items);

    let mut forward = 0;
    let mut items = 0;
    let merged = Store::open_write(&copy(&base, dir.path(), "merged.redb")).unwrap();
    for index in 0..N {
        let path = copy(&base, dir.path(), &format!("part{index}.redb"));
        {
            let reg = Store::open_write(&path).unwrap();
            let (set_id, stored) = set(&reg, "set");
            let b = benchmarks::ALL.named(&stored.benchmark).unwrap();
            let report = eval::run_part(
                &reg,
                &eval::Run {
                    benchmark: b,
                    set_id,
                    set: &stored,
                    models: eval::Participants {
                        subject: model_id("m"),
                        info: &NoChat,
                        judge: None,
                    },
                    template: "plain",
                    norms: vec![Normalisation::Mean],
                    shard: Some(Shard { index, count: N }),
                    execution: Default::default(),
                },
                |_| Ok(eval::Engine::Local(ByteModel::new("m"))),
                &mut Quiet,
            )
            .unwrap();
            forward += report.forward_tokens;
            items += report.items;
            assert!(
                report::entries(&reg, deltalogic::benchmarks::ALL, &[], &[])
                    .unwrap()
                    .is_empty(),
                "a part stores no result"
            );
        }
        let incoming = cache::open_incoming(&merged, &path).unwrap();
        let mut recompute = recompute_from(&incoming);
        let r = cache::merge(&merged, &incoming, MergeOptions::new(&mut recompute)).unwrap();
        assert!(
            r.conflicts.is_empty(),
            "parts share no key: {:?}",
            r.conflicts
        );
        assert!(r.unverified.is_empty());
    }
    assert_eq!(items, one.report.items, "the parts cover the set once");
    let single_forward = one.report.forward_tokens;
    assert!(
        forward as f64 <= single_forward as f64 * 1.02,
        "parts ran {forward} forward tokens, one run {single_forward}"
    );

    // The merged store holds exactly the single run's scores, bit for bit; `score` computes
    // nothing and stores the same result; the report is byte-identical.
    let bits = |reg: &Store| -> BTreeMap<Id, Vec<u32>> {
        reg.all::<ScoreRecord>()
            .unwrap()
            .into_iter()
            .map(|(k, s)| (k, s.logprobs.iter().map(|x| x.to_bits()).collect()))
            .collect()
    };
    assert_eq!(bits(&merged), bits(&single));
    let after = score_with(&merged, "m", "set", None, Normalisation::Mean);
    assert_eq!(after.report.scores_computed, 0);
    assert_eq!(after.report.forward_tokens, 0);
    assert_eq!(after.result, one.result);
    assert_eq!(report_json(&merged), report_json(&single));
}

#[test]
#[cfg_attr(
    models_missing,
    ignore = "needs the fetched models: bash scripts/fetch_models.sh"
)]
fn real_model_parts_merged_equal_a_single_run() {
    let model = common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.redb");
    dl(
        &base,
        &["model", "add", model.to_str().unwrap(), "--name", "smol"],
    );
    common::build_generated(&base, "1", "2", "small");
    let score = ["--json", "score", "--model", "smol", "--set", "small"];
    let single = copy(&base, dir.path(), "single.redb");
    let one: serde_json::Value = serde_json::from_slice(&dl(&single, &score).stdout).unwrap();

    let merged = copy(&base, dir.path(), "merged.redb");
    let mut forward = 0;
    for index in 0..2 {
        let part = copy(&base, dir.path(), &format!("part{index}.redb"));
        let shard = format!("{index}/2");
        let args = [&score[..], &["--shard", &shard]].concat();
        let out: serde_json::Value = serde_json::from_slice(&dl(&part, &args).stdout).unwrap();
        assert_eq!(out["shard"]["count"], 2);
        assert!(
            out.get("result").is_none(),
            "a part stores no result: {out}"
        );
        forward += out["forward_tokens"].as_u64().unwrap();
        dl(&merged, &["cache", "merge", part.to_str().unwrap()]);
    }
    let single_forward = one["forward_tokens"].as_u64().unwrap();
    assert!(
        forward as f64 <= single_forward as f64 * 1.02,
        "{forward} vs {single_forward}"
    );
    let after: serde_json::Value = serde_json::from_slice(&dl(&merged, &score).stdout).unwrap();
    assert_eq!(after["scores_computed"], 0);
    assert_eq!(after["result"], one["result"]);
    let report = |store: &Path| {
        let svg = store.with_extension("svg");
        dl(
            store,
            &["report", "--format", "json", "--svg", svg.to_str().unwrap()],
        )
        .stdout
    };
    assert_eq!(report(&merged), report(&single));
}
