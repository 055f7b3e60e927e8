#!/usr/bin/env python3
"""Dev only: llama.cpp's label log-probs on the family files (issue 23), as the goldens
fixtures/golden/families-llamacpp.json that tests/suite/families_llamacpp.rs compares our engine with.

The files are random-weight GGUFs at the real models' shapes, 2 layers, written by
`deltalogic dev family-files` (src/model/dev/family_files.rs says what each carries); the golden
records each file's sha256, and the test writes the same bytes again and checks it.

Usage: scripts/llamacpp_families.py [--deltalogic target/release/deltalogic] [--dir /tmp/fam]
           [--only NAME ...] [--storage f32|q8_0|mxfp4 ...] [--greedy] [--out FILE]
           [--llama-bin DIR] [--q8-only]
Needs llama.cpp built by scripts/llamacpp.sh; builds scripts/llamacpp_logprobs.cpp against it
(--llama-bin: the build's bin directory, by default .tools/llama.cpp-build/bin, the native one).

Each golden has a twin `<golden>-avx2.json` from the second build (`scripts/llamacpp.sh --avx2`),
its quantised files only: the distance between the two builds is llama.cpp's own spread on that file,
what tests/suite/families_llamacpp.rs holds our integer mode to. Made, for each golden, with the
same --only names and
    --greedy --q8-only --llama-bin .tools/llama.cpp-avx2/bin --out fixtures/golden/<golden>-avx2.json

--only writes and scores only the named files of `model::dev::family_files::files()`. --greedy also
records, per context, llama.cpp's logits after it (`next_logits`) and its 8 argmax tokens one
after another (`greedy`), from the same C++ program (its "greedy" mode) rather than from
scripts/llamacpp_families_logits.py: how fixtures/golden/families-dense-llamacpp.json (SmolLM3,
OLMo 2, Mistral 3; issue 43) was made:
    scripts/llamacpp_families.py --only smollm3-3b --only olmo2-1b --only ministral3-3b \
        --only ministral3-3b-window16 --greedy --out fixtures/golden/families-dense-llamacpp.json
and fixtures/golden/families-moe-llamacpp.json (Qwen3-MoE at Qwen3-30B-A3B's widths, 1 layer, a
2.5 GB f32 file; issue 45), with the C++ program built outside the shared build directory:
    scripts/llamacpp_families.py --only qwen3moe-30b-a3b --greedy --exe /tmp/x/deltalogic-logprobs \
        --dir /tmp/x --out fixtures/golden/families-moe-llamacpp.json
and fixtures/golden/families-gptoss-llamacpp.json the same way with --only gpt-oss-20b-window16
(gpt-oss at gpt-oss-20b's widths, 1 local layer with a window of 16, a 3.2 GB f32 file).
Without --only the script now writes these two large files too (2.5 and 3.3 GB).
fixtures/golden/families-gptoss-mxfp4-llamacpp.json (the same gpt-oss file stored as
llama-quantize's MXFP4_MOE mix: MXFP4 experts, the other matrices Q8_0; 0.5 GB) and its AVX2 twin:
    scripts/llamacpp_families.py --only gpt-oss-20b-window16 --storage mxfp4 --greedy \
        --exe /tmp/x/deltalogic-logprobs --dir /tmp/x \
        --out fixtures/golden/families-gptoss-mxfp4-llamacpp.json
(and with --llama-bin .tools/llama.cpp-avx2/bin and --exe another path for the twin).
and fixtures/golden/families-hybrid-llamacpp.json (Qwen3.5, issue 44; the C++ program needs no
change for a recurrent model: it clears the whole sequence before each line):
    scripts/llamacpp_families.py --only qwen35-0.8b --greedy \
        --out fixtures/golden/families-hybrid-llamacpp.json
and fixtures/golden/families-gemma4-e4b-llamacpp.json (Gemma 4 E4B, issue 43; a 1.6 GB f32 file):
    scripts/llamacpp_families.py --only gemma4-e4b-window16 --greedy \
        --out fixtures/golden/families-gemma4-e4b-llamacpp.json
"""

import argparse
import hashlib
import json
import os
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--deltalogic", default="target/debug/deltalogic")
ap.add_argument("--dir", default="/tmp/deltalogic-families")
ap.add_argument("--threads", default="2")
ap.add_argument("--out", default="fixtures/golden/families-llamacpp.json")
ap.add_argument("--only", action="append", default=[])
ap.add_argument("--greedy", action="store_true")
ap.add_argument("--exe", help="where to build the C++ program (default: beside llama.cpp's libraries)")
ap.add_argument("--llama-bin", help="the llama.cpp build's bin directory (default: the native one)")
ap.add_argument("--q8-only", action="store_true",
                help="score only the quantised files (Q8_0, MXFP4)")
