#!/usr/bin/env python3
"""Dev only: adds llama.cpp's next-token logits and greedy continuations to
fixtures/golden/families-llamacpp.json (issue 23), beside the label log-probs that
scripts/llamacpp_families.py put there.

Per file and per context: `next_logits`, llama.cpp's logits over the 320-token vocabulary at
the context's last position, and `greedy`, the 8 tokens it picks by argmax one after another.
These come from the llama-cpp-python 0.3.36 package (the same llama.cpp as the C++ program of
llamacpp_families.py), through its low-level `eval` and `scores`, never its `echo` log-probs
(shifted by one position in that version). f32 KV cache, no flash attention, 2 threads.

The files are written again by `deltalogic dev family-files`; a file whose sha256 is not the
golden's is refused, so the label log-probs and the new fields are about the same bytes. As a
check of the two routes into llama.cpp, the label log-probs are recomputed here and their
largest difference from the stored ones is printed.

Usage: /work/llcpp-venv/bin/python scripts/llamacpp_families_logits.py \
           [--deltalogic target/debug/deltalogic] [--dir /tmp/deltalogic-families]
"""

import argparse
import hashlib
import json
import os
import subprocess

import llama_cpp
import numpy as np

GREEDY = 8
GGML_TYPE_F32 = 0

ap = argparse.ArgumentParser()
ap.add_argument("--deltalogic", default="target/debug/deltalogic")
ap.add_argument("--dir", default="/tmp/deltalogic-families")
ap.add_argument("--golden", default="fixtures/golden/families-llamacpp.json")
a = ap.parse_args()

subprocess.run([a.deltalogic, "dev", "family-files", "--out", a.dir], check=True,
               capture_output=True)
golden = json.load(open(a.golden))


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def short(x):
    """A float32 as 9 significant digits: enough to give back the same float32."""
    return float(f"{x:.9g}")


for entry in golden["files"]:
    path = os.path.join(a.dir, entry["file"])
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if sha != entry["sha256"]:
        raise SystemExit(f"{path}: sha256 {sha}, the golden's is {entry['sha256']}")
    llm = llama_cpp.Llama(model_path=path, n_ctx=128, n_batch=128, n_threads=2,
                          n_threads_batch=2, logits_all=True, flash_attn=False,
                          type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, verbose=False)
    label_diff = 0.0
    for case in entry["cases"]:
        ctx = case["context"]
        for label in case["labels"]:
            llm.reset()
            llm.eval(ctx + label["tokens"])
            rows = np.array(llm.scores[len(ctx) - 1:len(ctx) - 1 + len(label["tokens"])])
            for row, tok, stored in zip(rows, label["tokens"], label["logprobs"]):
                label_diff = max(label_diff, abs(log_softmax(row)[tok] - stored))
        llm.reset()
        llm.eval(ctx)
        logits = np.array(llm.scores[len(ctx) - 1], dtype=np.float32)
        case["next_logits"] = [short(x) for x in logits]
        greedy = []
        for _ in range(GREEDY):
            t = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            greedy.append(t)
            llm.eval([t])
        case["greedy"] = greedy
    del llm
    print(f"{entry['file']}: logits and {GREEDY} greedy tokens for {len(entry['cases'])} "
          f"contexts; label log-probs recomputed, max |diff| from the stored {label_diff:.2e}")

golden["logits_source"] = (
    f"llama.cpp through llama-cpp-python {llama_cpp.__version__} (its eval and scores, not "
    "echo), f32 KV cache, no flash attention, 2 threads, scripts/llamacpp_families_logits.py"
)
with open(a.golden, "w") as f:
    json.dump(golden, f, indent=1)
    f.write("\n")
