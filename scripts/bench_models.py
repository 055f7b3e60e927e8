#!/usr/bin/env python3
"""Dev only (issues 23 and 28): random-weight GGUF files at the full depth and vocabulary size of
Qwen3-4B and Phi-4-mini-instruct, quantised to Q4_K_M by llama.cpp's own llama-quantize, for
`deltalogic bench` beside llama-bench. Nothing in CI makes them: each is about 2.5 GB, and its f16
source (kept only while quantising) about 8 GB.

The metadata is that of the 2-layer family files (`deltalogic dev family-files`), whose keys the
family goldens check against llama.cpp, with the real depth and, for Qwen3-4B, the real sizes
(the family file has Qwen3-0.6B's). The tensor shapes are computed from the metadata; the script
first checks that the same rule gives the family file's own shapes. The tokenizers:
- qwen3-4b: the Qwen2.5 vocabulary (Qwen3's is the same 151,936 entries), copied from
  models/Qwen2.5-Coder-0.5B-Instruct.gguf with its chat template;
- phi-4-mini: 200,064 tokens under the gpt-4o pre-tokenizer, as Phi-4-mini's file has: the 256
  byte symbols, the 676 pairs of lowercase letters with their merges, fillers, and
  `<|endoftext|>` at Phi-4-mini's id 199,999. No o200k vocabulary can be fetched here; a
  benchmark needs its size (the embedding and the output matrix), not its entries.

Usage: scripts/bench_models.py [--out DIR] [--deltalogic target/release/deltalogic] [--only NAME]
Needs llama.cpp built by scripts/llamacpp.sh (llama-quantize) and the `gguf` package in
.tools/venv (scripts/golden_generation.sh installs it).
"""

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

ROOT = Path(__file__).resolve().parent.parent

# name: (family file, its architecture, metadata set over the family file's, vocabulary)
MODELS = {
    "qwen3-4b": ("qwen3-0.6b", "qwen3", {
        # Qwen3-4B's config.json.
        "block_count": 36, "embedding_length": 2560, "feed_forward_length": 9728,
        "attention.head_count": 32, "attention.head_count_kv": 8,
    }, "qwen2.5"),
    "phi-4-mini": ("phi3-mini4", "phi3", {"block_count": 32}, "o200k-sized"),
}


def layer_shapes(arch, m):
    """(name, ne) of one block's tensors and of the global ones, ne in GGUF's order (inner first),
    from the metadata `m` (keys without the architecture prefix)."""
    h, f = m["embedding_length"], m["feed_forward_length"]
    q, kv, hd = m["attention.head_count"], m["attention.head_count_kv"], m["attention.key_length"]
    if arch == "qwen3":
        block = [("attn_norm", [h]), ("attn_q", [h, q * hd]), ("attn_k", [h, kv * hd]),
                 ("attn_v", [h, kv * hd]), ("attn_output", [q * hd, h]), ("ffn_norm", [h]),
                 ("ffn_gate", [h, f]), ("ffn_up", [h, f]), ("ffn_down", [f, h]),
                 ("attn_q_norm", [hd]), ("attn_k_norm", [hd])]
    elif arch == "phi3":
        block = [("attn_norm", [h]), ("attn_qkv", [h, (q + 2 * kv) * hd]),
                 ("attn_output", [q * hd, h]), ("ffn_norm", [h]), ("ffn_up", [h, 2 * f]),
                 ("ffn_down", [f, h])]
    else:
        raise SystemExit(f"no shape rule for {arch}")
    return block, [("output_norm", [h])]


def fields(reader):
    """The metadata of a GGUF file as (key, value, type, array item type), in file order."""
    out = []
    for key, f in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        sub = f.types[1] if len(f.types) > 1 and f.types[0] == GGUFValueType.ARRAY else None
        out.append((key, f.contents(), f.types[0], sub))
    return out


def qwen_tokenizer(models):
    src = GGUFReader(models / "Qwen2.5-Coder-0.5B-Instruct.gguf")
    return [x for x in fields(src) if x[0].startswith("tokenizer.")]


def o200k_sized_tokenizer(vocab):
    # GPT-2's byte-to-symbol table, as byte-level BPE writes its 256 base tokens.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    symbol = {b: chr(b) if b in keep else chr(next(extra)) for b in range(256)}
    tokens = [symbol[b] for b in range(256)]
    letters = "abcdefghijklmnopqrstuvwxyz"
    pairs = [a + b for a in letters for b in letters]
    merges = [f"{p[0]} {p[1]}" for p in pairs]
    tokens += pairs
    eot = 199_999
    tokens += [f"<|filler_{i}|>" for i in range(len(tokens), eot)]
    tokens += ["<|endoftext|>"]
    tokens += [f"<|reserved_{i}|>" for i in range(len(tokens), vocab)]
    # Normal (1) for the pieces and fillers; control (3) for the special tokens.
    types = [1] * eot + [3] * (vocab - eot)
    A, S, I, B = GGUFValueType.ARRAY, GGUFValueType.STRING, GGUFValueType.INT32, GGUFValueType.BOOL
    U = GGUFValueType.UINT32
    return [
        ("tokenizer.ggml.model", "gpt2", S, None),
        ("tokenizer.ggml.pre", "gpt-4o", S, None),
        ("tokenizer.ggml.tokens", tokens, A, S),
        ("tokenizer.ggml.token_type", types, A, I),
        ("tokenizer.ggml.merges", merges, A, S),
        ("tokenizer.ggml.bos_token_id", eot, U, None),
        ("tokenizer.ggml.eos_token_id", eot, U, None),
        ("tokenizer.ggml.add_bos_token", False, B, None),
    ]


