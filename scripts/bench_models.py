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

Issues 43 and 44 add the new families at full depth (`DEEP`): Qwen3.5-0.8B and 4B, Gemma 4 E2B,
SmolLM3-3B. Each of their layers is one of the family file's (4 layers: one whole period of
each), with its own random weights: layer i has the kind (recurrent or attention; local or
global, own or shared keys and values) and widths of the family file's layer `layer(i)`; the
per-layer metadata lists follow the same map. Qwen3.5-4B's widths are not the family file's: its
shapes come from a rule checked first on the family file's. Their vocabularies are of the real
sizes under the gpt-4o pre-tokenizer, as phi-4-mini's: only the size matters to a benchmark.
Vectors (norms, Qwen3.5's decay and time-step bias, Gemma 4's layer scales) are the family file's
own values (tiled to a wider size), so that the recurrence stays as stable as in the goldens.

Issue 45 adds the mixtures of experts (`MOE`), made only when named with --only: Qwen3-30B-A3B
(Q4_K_M) and gpt-oss-20b (llama-quantize's MXFP4_MOE: MXFP4 experts), depth cut so that each
file stays under 6 GB with its f16 source beside it.

Usage: scripts/bench_models.py [--out DIR] [--deltalogic target/release/deltalogic] [--only NAME]
Needs llama.cpp built by scripts/llamacpp.sh (llama-quantize) and the `gguf` package in
.tools/venv (scripts/golden_generation.sh installs it; .tools/vllm-venv has it too).
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


def gemma4_e2b_layer(i):
    """Gemma 4 E2B's layer i as one of the family file's four (local own, global own, local
    shared, global shared): four local layers then a global one (gemma.cpp's E2B config,
    "TTTTF"), the last 20 of its 35 sharing keys and values."""
    return (2 if i >= 35 - 20 else 0) + (1 if i % 5 == 4 else 0)


# Issues 43 and 44: name: (family file, architecture, metadata over the family file's,
# vocabulary size, the family file's layer that full-depth layer i copies).
DEEP = {
    # Qwen3.5-0.8B: 24 layers, the family file's widths (its config.json's).
    "qwen35-0.8b": ("qwen35-0.8b", "qwen35", {"block_count": 24}, 248_320, lambda i: i % 4),
    # Qwen3.5-4B (config.json's text_config): 32 layers of width 2560, MLP 9216, attention of
    # 16 heads of 256 over 4 KV heads, 16 key and 32 value heads of 128 in the delta-net layers.
    "qwen35-4b": ("qwen35-0.8b", "qwen35", {
        "block_count": 32, "embedding_length": 2560, "feed_forward_length": 9216,
        "attention.head_count": 16, "attention.head_count_kv": 4,
        "ssm.time_step_rank": 32, "ssm.inner_size": 32 * 128,
    }, 248_320, lambda i: i % 4),
    # Gemma 4 E2B: 35 layers, window 512 (the family file's is cut to 16), 20 sharing.
    "gemma4-e2b": ("gemma4-e2b-window16", "gemma4", {
        "block_count": 35, "attention.sliding_window": 512, "attention.shared_kv_layers": 20,
    }, 262_144, gemma4_e2b_layer),
    # SmolLM3-3B: 36 layers, every fourth without RoPE (llama.cpp's fixed step).
    "smollm3-3b": ("smollm3-3b", "smollm3", {"block_count": 36}, 128_256, lambda i: i % 4),
}

# The metadata lists with one entry per layer (Gemma 4's).
PER_LAYER = ("feed_forward_length", "attention.sliding_window_pattern")


def qwen35_shapes(m):
    """Qwen3.5's block tensors (name: ne), recurrent and attention layers', from the metadata."""
    h, f = m["embedding_length"], m["feed_forward_length"]
    q, kv, hd = m["attention.head_count"], m["attention.head_count_kv"], m["attention.key_length"]
    kh, vh, dk = m["ssm.group_count"], m["ssm.time_step_rank"], m["ssm.state_size"]
    inner = m["ssm.inner_size"]
    conv = 2 * kh * dk + inner
    mlp = {"attn_norm.weight": [h], "post_attention_norm.weight": [h],
           "ffn_gate.weight": [h, f], "ffn_up.weight": [h, f], "ffn_down.weight": [f, h]}
    recurrent = {"attn_qkv.weight": [h, conv], "attn_gate.weight": [h, inner],
                 "ssm_beta.weight": [h, vh], "ssm_alpha.weight": [h, vh],
                 "ssm_conv1d.weight": [m["ssm.conv_kernel"], conv], "ssm_dt.bias": [vh],
                 "ssm_a": [vh], "ssm_norm.weight": [inner // vh], "ssm_out.weight": [inner, h]}
    # The query projection carries the output gate beside the queries.
    attention = {"attn_q.weight": [h, 2 * q * hd], "attn_k.weight": [h, kv * hd],
                 "attn_v.weight": [h, kv * hd], "attn_output.weight": [q * hd, h],
                 "attn_q_norm.weight": [hd], "attn_k_norm.weight": [hd]}
    return {**mlp, **recurrent}, {**mlp, **attention}


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


def sized_tokenizer(vocab, eot=199_999):
    """A byte-level BPE vocabulary of `vocab` entries, `<|endoftext|>` at `eot` (by default
    Phi-4-mini's id)."""
    # GPT-2's byte-to-symbol table, as byte-level BPE writes its 256 base tokens.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    symbol = {b: chr(b) if b in keep else chr(next(extra)) for b in range(256)}
    tokens = [symbol[b] for b in range(256)]
    letters = "abcdefghijklmnopqrstuvwxyz"
    pairs = [a + b for a in letters for b in letters]
    merges = [f"{p[0]} {p[1]}" for p in pairs]
    tokens += pairs
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
    tok = qwen_tokenizer(models) if vocab_kind == "qwen2.5" else sized_tokenizer(200_064)
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
        x = data(n, ne)
        w.write_tensor_data(x if isinstance(x, Streamed) else
                            x.astype(np.float32 if f32(n, ne) else np.float16))
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
        tok = sized_tokenizer(201_088)  # gpt-oss-20b's vocabulary size
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


class Streamed:
    """A tensor too large to hold in memory at once (Gemma 4's per-layer embedding: 2.3 B
    values), written as it is generated: what `GGUFWriter.write_tensor_data` asks of an array
    (its size in bytes and `tofile`)."""

    CHUNK = 1 << 24

    def __init__(self, rows, cols, rng):
        self.rows, self.cols, self.rng = rows, cols, rng
        self.nbytes = rows * cols * 2

    def tofile(self, f):
        step = max(1, self.CHUNK // self.cols)
        for r in range(0, self.rows, step):
            n = min(step, self.rows - r)
            (0.02 * self.rng.standard_normal((n, self.cols), dtype=np.float32)) \
                .astype(np.float16).tofile(f)


def write_deep_f16(name, family_dir, path):
    """A new family's full-depth f16 file: layer i copies the family file's layer `layer(i)`
    (its kind, widths and vectors) with random matrices of its own."""
    template_name, arch, sizes, vocab, layer = DEEP[name]
    template = GGUFReader(family_dir / f"{template_name}-f32.gguf")
    meta = [x for x in fields(template) if not x[0].startswith("tokenizer.")]
    short = {k[len(arch) + 1:]: v for k, v, _, _ in meta if k.startswith(arch + ".")}
    t_layers, depth = short["block_count"], sizes["block_count"]
    have = {t.name: t for t in template.tensors}
    rules = None
    if arch == "qwen35":
        # The rule must give the family file's own shapes first.
        rules = qwen35_shapes(short)
        for t in template.tensors:
            if t.name.startswith("blk."):
                i, n = t.name[len("blk."):].split(".", 1)
                rule = rules[int(i) == t_layers - 1]
                assert rule[n] == [int(x) for x in t.shape], (t.name, rule[n], list(t.shape))
        short.update(sizes)
        rules = qwen35_shapes(short)

    def deep(k, v):
        """The full-depth value of the metadata key `k`: the given one, a per-layer list
        mapped through `layer`, or the family file's."""
        short_k = k[len(arch) + 1:]
        if short_k in sizes:
            return sizes[short_k]
        if short_k in PER_LAYER and isinstance(v, list):
            return [v[layer(i)] for i in range(depth)]
        return v

    meta = [(k, deep(k, v), t, s) for k, v, t, s in meta]
    meta = [(k, f"{name} shapes, full depth, random weights" if k == "general.name" else v, t, s)
            for k, v, t, s in meta]
    tok = sized_tokenizer(vocab, eot=vocab - 1)
    # Gemma 4's per-layer inputs: one slice of `embedding_length_per_layer_input` per layer.
    per_layer = short.get("embedding_length_per_layer_input", 0)
    h = sizes.get("embedding_length", short["embedding_length"])

    def global_ne(t):
        if t.name == "token_embd.weight":
            return [h, vocab]
        if t.name == "per_layer_token_embd.weight":
            return [per_layer * depth, vocab]
        if t.name == "per_layer_model_proj.weight":
            return [h, per_layer * depth]
        if t.name == "output_norm.weight":
            return [h]
        return [int(x) for x in t.shape]

    tensors = [(t.name, global_ne(t), t.name) for t in template.tensors
               if not t.name.startswith("blk.")]
    for i in range(depth):
        prefix = f"blk.{layer(i)}."
        for t in template.tensors:
            if t.name.startswith(prefix):
                n = t.name[len(prefix):]
                ne = rules[layer(i) == t_layers - 1][n] if rules else [int(x) for x in t.shape]
                tensors.append((f"blk.{i}.{n}", ne, t.name))
    source = {n: src for n, _, src in tensors}
    tensors = [(n, ne) for n, ne, _ in tensors]

    rng = np.random.default_rng(20261126)

    # Vectors, and the convolution (whose 4 taps cannot form quantised blocks), in f32.
    def f32(n, ne):
        return len(ne) == 1 or n.endswith("ssm_conv1d.weight")

    def data(n, ne):
        if len(ne) == 1:
            return np.resize(np.array(have[source[n]].data, dtype=np.float32), ne[0])
        if ne[0] * ne[1] > Streamed.CHUNK * 16:
            return Streamed(ne[1], ne[0], rng)
        return 0.02 * rng.standard_normal((ne[1], ne[0]), dtype=np.float32)

    write_gguf(path, arch, meta + tok, tensors, f32, data)
    print(f"{path}: {parameters(tensors) / 1e9:.2f} B parameters, vocabulary {vocab}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / ".tools/bench-models")
    ap.add_argument("--models", type=Path, default=Path(os.environ.get("DELTALOGIC_MODELS", ROOT / "models")))
    ap.add_argument("--deltalogic", default=str(ROOT / "target/release/deltalogic"))
    ap.add_argument("--llamacpp", type=Path, default=ROOT / ".tools/llama.cpp-build/bin")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--only", choices=sorted(MODELS) + sorted(MOE) + sorted(DEEP))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=a.out) as tmp:
        tmp = Path(tmp)
        for name in list(MODELS) + list(DEEP) + list(MOE):
            if (a.only or name in MOE) and a.only != name:
                continue
            moe = name in MOE
            template, quant = (MOE[name][0], MOE[name][4]) if moe else \
                ((DEEP if name in DEEP else MODELS)[name][0], "Q4_K_M")
            # Only the file needed: the mixtures' are 2.5 and 3.3 GB.
            subprocess.run([a.deltalogic, "dev", "family-files", "--out", str(tmp), "--only",
                            template], check=True, stdout=subprocess.DEVNULL)
            for f in tmp.glob(f"{template}-q8_0.gguf"):
                f.unlink()
            f16 = tmp / f"{name}-f16.gguf"
            if name in DEEP:
                write_deep_f16(name, tmp, f16)
            else:
                (write_moe_f16 if moe else write_f16)(name, tmp, a.models, f16)
            (tmp / f"{template}-f32.gguf").unlink()
            out = a.out / f"{name}-{quant.lower()}.gguf"
            subprocess.run([str(a.llamacpp / "llama-quantize"), str(f16), str(out), quant,
                            a.threads], check=True, stdout=subprocess.DEVNULL)
            f16.unlink()
            print(f"{out}: {out.stat().st_size / 2**30:.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
