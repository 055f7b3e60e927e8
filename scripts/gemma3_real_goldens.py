#!/usr/bin/env python3
"""Dev only: goldens of the real Gemma 3 270M (Q4_K_M, fetched by scripts/fetch_models.sh) on
real prompts, for tests/suite/scorer_exactness.rs. The prompts are the first 20 (--cases) FOLIO
prompts of fixtures/golden/smollm2.json, each with the labels " True", " False", " Uncertain":
transformers on 2 threads shared with other builds took over 15 minutes for 50 and was cut.

- fixtures/golden/gemma3-270m-llamacpp.json: llama.cpp's tokens (scripts/llamacpp_tokenize.cpp:
  `llama-tokenize`'s defaults, BOS added as the file says) and its per-token label log-probs on the Q4_K_M file itself (8-bit activations in
  its quantised matmuls, f32 KV cache, no flash attention): the oracle of tokens and of the
  integer mode.
- fixtures/golden/gemma3-270m-transformers.json: the same tokens, log-probs from Hugging Face
  transformers loading the same GGUF (dequantised to f32 by the `gguf` package, eager attention,
  f32): the f32 reference. llama.cpp is not one for Gemma in f32: its CPU GeGLU reads GELU from an
  f16 table (tests/suite/families_llamacpp.rs).

With --f32-gguf F (a dequantised copy made by scripts/dequant_gguf.py) it also prints how far
llama.cpp on f32 weights is from transformers, for the record; nothing of it is written.

With --llamacpp-only, only the llama.cpp golden is written (no transformers): how its twin from
the second build (scripts/llamacpp.sh --avx2) was made, llama.cpp's own spread on this file that
tests/suite/numerics_llamacpp.rs holds the integer mode to:
    python3 scripts/gemma3_real_goldens.py --llamacpp-only --llama-bin .tools/llama.cpp-avx2/bin \
        --out-llamacpp fixtures/golden/gemma3-270m-llamacpp-avx2.json

Runs under a Python with torch, transformers, accelerate and gguf (the vLLM CPU venv:
.tools/vllm-venv/bin/python). A label's tokens are those of context+label after the context's
own, which must be a prefix (the scorer's rule).

Usage: .tools/vllm-venv/bin/python scripts/gemma3_real_goldens.py \
           [--model models/gemma-3-270m-Q4_K_M.gguf] [--llama-bin .tools/llama.cpp-build/bin] \
           [--f32-gguf /tmp/gemma3-270m-f32.gguf]
"""

import argparse
import copy
import json
import os
import subprocess

LABELS = [" True", " False", " Uncertain"]

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument("--model", default=os.path.join(root, "models", "gemma-3-270m-Q4_K_M.gguf"))
ap.add_argument("--llama-bin", default=os.path.join(root, ".tools", "llama.cpp-build", "bin"))
ap.add_argument("--prompts", default=os.path.join(root, "fixtures", "golden", "smollm2.json"))
ap.add_argument("--threads", default="2")
ap.add_argument("--cases", type=int, default=20)
ap.add_argument("--f32-gguf")
ap.add_argument("--llamacpp-only", action="store_true")
ap.add_argument("--out-llamacpp",
                default=os.path.join(root, "fixtures", "golden", "gemma3-270m-llamacpp.json"))
ap.add_argument("--out-transformers",
                default=os.path.join(root, "fixtures", "golden", "gemma3-270m-transformers.json"))
a = ap.parse_args()

bin_dir = os.path.abspath(a.llama_bin)
src = os.path.join(root, ".tools", "llama-cpp-python-0.3.36", "vendor", "llama.cpp")


def build(name):
    exe = os.path.join(bin_dir, f"deltalogic-{name}")
    subprocess.run(
        ["g++", "-O2", "-std=c++17", os.path.join(here, f"llamacpp_{name}.cpp"), "-o", exe,
         "-I", os.path.join(src, "include"), "-I", os.path.join(src, "ggml", "include"),
         "-L", bin_dir, "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{bin_dir}"],
        check=True,
    )
    return exe


