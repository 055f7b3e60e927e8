#!/usr/bin/env python3
"""Dev only: llama.cpp's ids, through llama-cpp-python, for the vocabularies below on the strings of
fixtures/tokens/llama3-vocab.jsonl (scripts/make_token_goldens.py drew them from
../shared/datasets), written as fixtures/tokens/<name>.jsonl for tests/suite/tokenizer_golden.rs.

  llama-spm-vocab:                 models/ggml-vocab-llama-spm.gguf (Llama 2)
  phi3-vocab:                      models/ggml-vocab-phi-3.gguf
  llama-spm-vocab-no-space-prefix: the Llama 2 vocabulary with tokenizer.ggml.add_space_prefix
                                   false, as Gemma's files have it (set here by llama.cpp's
                                   kv_overrides; the test writes the key into a copy of the file)
  gpt-4o-vocab, gpt-4o-llama3-vocab:
                                   the Qwen2 and the Llama 3 vocabularies with tokenizer.ggml.pre
                                   "gpt-4o" (Phi-4-mini's split; o200k's own vocabulary is
                                   qwen36_vocab_goldens.py --vocab o200k-harmony's),
                                   the same way; Llama 3's has tokens of 2 and 3 digits

Ids as `llama-tokenize` gives them by default: special-token text parsed, a BOS when the model
adds one. From llama-cpp-python 0.3.36 (`Llama(vocab_only=True).tokenize(..., add_bos=True,
special=True)`), the llama.cpp of the other goldens.

Usage: /work/llcpp-venv/bin/python scripts/llamacpp_vocab_goldens.py [--models DIR]
"""

import argparse
import json
from pathlib import Path

import llama_cpp

ROOT = Path(__file__).resolve().parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--models", default=str(ROOT / "models"))
a = ap.parse_args()

texts = [json.loads(line)["text"] for line in open(ROOT / "fixtures/tokens/llama3-vocab.jsonl")]
for name, file, overrides in [
    ("llama-spm-vocab", "ggml-vocab-llama-spm.gguf", None),
    ("phi3-vocab", "ggml-vocab-phi-3.gguf", None),
    ("llama-spm-vocab-no-space-prefix", "ggml-vocab-llama-spm.gguf",
     {"tokenizer.ggml.add_space_prefix": False}),
    ("gpt-4o-vocab", "ggml-vocab-qwen2.gguf", {"tokenizer.ggml.pre": "gpt-4o"}),
    ("gpt-4o-llama3-vocab", "ggml-vocab-llama-bpe.gguf", {"tokenizer.ggml.pre": "gpt-4o"}),
]:
    llm = llama_cpp.Llama(model_path=str(Path(a.models) / file), vocab_only=True,
                          kv_overrides=overrides, verbose=False)
    out = ROOT / "fixtures/tokens" / f"{name}.jsonl"
    with open(out, "w") as f:
        for t in texts:
            ids = llm.tokenize(t.encode(), add_bos=True, special=True)
            f.write(json.dumps({"text": t, "ids": ids}, ensure_ascii=False) + "\n")
    print(f"{out}: {len(texts)} strings")
