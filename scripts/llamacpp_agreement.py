#!/usr/bin/env python3
"""Dev only: llama.cpp against the scores a result read from a store.

For every (prompt, label set) behind RESULT, llama.cpp scores the same label tokens after the
same context (the prompt tokenized by llama.cpp's own tokenizer, which the tokenizer goldens show
equal to ours). Prints the per-token mean and max absolute difference and how often the best label
agrees, by mean and by summed log-prob. The model file is llama.cpp's to read as is: for a
quantised file its matmuls quantise activations to 8 bits, ours do not.

Usage: llamacpp_agreement.py --store S --result R --model M.gguf \
           --llama-bin .tools/llama.cpp-build/bin [--deltalogic target/release/deltalogic] [--sample N]
Needs llama.cpp's deltalogic-logprobs (made by scripts/llamacpp_golden.py) in --llama-bin.
"""

import argparse
import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_token_goldens import tokenize  # noqa: E402  (one way to call llama-tokenize)

ap = argparse.ArgumentParser()
ap.add_argument("--store", required=True)
ap.add_argument("--result", required=True)
ap.add_argument("--model", required=True)
ap.add_argument("--llama-bin", required=True)
ap.add_argument("--deltalogic", default="target/release/deltalogic")
ap.add_argument("--threads", default="2")
ap.add_argument("--sample", type=int, help="only this many prompts, drawn with a fixed seed")
a = ap.parse_args()

audit = json.loads(subprocess.run(
    [a.deltalogic, "--store", a.store, "--json", "audit", a.result, "--prompts"],
    capture_output=True, text=True, check=True).stdout)["audit"]

# (prompt text) -> [(label, tokens, our logprobs)], each label once.
cases = defaultdict(dict)
for s in audit["scores"]:
    cases[s["prompt_text"]][s["label"]] = (s["tokens"], s["logprobs"])


if a.sample and a.sample < len(cases):
    keep = random.Random(0).sample(sorted(cases), a.sample)
    cases = {p: cases[p] for p in keep}

rows = []  # (context tokens, prompt, label)
for prompt, labels in cases.items():
    ctx = tokenize(Path(a.llama_bin) / "llama-tokenize", a.model, prompt)
    for label in sorted(labels):
        rows.append((ctx, prompt, label))
# Neighbours share prefixes: llama.cpp keeps them in its cache ("reuse").
rows.sort(key=lambda r: (r[0], r[2]))
lines = [" ".join(map(str, [len(ctx)] + ctx + cases[p][l][0])) for ctx, p, l in rows]
out = subprocess.run(
    [os.path.join(a.llama_bin, "deltalogic-logprobs"), a.model, a.threads, "reuse"],
    input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout.splitlines()

theirs = defaultdict(dict)
diffs = []
for (ctx, p, l), line in zip(rows, out):
    lp = [float(x) for x in line.split()]
    ours = cases[p][l][1]
    assert len(lp) == len(ours), f"token count differs for {l!r}"
    diffs += [abs(x - y) for x, y in zip(lp, ours)]
    theirs[p][l] = lp


def best(scores, norm):
    return max(sorted(scores), key=lambda l: norm(scores[l]))


mean = lambda v: sum(v) / len(v)
agree = {"mean": 0, "sum": 0}
for p, labels in cases.items():
    ours = {l: v[1] for l, v in labels.items()}
    for name, norm in (("mean", mean), ("sum", sum)):
        agree[name] += best(ours, norm) == best(theirs[p], norm)
n = len(cases)
print(f"{n} (prompt, label set) cases, {len(diffs)} label tokens: "
      f"mean abs diff {mean(diffs):.3e}, max {max(diffs):.3e}")
for name in ("mean", "sum"):
    print(f"best label by {name}: agrees on {agree[name]}/{n} ({100 * agree[name] / n:.1f}%)")
