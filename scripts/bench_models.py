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
  `<|endoftext|>` at Phi-4-mini's id 199,999. A benchmark needs only the vocabulary's
  size (the embedding and the output matrix), not its entries.

Issue 45 adds the mixtures of experts (`MOE`), made only when named with --only: Qwen3-30B-A3B
(Q4_K_M) and gpt-oss-20b (llama-quantize's MXFP4_MOE: MXFP4 experts), depth cut so that each
file stays under 6 GB with its f16 source beside it.

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

# Issue 45: mixtures of experts, depth cut (the widths and expert counts are the family files',
# already the real ones): name: (family file, architecture, metadata over the family file's,
# vocabulary, llama-quantize type). Full depth is 48 layers (Qwen3-30B-A3B, 18.6 GB at Q4_K_M)
# and 24 (gpt-oss-20b, 12.8 GB); each layer is the same work and the same bytes, so a figure per
# layer scales to full depth but for the embedding and LM head.
MOE = {
    "qwen3-30b-a3b": ("qwen3moe-30b-a3b", "qwen3moe", {"block_count": 4}, "qwen2.5", "Q4_K_M"),
    # Its real window of 128 and llama.cpp's default pattern (even layers local): one local
    # layer and one full.
    "gpt-oss-20b": ("gpt-oss-20b-window16", "gpt-oss",
                    {"block_count": 2, "attention.sliding_window": 128}, "o200k-sized",
                    "MXFP4_MOE"),
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

    rng = np.random.default_rng(20261126)
    rope_factors = {t.name: np.array(t.data, dtype=np.float32) for t in template.tensors
                    if t.name.startswith("rope_factors")}

    def data(n, ne):
        if n.startswith("rope_factors"):
            return rope_factors[n]
        if len(ne) == 1:  # norms
            return 1.0 + 0.1 * rng.standard_normal(ne[0], dtype=np.float32)
        return 0.02 * rng.standard_normal((ne[1], ne[0]), dtype=np.float32)

    write_gguf(path, arch, meta + tok, tensors, lambda n, ne: len(ne) == 1, data)
    print(f"{path}: {parameters(tensors) / 1e9:.2f} B parameters, vocabulary {vocab}", flush=True)


def write_gguf(path, arch, kv, tensors, f32, data):
    """Streams a GGUF file: `tensors` (name, ne) whose values `data(name, ne)` gives, stored as
    f32 where `f32(name, ne)` says so and f16 otherwise."""
    w = GGUFWriter(str(path), arch)
    for k, v, t, s in kv:
        if k != "general.architecture":
            w.add_key_value(k, v, t, sub_type=s)
    for n, ne in tensors:
        dtype = np.dtype(np.float32 if f32(n, ne) else np.float16)
        w.add_tensor_info(n, list(reversed(ne)), dtype, int(np.prod(ne)) * dtype.itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for n, ne in tensors:
        w.write_tensor_data(data(n, ne).astype(np.float32 if f32(n, ne) else np.float16))
    w.close()


def parameters(tensors):
    return sum(int(np.prod(ne)) for _, ne in tensors)


def write_moe_f16(name, family_dir, models, path):
    """A mixture of experts' f16 file: the family file's layer 0 repeated `block_count` times
    (each with its own random weights), the vocabulary's embedding and LM head."""
    template_name, arch, sizes, vocab_kind, _ = MOE[name]
    template = GGUFReader(family_dir / f"{template_name}-f32.gguf")
    meta = [x for x in fields(template) if not x[0].startswith("tokenizer.")
            and x[0] != f"{arch}.attention.sliding_window_pattern"]
    meta = [(k, sizes.get(k[len(arch) + 1:], v), t, s) for k, v, t, s in meta]
    meta = [(k, f"{name} shapes, {sizes['block_count']} layers, random weights"
             if k == "general.name" else v, t, s) for k, v, t, s in meta]
    if vocab_kind == "qwen2.5":
        tok = qwen_tokenizer(models)
    else:
        tok = o200k_sized_tokenizer(201_088)  # gpt-oss-20b's vocabulary size
    vocab = len(next(v for k, v, _, _ in tok if k == "tokenizer.ggml.tokens"))
    layer0 = [(t.name[len("blk.0."):], [int(x) for x in t.shape]) for t in template.tensors
              if t.name.startswith("blk.0.")]
    tensors = []
    for t in template.tensors:
        ne = [int(x) for x in t.shape]
        if t.name in ("token_embd.weight", "output.weight"):
            tensors.append((t.name, [ne[0], vocab]))
        elif not t.name.startswith("blk."):
            tensors.append((t.name, ne))
    for i in range(sizes["block_count"]):
        tensors += [(f"blk.{i}.{n}", ne) for n, ne in layer0]

    rng = np.random.default_rng(20261126)

    # Vectors, biases and sinks in f32 (llama.cpp adds biases in f32 only), matrices in f16.
    def f32(n, ne):
        return len(ne) == 1 or n.endswith(".bias") or "sinks" in n

    def data(n, ne):
        shape = tuple(reversed(ne))
        if len(ne) == 1 and n.endswith("norm.weight"):
            return 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
        return 0.02 * rng.standard_normal(shape, dtype=np.float32)

    write_gguf(path, arch, meta + tok, tensors, f32, data)
    print(f"{path}: {parameters(tensors) / 1e9:.2f} B parameters, vocabulary {vocab}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / ".tools/bench-models")
    ap.add_argument("--models", type=Path, default=Path(os.environ.get("DELTALOGIC_MODELS", ROOT / "models")))
    ap.add_argument("--deltalogic", default=str(ROOT / "target/release/deltalogic"))
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--only", choices=sorted(MODELS) + sorted(MOE))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=a.out) as tmp:
        tmp = Path(tmp)
        for name in list(MODELS) + list(MOE):
            if (a.only or name in MOE) and a.only != name:
                continue
            moe = name in MOE
            template, quant = (MOE[name][0], MOE[name][4]) if moe else (MODELS[name][0], "Q4_K_M")
            # Only the file needed: the mixtures' are 2.5 and 3.3 GB.
            subprocess.run([a.deltalogic, "dev", "family-files", "--out", str(tmp), "--only",
                            template], check=True, stdout=subprocess.DEVNULL)
            for f in tmp.glob(f"{template}-q8_0.gguf"):
                f.unlink()
            f16 = tmp / f"{name}-f16.gguf"
            (write_moe_f16 if moe else write_f16)(name, tmp, a.models, f16)
            (tmp / f"{template}-f32.gguf").unlink()
            out = a.out / f"{name}-{quant.lower()}.gguf"
            subprocess.run([str(a.llamacpp / "llama-quantize"), str(f16), str(out), quant,
                            a.threads], check=True, stdout=subprocess.DEVNULL)
            f16.unlink()
            print(f"{out}: {out.stat().st_size / 2**30:.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
