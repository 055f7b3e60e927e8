#!/usr/bin/env python3
"""Dev only: llama.cpp's per-token label log-probs for the cases of a reference golden (same
contexts, same tokens), written as a golden of the same shape. Prints the mean and max absolute
difference to the reference and the best-label agreement.

Usage: llamacpp_golden.py --model M.gguf --golden fixtures/golden/smollm2.json \
           --llama-bin .tools/llama.cpp-build/bin --out fixtures/golden/smollm2-llamacpp.json
Builds scripts/llamacpp_logprobs.cpp against the llama.cpp tree next to --llama-bin first.

The goldens of tests/suite/numerics_llamacpp.rs come from two builds (scripts/llamacpp.sh, and with
--avx2): the native one (AVX-512 here) as `<model>-llamacpp.json` and the AVX2 one as
`<model>-llamacpp-avx2.json`; their distance is llama.cpp's own spread across vector units.
"""

import argparse
import json
import os
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--golden", required=True)
ap.add_argument("--llama-bin", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--threads", default="2")
a = ap.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
src = os.path.join(root, ".tools", "llama-cpp-python-0.3.36", "vendor", "llama.cpp")
exe = os.path.join(a.llama_bin, "deltalogic-logprobs")
subprocess.run(
    ["g++", "-O2", "-std=c++17", os.path.join(here, "llamacpp_logprobs.cpp"), "-o", exe,
     "-I", os.path.join(src, "include"), "-I", os.path.join(src, "ggml", "include"),
     "-L", a.llama_bin, "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{os.path.abspath(a.llama_bin)}"],
    check=True,
)
g = json.load(open(a.golden))
lines = []
for c in g["cases"]:
    for l in c["labels"]:
        lines.append(" ".join(map(str, [len(c["context_tokens"])] + c["context_tokens"] + l["tokens"])))
out = subprocess.run([exe, a.model, a.threads], input="\n".join(lines) + "\n", capture_output=True,
                     text=True, check=True).stdout.splitlines()
diffs, agree, it = [], 0, iter(out)
for c in g["cases"]:
    for l in c["labels"]:
        lp = [float(x) for x in next(it).split()]
        diffs += [abs(x - y) for x, y in zip(lp, l["logprobs"])]
        l["reference_logprobs"], l["logprobs"] = l["logprobs"], lp
    best = lambda key: max(range(len(c["labels"])), key=lambda i: sum(c["labels"][i][key]))
    agree += best("logprobs") == best("reference_logprobs")
for c in g["cases"]:
    for l in c["labels"]:
        del l["reference_logprobs"]
build = os.path.basename(os.path.dirname(os.path.abspath(a.llama_bin)))
g["source"] = f"llama.cpp (llama-cpp-python 0.3.36 vendor tree, build {build}), f32 KV cache"
with open(a.out, "w") as f:
    json.dump(g, f, indent=1)
    f.write("\n")
print(f"llama.cpp vs reference: {len(diffs)} tokens, mean abs diff {sum(diffs)/len(diffs):.3e}, "
      f"max {max(diffs):.3e}; best label agrees on {agree}/{len(g['cases'])}")