ap.add_argument("--storage", action="append", default=[],
                help="write only these storage types (f32, q8_0, mxfp4; default f32 and q8_0)")
a = ap.parse_args()
GREEDY = 8

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
src = os.path.join(root, ".tools", "llama-cpp-python-0.3.36", "vendor", "llama.cpp")
bin_dir = os.path.abspath(a.llama_bin or os.path.join(root, ".tools", "llama.cpp-build", "bin"))
build = os.path.basename(os.path.dirname(bin_dir))
exe = a.exe or os.path.join(bin_dir, "deltalogic-logprobs")
subprocess.run(
    ["g++", "-O2", "-std=c++17", os.path.join(here, "llamacpp_logprobs.cpp"), "-o", exe,
     "-I", os.path.join(src, "include"), "-I", os.path.join(src, "ggml", "include"),
     "-L", bin_dir, "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{bin_dir}"],
    check=True,
)
def family_files(only):
    cmd = [a.deltalogic, "dev", "family-files", "--out", a.dir]
    for storage in a.storage:
        cmd += ["--storage", storage]
    if only:
        cmd += ["--only", only]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split("\n")
    return [f.split(" ")[0] for f in out if f.strip()]


files = [f for name in a.only for f in family_files(name)] if a.only else family_files(None)
# The C++ program's RUNPATH names bin_dir, but libllama's own dependencies are looked up by
# libllama's RUNPATH, the directory it was built in, which may be gone (the AVX2 build's names
# another worktree's): libggml is looked up in bin_dir first.
env = dict(os.environ, LD_LIBRARY_PATH=bin_dir)


def cases():
    """Eight contexts of 9 to 37 tokens, each with three continuations of 1 to 3 tokens: ids
    from a fixed linear congruential sequence over the 320-token vocabulary."""
    state = 12345
    def draw():
        nonlocal state
        state = (state * 1103515245 + 12345) % (1 << 31)
        return state % 320
    out = []
    for c in range(8):
        ctx = [draw() for _ in range(9 + 4 * c)]
        labels = [[draw() for _ in range(1 + (c + j) % 3)] for j in range(3)]
        out.append((ctx, labels))
    return out


golden = {
    "source": f"llama.cpp (llama-cpp-python 0.3.36 vendor tree, build {build}), f32 KV "
              "cache, no flash attention, scripts/llamacpp_logprobs.cpp",
    "files": [],
}
if a.greedy:
    golden["logits_source"] = (
        f"the same llama.cpp build through scripts/llamacpp_logprobs.cpp's greedy mode: logits "
        f"after each context from an empty cache, then {GREEDY} argmax tokens decoded one at a "
        f"time, f32 KV cache, no flash attention, {a.threads} threads")
for path in files:
    if a.q8_only and path.endswith("-f32.gguf"):
        os.remove(path)
        continue
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    lines = []
    cs = cases()
    for ctx, labels in cs:
        for l in labels:
            lines.append(" ".join(map(str, [len(ctx)] + ctx + l)))
    run = subprocess.run([exe, path, a.threads], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, env=env)
    if run.returncode != 0:
        print(f"{os.path.basename(path)}: llama.cpp failed: {run.stderr[-2000:]}")
        continue
    out = iter(run.stdout.splitlines())
    entry = {"file": os.path.basename(path), "sha256": sha, "cases": []}
    for ctx, labels in cs:
        entry["cases"].append({
            "context": ctx,
            "labels": [{"tokens": l, "logprobs": [float(x) for x in next(out).split()]}
                       for l in labels],
        })
    if a.greedy:
        run = subprocess.run([exe, path, a.threads, "greedy", str(GREEDY)],
                             input="".join(f"{len(ctx)} {' '.join(map(str, ctx))}\n"
                                           for ctx, _ in cs),
                             capture_output=True, text=True, env=env)
        if run.returncode != 0:
            print(f"{os.path.basename(path)}: llama.cpp greedy failed: {run.stderr[-2000:]}")
            continue
        out = iter(run.stdout.splitlines())
        for case in entry["cases"]:
            case["next_logits"] = [float(x) for x in next(out).split()]
            case["greedy"] = [int(x) for x in next(out).split()]
    golden["files"].append(entry)
    os.remove(path)
    print(f"{entry['file']}: {sum(len(c['labels']) for c in entry['cases'])} labels")
with open(a.out, "w") as f:
    json.dump(golden, f, indent=1)
    f.write("\n")
