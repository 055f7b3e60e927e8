#!/usr/bin/env bash
# Dev only: the generation goldens, llama.cpp's greedy decoding of 22 prompts from the shared
# datasets (8 GSM8K questions, 7 Belief-R premise sets with their question, 7 CLoMo argument
# rewrites; the first items of each file), 64 tokens each, on SmolLM2:
#   tests/golden/generation_smollm2_f32.json   the Q4_1 file dequantised to f32 (dequant_gguf.py),
#                                              the weights deltalogic's f32 mode computes with;
#   tests/golden/generation_smollm2_q4_1.json  the Q4_1 file itself (llama.cpp quantises
#                                              activations to 8 bits in its matmuls).
# Each holds the prompt text, llama.cpp's prompt token ids (tests/suite/generation_golden.rs requires
# ours to be equal), the greedy token ids and their log-probabilities (scripts/golden_generation.cpp).
# One llama.cpp thread: its results do not depend on the count, and its spinning barriers crawl
# on a shared machine (one token per decode is a barrier per op).
# Usage: scripts/golden_generation.sh   (models: $DELTALOGIC_MODELS or models/; datasets:
# $DELTALOGIC_DATASETS or ../shared/datasets)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODELS="${DELTALOGIC_MODELS:-$ROOT/models}"
DATA="${DELTALOGIC_DATASETS:-$ROOT/../shared/datasets}"
SMOL="$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
TOOLS="$ROOT/.tools"
F32="$TOOLS/SmolLM2-135M-Instruct.f32.gguf"
MAX_TOKENS=64

BIN="$("$ROOT/scripts/llamacpp.sh" | tail -n 1)"
SRC="$TOOLS/llama-cpp-python-0.3.36/vendor/llama.cpp"
EXE="$BIN/deltalogic-greedy"
g++ -O2 -std=c++17 "$ROOT/scripts/golden_generation.cpp" -o "$EXE" \
    -I "$SRC/include" -I "$SRC/ggml/include" -L "$BIN" -lllama -lggml -lggml-base \
    "-Wl,-rpath,$BIN"

if [[ ! -f "$F32" ]]; then
    "$TOOLS/venv/bin/python" -c "import gguf" 2>/dev/null || "$TOOLS/venv/bin/pip" install --quiet gguf
    "$TOOLS/venv/bin/python" "$ROOT/scripts/dequant_gguf.py" "$SMOL" "$F32.part"
    mv "$F32.part" "$F32"
fi

mkdir -p "$ROOT/tests/golden"
python3 - "$DATA" "$EXE" "$MAX_TOKENS" "$ROOT/tests/golden" \
    "f32:$F32" "q4_1:$SMOL" <<'PY'
import csv, json, os, subprocess, sys

data, exe, max_tokens, out_dir = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
prompts = []
with open(os.path.join(data, "gsm8k/openai/test.jsonl")) as f:
    for line in list(f)[:8]:
        q = json.loads(line)["question"]
        prompts.append(("gsm8k/openai/test.jsonl", f"Question: {q}\nAnswer:"))
with open(os.path.join(data, "belief_r/basic_time_t.csv"), newline="") as f:
    for row in list(csv.DictReader(f))[:7]:
        prompts.append(("belief_r/basic_time_t.csv", row["questions"] + "\nAnswer:"))
with open(os.path.join(data, "clomo/data/zero_dev.json")) as f:
    for item in json.load(f)[:7]:
        prompts.append(("clomo/data/zero_dev.json", item["instruction"] + "\n\n" + item["input"]))
# SmolLM2's chat format (its GGUF chat template with one user turn): an instruct model answers
# at length there, where after raw text it often ends the turn at once.
prompts = [(source, f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n")
           for source, text in prompts]
stdin = "".join(text.encode().hex() + "\n" for _, text in prompts)

for spec in sys.argv[5:]:
    name, model = spec.split(":", 1)
    lines = subprocess.run([exe, model, max_tokens, "1"], input=stdin, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert len(lines) == 3 * len(prompts), f"{exe}: {len(lines)} lines for {len(prompts)} prompts"
    cases = []
    for i, (source, text) in enumerate(prompts):
        ids, toks, lps = lines[3 * i: 3 * i + 3]
        cases.append({
            "source": source,
            "prompt": text,
            "prompt_tokens": [int(t) for t in ids.split()],
            "tokens": [int(t) for t in toks.split()],
            "logprobs": [float(x) for x in lps.split()],
        })
    golden = {
        "source": "llama.cpp (llama-cpp-python 0.3.36 vendor tree) greedy, ties to the lowest id, "
                  "f32 KV cache, no flash attention, no repacking, 1 thread",
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf" + (" dequantised to f32" if name == "f32" else ""),
        "max_tokens": int(max_tokens),
        "cases": cases,
    }
    path = os.path.join(out_dir, f"generation_smollm2_{name}.json")
    with open(path, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"{path}: {len(cases)} prompts, {sum(len(c['tokens']) for c in cases)} tokens")
PY
