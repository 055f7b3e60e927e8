#!/usr/bin/env python3
"""Dev only: a small byte-level BPE vocabulary with pre-tokenizer `tekken`, whose merges cross the
places where tekken's split differs from Llama 3's and GPT-4o's, and llama.cpp's ids for texts
that meet those places, written as fixtures/tokens/tekken-split.json for
tests/suite/tokenizer_golden.rs (`tekken_split_matches_llama_cpp`).

Why: Mistral's real tekken vocabulary (tekken-vocab.jsonl) was trained on tekken's split, so none
of its tokens crosses a boundary of it, and its ids come out the same under Llama 3's or GPT-4o's
regex. Here each merge joins what one of the splits keeps in one piece and tekken cuts, or the
other way round:
- digit runs: tekken takes every digit alone, Llama 3 and GPT-4o runs of up to three
  (`1 2`, `12 3`, `4 5`);
- contractions: Llama 3 cuts `'s`, `'ll` off the letters after them (`'sam` is `'s` + `am`
  there, one piece in tekken: `s a`, ranked before `' s`; `'llama`: `l a` before `' l`);
  GPT-4o keeps them on the word before (`it's` one piece: `t '`, ranked before `' s`);
- camel case: Llama 3 keeps `camelCase` in one piece, tekken cuts it before `C` (`l C`);
- punctuation with the newlines after it (`! \\n`), one piece in all three (GPT-2's split cuts it);
- `Case`, a token no merge reaches: tekken, as Llama 3, takes a piece that is a token whole
  (llama.cpp's `ignore_merges`).

The vocabulary: `<unk>`, `<s>`, `</s>` (control tokens 0, 1, 2), the 256 bytes in GPT-2's byte
alphabet (in byte order), then each merge's result and the whole tokens, in that order; BOS
`<s>`, EOS `</s>`, UNK `<unk>`; `add_bos_token` left out, so llama.cpp's default for `tekken`
(add one) applies. The test builds the same GGUF from the golden's merges and whole tokens.
Each text is tokenized by llama.cpp through `deltalogic-tokenize` (BOS where the vocabulary asks
for it, special-token text read as text).

Usage: .tools/vllm-venv/bin/python scripts/tekken_split_goldens.py [--gguf OUT.gguf]
           [--llamacpp BIN_DIR]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen36_vocab_goldens  # noqa: E402
import tekken_vocab_goldens  # noqa: E402
from qwen36_vocab_goldens import BYTE_ENCODER, token_bytes_to_string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SPECIAL = ["<unk>", "<s>", "</s>"]
# In rank order (see the docstring for why each is where it is).
MERGES = [
    ("1", "2"), ("12", "3"), ("4", "5"),
    ("s", "a"), ("t", "'"), ("'", "s"),
    ("l", "a"), ("'", "l"), ("'l", "l"),
    ("l", "C"),
    ("!", "\n"),
]
WHOLE = ["Case"]
TEXTS = [
    "12345", "123", "2024-11-28", "a1234b", "x = 1234567;", "45 and 12", " 12 123 1234",
    "it's", "It's", "we'll", "they'LL", "'sam", "'llama", "'S", "don't 'sa", "it's 'sam's",
    "camelCase", "myCamelCaseVar", "HTMLParser", "getHTTPResponse", "ALLCAPS", "lCase",
    "CaseCase", " Case", "Hello!\nWorld", "Wait!\n\nNext", "ok.\r\nthen", "end?/path", "!\n",
    "a!\nb", "It's 12345 lCases!\n", "Émile'sCase", "naïveCase", "über1234", "  12\n\n  lC",
    "\t'sa", "she'll call 911, it's 12:45!\nlaterCase",
]


def spell(text):
    return token_bytes_to_string(text.encode())


def write_vocab(out):
    merges = [f"{spell(a)} {spell(b)}" for a, b in MERGES]
    alphabet = [BYTE_ENCODER[b] for b in range(256)]
    tokens = SPECIAL + alphabet + [spell(a + b) for a, b in MERGES] + [spell(t) for t in WHOLE]
    assert len(set(tokens)) == len(tokens), "a token twice"
    types = [gguf.TokenType.CONTROL] * len(SPECIAL) + [gguf.TokenType.NORMAL] * (
        len(tokens) - len(SPECIAL))
    tekken_vocab_goldens.write_gguf(out, "tekken-split", tokens, types, merges)
    return merges


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, default=Path(tempfile.gettempdir()) / "tekken-split.gguf")
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    args = ap.parse_args()

    merges = write_vocab(args.gguf)
    ids = qwen36_vocab_goldens.llama_cpp_ids(args.llamacpp, args.gguf, TEXTS)
    golden = {
        "source": "llama.cpp (llama-cpp-python 0.3.36 vendor tree) through "
                  "scripts/llamacpp_tokenize.cpp; scripts/tekken_split_goldens.py",
        "special": SPECIAL,
        "merges": merges,
        "whole": [spell(t) for t in WHOLE],
        "cases": [{"text": t, "ids": i} for t, i in zip(TEXTS, ids)],
    }
    path = ROOT / "fixtures/tokens/tekken-split.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{path}: {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
