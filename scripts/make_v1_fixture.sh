#!/usr/bin/env bash
# Makes fixtures/v1: a small store written by deltalogic's schema-1 code (commit 5ed1dc5, the
# last main before the benchmark redesign), with the report that code gave for it. The
# compatibility test (tests/suite/compat.rs) opens a copy with today's code, which must migrate it and
# report the same numbers, and find every score (a rescore computes nothing).
#
# Scores come from the deterministic stand-in model of tests/common (no weights needed), so the
# fixture is independent of the transformer's numerics. Run from the repository root.
set -euo pipefail
root=$(pwd)
old=$(mktemp -d)/v1
git worktree add --detach "$old" 5ed1dc5
trap 'git worktree remove --force "$old"' EXIT
cat > "$old/tests/make_v1_fixture.rs" <<'RS'
mod common;
use common::ByteModel;
use deltalogic::episodes::{self, BuildSpec, From};
use deltalogic::questions::{self, robustlr};
use deltalogic::registry::{ingest, Id, Names, Registry};
use deltalogic::scoring::{self, prompt, ModelRecord, Normalisation, Quiet};
use deltalogic::{report, results};
use std::path::Path;

fn model(reg: &Registry, name: &'static str) -> Id {
    let record = ModelRecord {
        files_blake3: format!("stand-in {name}"),
        backend: "test-bytes".into(),
        dtype: "f32".into(),
        scorer_version: "test".into(),
        format: "gguf".into(),
        architecture: "bytes".into(),
        path: format!("stand-in/{name}"),
        bytes: 0,
    };
    reg.write(|w| {
        let (id, _) = w.put(&record)?;
        w.name(Names::Models, name, id)?;
        Ok(id)
    })
    .unwrap()
}

#[test]
#[ignore]
fn make_v1_fixture() {
    let out = Path::new(&std::env::var("FIXTURE_DIR").unwrap()).to_path_buf();
    let reg = Registry::open(&out.join("store.redb")).unwrap();
    let spec = BuildSpec { seed: 3, from: From::Generated, per_type: Some(4), extended: false };
    episodes::build(&reg, &spec, "dl").unwrap();
    let config = deltalogic::robustlr::BuildConfig {
        seed: 2, per_set: 2, from: deltalogic::robustlr::Source::Generated,
    };
    robustlr::build(&reg, &config, "rl").unwrap();
    for name in ["m1", "m2"] {
        let id = model(&reg, name);
        let (set, eps) = episodes::load_set(&reg, "dl").unwrap();
        for norm in [Normalisation::Mean, Normalisation::Sum] {
            let t = prompt::plain();
            let (_, rows) = scoring::score_set(&reg, id, || Ok(ByteModel::new(name)), &eps, &t, norm, &mut Quiet).unwrap();
            scoring::record_result(&reg, id, set, &t, norm, &rows).unwrap();
        }
        for (set_name, template) in [("rl", "plain-question")] {
            let (set, _, qs) = questions::load_set(&reg, set_name).unwrap();
            let t = prompt::question_template(template).unwrap();
            let (_, rows) = scoring::score_questions(&reg, id, || Ok(ByteModel::new(name)), &qs, &*t, Normalisation::Mean, &mut Quiet).unwrap();
            scoring::record_question_result(&reg, id, set, &*t, Normalisation::Mean, &rows).unwrap();
        }
    }
    let full = report::Report {
        deltalogic: results::entries(&reg, &[], &[]).unwrap(),
        questions: results::question_entries(&reg, &[], &[]).unwrap(),
    };
    for (format, file) in [(report::Format::Json, "report.json"), (report::Format::Md, "report.md")] {
        std::fs::write(out.join(file), report::render_report(&full, format).unwrap()).unwrap();
    }
    // Many small scoring transactions leave free pages behind: compact so the fixture is small.
    drop(reg);
    let mut db = redb::Database::open(out.join("store.redb")).unwrap();
    while db.compact().unwrap() {}
}
RS
rm -f fixtures/v1/store.redb
(cd "$old" && CARGO_TARGET_DIR="$root/target" FIXTURE_DIR="$root/fixtures/v1" \
    cargo test --test make_v1_fixture -- --ignored --nocapture)
ls -l fixtures/v1