def write_f16(name, family_dir, models, path):
    template_name, arch, sizes, vocab_kind = MODELS[name]
    template = GGUFReader(family_dir / f"{template_name}-f32.gguf")
    meta = [x for x in fields(template) if not x[0].startswith("tokenizer.")]
    short = {k[len(arch) + 1:]: v for k, v, _, _ in meta if k.startswith(arch + ".")}
    # The shape rule must give the family file's own shapes first.
    block, glob = layer_shapes(arch, short)
    have = {t.name: [int(x) for x in t.shape] for t in template.tensors}
    for i in range(short["block_count"]):
        for n, ne in block:
            assert have[f"blk.{i}.{n}.weight"] == ne, (n, have[f"blk.{i}.{n}.weight"], ne)
    for n, ne in glob:
        assert have[f"{n}.weight"] == ne, n
    short.update(sizes)
    meta = [(k, sizes.get(k[len(arch) + 1:], v), t, s) for k, v, t, s in meta]
    meta = [(k, f"{name} shapes, full depth, random weights" if k == "general.name" else v, t, s)
            for k, v, t, s in meta]
    tok = qwen_tokenizer(models) if vocab_kind == "qwen2.5" else o200k_sized_tokenizer(200_064)
    vocab = len(next(v for k, v, _, _ in tok if k == "tokenizer.ggml.tokens"))
    block, glob = layer_shapes(arch, short)
    h = short["embedding_length"]
    tensors = [("token_embd.weight", [h, vocab])] + [(f"{n}.weight", ne) for n, ne in glob]
    tensors += [(t.name, [int(x) for x in t.shape]) for t in template.tensors
                if t.name.startswith("rope_factors")]
    for i in range(short["block_count"]):
        tensors += [(f"blk.{i}.{n}.weight", ne) for n, ne in block]

    w = GGUFWriter(str(path), arch)
    for k, v, t, s in meta + tok:
        if k != "general.architecture":
            w.add_key_value(k, v, t, sub_type=s)
    rng = np.random.default_rng(20261126)
    rope_factors = {t.name: np.array(t.data, dtype=np.float32) for t in template.tensors
                    if t.name.startswith("rope_factors")}

    def data(n, ne):
        if n.startswith("rope_factors"):
            return rope_factors[n]
        if len(ne) == 1:  # norms
            return 1.0 + 0.1 * rng.standard_normal(ne[0], dtype=np.float32)
        return 0.02 * rng.standard_normal((ne[1], ne[0]), dtype=np.float32)

    for n, ne in tensors:
        dtype = np.float32 if len(ne) == 1 else np.float16
        w.add_tensor_info(n, list(reversed(ne)), np.dtype(dtype), int(np.prod(ne)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for n, ne in tensors:
        a = data(n, ne)
        w.write_tensor_data(a.astype(np.float32 if len(ne) == 1 else np.float16))
    w.close()
    params = sum(int(np.prod(ne)) for _, ne in tensors)
    print(f"{path}: {params / 1e9:.2f} B parameters, vocabulary {vocab}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / ".tools/bench-models")
    ap.add_argument("--models", type=Path, default=Path(os.environ.get("DELTALOGIC_MODELS", ROOT / "models")))
    ap.add_argument("--deltalogic", default=str(ROOT / "target/release/deltalogic"))
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--only", choices=sorted(MODELS))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=a.out) as tmp:
        tmp = Path(tmp)
        subprocess.run([a.deltalogic, "dev", "family-files", "--out", str(tmp)], check=True,
                       stdout=subprocess.DEVNULL)
        for name in MODELS:
            if a.only and a.only != name:
                continue
            f16 = tmp / f"{name}-f16.gguf"
            write_f16(name, tmp, a.models, f16)
            out = a.out / f"{name}-q4_k_m.gguf"
            subprocess.run([str(a.llamacpp / "llama-quantize"), str(f16), str(out), "Q4_K_M",
                            a.threads], check=True, stdout=subprocess.DEVNULL)
            f16.unlink()
            print(f"{out}: {out.stat().st_size / 2**30:.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
