#!/usr/bin/env python3
"""Dev only: Mistral's tekken vocabulary as a GGUF, and llama.cpp's ids for dataset text with it,
written as fixtures/tokens/tekken-vocab.jsonl for tests/suite/tokenizer_golden.rs.

No Ministral 3 GGUF or tokenizer.json can be fetched here. PyPI's mistral-common 1.13.1 ships
tekken vocabularies; `mistral_common/data/tekken_240911.json` (v3, 131 072 ids: 1000 special
tokens, then the first 130 072 of its 150 000 byte-level ranks) has the split Ministral 3's
tokenizer names, which llama.cpp calls pre-tokenizer `tekken`. This builds the GGUF the way
llama.cpp 0.3.36's convert_hf_to_gguf builds one from a Mistral-format model (gguf-py's
`MistralVocab`: `_tekken_tokens` and `extract_vocab_merges_from_model`, copied below): the
special tokens as control tokens (the file lists none, so mistral-common's defaults: its
deprecated list of 20, then `<SPECIAL_{i}>`), each rank's bytes in GPT-2's byte alphabet, and a
merge for every split of a rank's bytes into two ranks, ordered by the merged rank and then by
the parts' ranks. BOS `<s>` (1), EOS `</s>` (2), UNK `<unk>` (0); `add_bos_token` is left out,
so llama.cpp's default for `tekken` (add one) applies.

The strings: make_token_goldens.py's 678 and 2400 more drawn from the same pools (seeded), each
tokenized by llama.cpp through `deltalogic-tokenize` (special-token text read as text). The test
builds the same vocabulary from the same file (fetched by scripts/fetch_models.sh) and must give
the same ids.

Usage: .tools/vllm-venv/bin/python scripts/tekken_vocab_goldens.py [--tekken FILE]
           [--gguf OUT.gguf] [--datasets DIR] [--llamacpp BIN_DIR]
"""

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen36_vocab_goldens  # noqa: E402
from qwen36_vocab_goldens import token_bytes_to_string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# mistral_common.tokens.tokenizers.tekken.Tekkenizer.DEPRECATED_SPECIAL_TOKENS.
SPECIAL = [
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
]


def tekken_file():
    tmp = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "mistral-common==1.13.1", "-d", tmp], check=True)
    (wheel,) = Path(tmp).glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        return z.extract("mistral_common/data/tekken_240911.json", tmp)


def write_vocab(tekken, out):
    data = json.loads(Path(tekken).read_text(encoding="utf-8"))
    config = data["config"]
    specials = config["default_num_special_tokens"]
    assert "special_tokens" not in data, "this file lists its special tokens: use them"
    n_ranks = config["default_vocab_size"] - specials
    ranks = {}
    for entry in data["vocab"][:n_ranks]:
        ranks[base64.b64decode(entry["token_bytes"])] = entry["rank"]
    assert sorted(ranks.values()) == list(range(n_ranks)), "ranks are not 0..n"
    by_rank = sorted(ranks, key=ranks.get)
    # MistralVocab.extract_vocab_merges_from_model.
    merges = []
    for token in by_rank[256:]:
        local = [(token[:j], token[j:]) for j in range(1, len(token))
                 if token[:j] in ranks and token[j:] in ranks]
        assert local, f"no merge for rank {ranks[token]}"
        local.sort(key=lambda p: (ranks[p[0]], ranks[p[1]]))
        merges += [f"{token_bytes_to_string(a)} {token_bytes_to_string(b)}" for a, b in local]
    special = SPECIAL + [f"<SPECIAL_{i}>" for i in range(len(SPECIAL), specials)]
    tokens = special + [token_bytes_to_string(t) for t in by_rank]
    types = [gguf.TokenType.CONTROL] * specials + [gguf.TokenType.NORMAL] * n_ranks
    write_gguf(out, "tekken-vocab", tokens, types, merges)
    print(f"{out}: {specials} special, {n_ranks} ranks, {len(merges)} merges")


def write_gguf(out, name, tokens, types, merges):
    """A vocabulary-only GGUF with pre-tokenizer `tekken`: BOS 1, EOS 2, UNK 0, no
    `add_bos_token` (llama.cpp's default for `tekken`, add one, applies)."""
    w = gguf.GGUFWriter(str(out), "mistral3")
    w.add_name(name)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("tekken")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tekken", help="tekken_240911.json (default: fetched from the wheel)")
    ap.add_argument("--gguf", type=Path, default=Path(tempfile.gettempdir()) / "tekken-vocab.gguf")
    ap.add_argument("--datasets", type=Path, default=ROOT.parent / "shared/datasets")
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    args = ap.parse_args()

    write_vocab(args.tekken or tekken_file(), args.gguf)
    texts = qwen36_vocab_goldens.golden_texts(args.datasets)
    ids = qwen36_vocab_goldens.llama_cpp_ids(args.llamacpp, args.gguf, texts)
    qwen36_vocab_goldens.write_goldens("tekken-vocab", texts, ids)

if __name__ == "__main__":
    main()
