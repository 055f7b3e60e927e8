#!/usr/bin/env python3
"""Dev only: Hugging Face transformers' label log-probs, next-token logits and greedy tokens on
a family file exported to a Hugging Face directory, as a golden of fixtures/golden: Gemma 4's
(issue 43; families-gemma4-transformers.json for E2B's file, families-gemma4-e4b-transformers.json
for E4B's), the f32 reference for Gemma 4 (llama.cpp is not one in f32 for Gemma, its CPU GELU
being read from an f16 table), and gpt-oss's (issue 45; families-gptoss-transformers.json), the
check that `model export-hf` writes what transformers' `GptOssForCausalLM` reads
(tests/suite/families_llamacpp.rs).

The f32 file (`gemma4-e2b-window16-f32.gguf` by default, --name) is written by `deltalogic dev
family-files`, exported with `deltalogic model export-hf` (whose config.json and tensor names are
transformers'), and loaded by transformers' own class for it (--class) in f32 with eager
attention. The contexts and labels are read from the llama.cpp golden of the same file (--cases,
beside --out), and the golden has its layout.

Runs under a Python with torch and transformers (the vLLM CPU venv):
    .tools/vllm-venv/bin/python scripts/gemma4_transformers_goldens.py \
        [--deltalogic target/debug/deltalogic] [--dir /tmp/gemma4]
for E4B's file:
    .tools/vllm-venv/bin/python scripts/gemma4_transformers_goldens.py \
        --name gemma4-e4b-window16 --cases families-gemma4-e4b-llamacpp.json \
        --out fixtures/golden/families-gemma4-e4b-transformers.json
and for gpt-oss's:
    .tools/vllm-venv/bin/python scripts/gemma4_transformers_goldens.py \
        --name gpt-oss-20b-window16 --class GptOssForCausalLM \
        --cases families-gptoss-llamacpp.json \
        --out fixtures/golden/families-gptoss-transformers.json
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess

import torch
import transformers

ap = argparse.ArgumentParser()
ap.add_argument("--deltalogic", default="target/debug/deltalogic")
ap.add_argument("--dir", default="/tmp/deltalogic-gemma4")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--out", default="fixtures/golden/families-gemma4-transformers.json")
ap.add_argument("--name", default="gemma4-e2b-window16", help="the family file")
ap.add_argument("--cases", default="families-gemma4-llamacpp.json",
                help="the llama.cpp golden of that file, beside --out")
ap.add_argument("--class", dest="cls", default="Gemma4ForCausalLM",
                help="the transformers class that reads the exported directory")
a = ap.parse_args()
GREEDY = 8
NAME = a.name
torch.set_num_threads(a.threads)

os.makedirs(a.dir, exist_ok=True)
subprocess.run([a.deltalogic, "dev", "family-files", "--out", a.dir, "--only", NAME],
               check=True, capture_output=True)
gguf = os.path.join(a.dir, f"{NAME}-f32.gguf")
os.remove(os.path.join(a.dir, f"{NAME}-q8_0.gguf"))
hf = os.path.join(a.dir, "hf")
shutil.rmtree(hf, ignore_errors=True)
subprocess.run([a.deltalogic, "model", "export-hf", "--model", gguf, "-o", hf], check=True)
sha = hashlib.sha256(open(gguf, "rb").read()).hexdigest()
os.remove(gguf)

model = getattr(transformers, a.cls).from_pretrained(hf, dtype=torch.float32, attn_implementation="eager")
model.eval()


def cases():
    """The llama.cpp golden's contexts and labels (scripts/llamacpp_families.py's)."""
    path = os.path.join(os.path.dirname(a.out), a.cases)
    (golden,) = [f["cases"] for f in json.load(open(path))["files"]
                 if f["file"] == f"{NAME}-f32.gguf"]
    return [(c["context"], [l["tokens"] for l in c["labels"]]) for c in golden]


@torch.no_grad()
def logits(ids):
    return model(torch.tensor([ids])).logits[0].float()


entry = {"file": f"{NAME}-f32.gguf", "sha256": sha, "cases": []}
for ctx, labels in cases():
    case = {"context": ctx, "labels": []}
    for l in labels:
        lp = torch.log_softmax(logits(ctx + l), dim=-1)
        case["labels"].append({
            "tokens": l,
            "logprobs": [float(lp[len(ctx) - 1 + i, t]) for i, t in enumerate(l)],
        })
    case["next_logits"] = [float(x) for x in logits(ctx)[-1]]
    seq = list(ctx)
    for _ in range(GREEDY):
        seq.append(int(torch.argmax(logits(seq)[-1])))
    case["greedy"] = seq[len(ctx):]
    entry["cases"].append(case)
    print(f"context of {len(ctx)}: greedy {case['greedy']}")
shutil.rmtree(hf)

golden = {
    "source": f"transformers {transformers.__version__} {a.cls}, f32, "
              "eager attention, on the `deltalogic model export-hf` directory of the file; "
              "scripts/gemma4_transformers_goldens.py",
    "files": [entry],
}
with open(a.out, "w") as f:
    json.dump(golden, f, indent=1)
    f.write("\n")
