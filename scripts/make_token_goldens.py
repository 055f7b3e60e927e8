#!/usr/bin/env python3
"""Writes fixtures/tokens/<model>.jsonl: token ids from llama.cpp's llama-tokenize for a fixed,
deterministic set of strings drawn from ../shared/datasets, one {"text", "ids"} per line.

Dev only (needs scripts/llamacpp.sh and scripts/fetch_models.sh to have run); tests read the
committed output. Each string goes to llama-tokenize through a file, read verbatim, with
--no-escape so backslashes stay as they are; --no-bos is not passed, so ids carry a BOS exactly
when the model adds one (the Llama 3 vocabulary does, SmolLM2 and Qwen2.5 do not). Special-token
text is parsed, as in our encoder.

Usage: scripts/make_token_goldens.py [--datasets DIR] [--models DIR] [--llamacpp BIN_DIR]
"""

import argparse
import csv
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = {
    "smollm2-135m-instruct-q4_1": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen2.5-coder-0.5b-instruct": "Qwen2.5-Coder-0.5B-Instruct.gguf",
    # Vocabulary only (llama.cpp's test file): the llama-bpe pre-tokenizer, and a model that adds BOS.
    "llama3-vocab": "ggml-vocab-llama-bpe.gguf",
}
SEED = 20261121

# Hand-written cases for the tokenizer's corners: labels, whitespace runs, digits, contractions,
# scripts and symbols, special-token text.
EDGE = [
    "", " ", "  ", "\n", "\n\n", "\t", " \n ", "a\r\nb", "   leading", "trailing   ", "x  y   z",
    "True", " True", " False", " Uncertain", " Unknown", "Answer: True", "Answer:\nTrue",
    " Yes", " No", "(a)", " (b)", "A", " C",
    "0", "7", "12", "123", "1234", "12345678", "3.14159", "1,000,000", "-42", "$2.50", "10%",
    "don't", "I'LL", "we've", "She's", "it'd", "'s", "O'Neil's",
    "café", "naïve", "Zürich", "São Paulo", "Ελληνικά", "русский", "日本語のテキスト", "中文", "한국어",
    "🙂", "👍🏽", "a🙂b", "—", "“quoted”", "‘single’", "…", "∀x (P(x) → Q(x))", "¬A ∧ B ∨ C ⊕ D ↔ E",
    "<|im_start|>user\nIs it True?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>", "<|im_end|>",
    "Hello\n\n\nworld", "tab\tseparated\tvalues", "mixed \t \n whitespace",
    "https://example.com/a?b=c&d=e", "snake_case_name", "CamelCaseName", "x**2 + y**2 = z**2",
]


def sentences(text):
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def load_pool(datasets):
    """Candidate strings per source, in file order (the draw below is seeded)."""
    pools = {}
    folio_nl, folio_fol = [], []
    for name in ("folio-train.jsonl", "folio-validation.jsonl"):
        for line in (datasets / "folio/v0.0" / name).read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            premises = rec["premises"]
            folio_nl += premises if isinstance(premises, list) else [premises]
            folio_nl.append(rec["conclusion"])
            fol = rec.get("premises-FOL", [])
            folio_fol += fol if isinstance(fol, list) else [fol]
    pools["folio"] = folio_nl
    pools["folio_unicode"] = [s for s in folio_nl if any(ord(c) > 127 for c in s)]
    pools["folio_fol"] = folio_fol

    proofwriter = json.loads((datasets / "proofwriter/logic-lm/dev.json").read_text(encoding="utf-8"))
    pools["proofwriter"] = [s for rec in proofwriter for s in sentences(rec["context"])]
    pools["proofwriter_context"] = [rec["context"] for rec in proofwriter]
    pools["proofwriter_question"] = [rec["question"] for rec in proofwriter]

    with open(datasets / "belief_r/basic_time_t.csv", encoding="utf-8", newline="") as f:
        pools["belief_r"] = [row["questions"] for row in csv.DictReader(f)]

    gsm = [json.loads(l) for l in (datasets / "gsm8k/openai/test.jsonl").read_text(encoding="utf-8").splitlines()]
    pools["gsm8k_question"] = [r["question"] for r in gsm]
    pools["gsm8k_answer"] = [r["answer"] for r in gsm]
    return pools


DRAWS = {
    "folio": 120,
    "folio_unicode": 40,
    "folio_fol": 50,
    "proofwriter": 100,
    "proofwriter_context": 15,
    "proofwriter_question": 15,
    "belief_r": 50,
    "gsm8k_question": 80,
    "gsm8k_answer": 40,
}


def variants(rng, texts):
    """Whitespace variants of drawn strings: leading space, double spaces, newline joins."""
    out = []
    for i, t in enumerate(texts):
        kind = i % 5
        if kind == 0:
            out.append(" " + t)
        elif kind == 1:
            out.append(t.replace(" ", "  "))
        elif kind == 2:
            out.append(t + "\n")
        elif kind == 3:
            out.append(t + "\n\n" + rng.choice(texts))
        else:
            out.append("\n" + t + " ")
    return out


def draw_strings(datasets):
    rng = random.Random(SEED)
    pools = load_pool(datasets)
    drawn = []
    for source, n in DRAWS.items():
        pool = list(dict.fromkeys(pools[source]))  # unique, first-seen order
        drawn += rng.sample(pool, min(n, len(pool)))
    texts = EDGE + drawn + variants(rng, rng.sample(drawn, 100))
    return list(dict.fromkeys(texts))


def tokenize(binary, model, text):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        out = subprocess.run(
            [binary, "-m", str(model), "-f", path, "--ids", "--log-disable", "--no-escape"],
            capture_output=True, check=True,
        ).stdout.decode()
    finally:
        os.unlink(path)
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=ROOT.parent / "shared/datasets")
    ap.add_argument("--models", type=Path, default=Path(os.environ.get("DELTALOGIC_MODELS", ROOT / "models")))
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()

    texts = draw_strings(args.datasets)
    binary = args.llamacpp / "llama-tokenize"
    out_dir = ROOT / "fixtures/tokens"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, file in MODELS.items():
        model = args.models / file
        if not model.is_file():
            sys.exit(f"error: {model} is missing; run scripts/fetch_models.sh")
        with ThreadPoolExecutor(args.jobs) as pool:
            ids = list(pool.map(lambda t: tokenize(binary, model, t), texts))
        with open(out_dir / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for text, toks in zip(texts, ids):
                f.write(json.dumps({"text": text, "ids": toks}, ensure_ascii=False) + "\n")
        print(f"{out_dir / (name + '.jsonl')}: {len(texts)} strings")


if __name__ == "__main__":
    main()