exe = build("logprobs")
prompts = [c["context"] for c in json.load(open(a.prompts))["cases"]][: a.cases]
texts = [t for p in prompts for t in [p] + [p + label for label in LABELS]]
tokens = iter(
    [int(x) for x in line.split()]
    for line in subprocess.run([build("tokenize"), a.model], input="\0".join(texts),
                               capture_output=True, text=True, check=True).stdout.splitlines())

cases = []
for p in prompts:
    ctx = next(tokens)
    labels = []
    for label in LABELS:
        full = next(tokens)
        if full[: len(ctx)] != ctx or len(full) == len(ctx):
            raise SystemExit(f"{label!r} after {p[-40:]!r}: context is not a prefix")
        labels.append({"label": label, "tokens": full[len(ctx):]})
    cases.append({"context": p, "context_tokens": ctx, "labels": labels})


def llamacpp(model):
    lines = [" ".join(map(str, [len(c["context_tokens"])] + c["context_tokens"] + l["tokens"]))
             for c in cases for l in c["labels"]]
    out = subprocess.run([exe, model, a.threads, "reuse"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [[float(x) for x in line.split()] for line in out]


def transformers_logprobs():
    """The context once, each label from a copy of its cache; the LM head only over the rows
    that predict a label's tokens."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(int(a.threads))
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(os.path.abspath(a.model)), gguf_file=os.path.basename(a.model),
        dtype=torch.float32, attn_implementation="eager")
    model.eval()
    out = []
    for c in cases:
        with torch.no_grad():
            ctx = model(torch.tensor([c["context_tokens"]]), use_cache=True, logits_to_keep=1)
            for l in c["labels"]:
                rows = [ctx.logits[0, -1]]
                if len(l["tokens"]) > 1:
                    cache = copy.deepcopy(ctx.past_key_values)
                    rest = model(torch.tensor([l["tokens"][:-1]]), past_key_values=cache)
                    rows += list(rest.logits[0])
                lp = torch.log_softmax(torch.stack(rows).double(), dim=-1)
                out.append([float(lp[i, t]) for i, t in enumerate(l["tokens"])])
    return out


def golden(logprobs, source):
    it = iter(logprobs)
    g = {"model": os.path.basename(a.model), "source": source, "cases": []}
    for c in cases:
        g["cases"].append({**c, "labels": [{**l, "logprobs": next(it)} for l in c["labels"]]})
    return g


def compare(x, y, what):
    diffs = [abs(p - q) for lx, ly in zip(x, y) for p, q in zip(lx, ly)]
    agree = 0
    for i in range(0, len(x), len(LABELS)):
        best = lambda v: max(range(len(LABELS)), key=lambda j: sum(v[i + j]))
        agree += best(x) == best(y)
    print(f"{what}: {len(diffs)} tokens, max |d| {max(diffs):.3e}, "
          f"mean {sum(diffs) / len(diffs):.3e}; best label {agree}/{len(x) // len(LABELS)}")


q4 = llamacpp(a.model)
build = os.path.basename(os.path.dirname(bin_dir))
goldens = [(a.out_llamacpp, golden(q4, f"llama.cpp (llama-cpp-python 0.3.36 vendor tree, build "
                                       f"{build}) on the Q4_K_M file, f32 KV cache, no flash "
                                       "attention"))]
if not a.llamacpp_only:
    ref = transformers_logprobs()
    compare(q4, ref, "llama.cpp Q4_K_M vs transformers f32")
    goldens.append((a.out_transformers, golden(ref, "transformers (GGUF dequantised to f32 by "
                                                    "gguf, eager attention, f32), the tokens of "
                                                    "llama.cpp")))
for path, g in goldens:
    with open(path, "w") as f:
        json.dump(g, f, indent=1)
        f.write("\n")
if a.f32_gguf and not a.llamacpp_only:
    compare(llamacpp(a.f32_gguf), ref, "llama.cpp on f32 weights vs transformers f32")
