#!/usr/bin/env python3
"""Dev only: the DeltaLogic paper's models on its 100-episode set, beside the published Table 1.

Given the user's model files (GGUF or Hugging Face directories) by name, this ingests FOLIO and
ProofWriter, builds the paper's mix (`deltalogic build deltalogic --seed 0 --name paper`),
registers and scores each model with deltalogic's CLI (only what the store lacks is computed), and
prints each model's initial accuracy, revision accuracy, inertia, over-flip, abstention and
revision gap (overall, with the bootstrap interval and the count each is over) beside the
published values where the paper gives them.

Published (Table 1): Qwen3-1.7B initial 0.667, revision 0.467, inertia 0.600; Qwen3-4B 0.650,
0.450, 0.600; Phi-4-mini-instruct 0.950, 0.850 (inertia not given). Names that select them:
qwen3-1.7b, qwen3-4b, phi-4-mini; qwen3-0.6b and any other name run without a published row.

Usage:
  scripts/paper_models.py [--deltalogic target/release/deltalogic] [--store store/paper-models.redb]
      [--datasets ../shared/datasets] [--template plain] [--norm mean] [--threads 2]
      qwen3-1.7b=PATH qwen3-4b=PATH phi-4-mini=PATH [qwen3-0.6b=PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

PUBLISHED = {
    "qwen3-1.7b": {"initial_accuracy": 0.667, "revision_accuracy": 0.467, "inertia": 0.600},
    "qwen3-4b": {"initial_accuracy": 0.650, "revision_accuracy": 0.450, "inertia": 0.600},
    "phi-4-mini": {"initial_accuracy": 0.950, "revision_accuracy": 0.850},
}
COLUMNS = ["initial_accuracy", "revision_accuracy", "inertia", "over_flip", "abstain",
           "revision_gap"]

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("models", nargs="+", metavar="NAME=PATH")
ap.add_argument("--deltalogic", default="target/release/deltalogic")
ap.add_argument("--store", default="store/paper-models.redb")
ap.add_argument("--datasets", default="../shared/datasets")
ap.add_argument("--template", default="plain")
ap.add_argument("--norm", default="mean")
ap.add_argument("--threads", default="2")
a = ap.parse_args()

models = []
for spec in a.models:
    name, sep, path = spec.partition("=")
    if not sep or not name or not os.path.exists(path):
        sys.exit(f"error: {spec!r}: give NAME=PATH with an existing model file or directory")
    models.append((name, path))


def cli(*args, capture=False):
    run = subprocess.run([a.deltalogic, "--store", a.store, *args], text=True,
                         stdout=subprocess.PIPE if capture else None)
    if run.returncode != 0:
        sys.exit(f"error: deltalogic {' '.join(args)} failed ({run.returncode})")
    return run.stdout


os.makedirs(os.path.dirname(os.path.abspath(a.store)), exist_ok=True)
cli("ingest", "folio", os.path.join(a.datasets, "folio", "v0.0"))
cli("ingest", "proofwriter", os.path.join(a.datasets, "proofwriter", "logic-lm"))
cli("build", "deltalogic", "--seed", "0", "--name", "paper")
for name, path in models:
    cli("model", "add", path, "--name", name)
    cli("score", "--model", name, "--set", "paper", "--template", a.template, "--norm", a.norm,
        "--threads", a.threads)

with tempfile.TemporaryDirectory() as tmp:
    out = cli("--json", "report", "--sets", "paper", "--models", *[n for n, _ in models],
              "--norm", a.norm, "--svg", os.path.join(tmp, "figure.svg"), capture=True)
report, _ = json.JSONDecoder().raw_decode(out)
results = {r["model"]: r for r in report["results"]
           if r["benchmark"] == "deltalogic" and r.get("template") == a.template}


def cell(m):
    if m["value"] is None:
        return "—"
    return f"{m['value']:.3f} [{m['lo']:.2f}, {m['hi']:.2f}] n={m['n']}"


print(f"DeltaLogic `paper` set (100 episodes, seed 0), template {a.template}, "
      f"normalisation {a.norm}; published values from the paper's Table 1 in parentheses\n")
print("| model | " + " | ".join(COLUMNS) + " |")
print("| --- " * (len(COLUMNS) + 1) + "|")
for name, _ in models:
    r = results.get(name)
    if r is None:
        sys.exit(f"error: no {a.template}/{a.norm} result for {name} in the report")
    overall = r["metrics"]["overall"]
    row = []
    for c in COLUMNS:
        published = PUBLISHED.get(name, {}).get(c)
        row.append(cell(overall[c]) + (f" ({published:.3f})" if published is not None else ""))
    print(f"| {name} | " + " | ".join(row) + " |")
