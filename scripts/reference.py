#!/usr/bin/env python3
"""Independent f32 reference for deltalogic's transformer scorer (dev only; CI reads its output).

Written from the model definitions (transformers' modeling_llama/qwen2/qwen3/phi3 and llama.cpp's
llama/qwen2/qwen3 graphs), sharing no code with the Rust side: safetensors are parsed by hand,
GGUF tensors are dequantised by the `gguf` PyPI package. The context runs once and each label
continues from its keys and values (the Rust tests check that against full recomputation). Writes a golden JSON file:

  {"model": ..., "cases": [{"context": str, "context_tokens": [..],
                            "labels": [{"label": str, "tokens": [..], "logprobs": [..]}]}]}

Tokens: Hugging Face directories use the `tokenizers` package on tokenizer.json; GGUF files use
llama.cpp's `llama-tokenize` (--llama-bin). A label's tokens are those of context+label after the
context's tokens, which must be an exact prefix (the Rust scorer enforces the same rule).

Usage:
  reference.py --model DIR_OR_GGUF --prompts fixtures|folio:N [--llama-bin DIR] --out FILE
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np

LABELS = [" True", " False", " Uncertain"]


# ---------------------------------------------------------------- weights


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = raw[base + a : base + b]
        dt = info["dtype"]
        if dt == "F32":
            arr = np.frombuffer(buf, dtype="<f4")
        elif dt == "F16":
            arr = np.frombuffer(buf, dtype="<f2").astype(np.float32)
        elif dt == "BF16":
            arr = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{path}: {name}: dtype {dt} unsupported")
        out[name] = arr.reshape(info["shape"]).astype(np.float32)
    return out


def load_hf(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    single = os.path.join(d, "model.safetensors")
    if os.path.exists(single):
        w = read_safetensors(single)
    else:
        index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
        w = {}
        for shard in sorted(set(index["weight_map"].values())):
            w.update(read_safetensors(os.path.join(d, shard)))
    arch = cfg["architectures"][0]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    m = {
        "heads": H,
        "kv": KV,
        "hd": hd,
        "eps": cfg["rms_norm_eps"],
        "theta": cfg.get("rope_theta", 10000.0),
        "interleaved": False,
        "rot": hd,
        "scale": 1.0,
        "ext": np.ones(hd // 2),
        "layers": [],
    }
    if arch == "Phi3ForCausalLM":
        m["rot"] = int(hd * cfg.get("partial_rotary_factor", 1.0))
        rs = cfg.get("rope_scaling")
        if rs:
            orig = cfg["original_max_position_embeddings"]
            factor = cfg["max_position_embeddings"] / orig
            m["scale"] = rs.get("attention_factor") or (
                1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))
            )
            m["ext"] = np.array(rs["short_factor"], dtype=np.float64)
        else:
            m["ext"] = np.ones(m["rot"] // 2)
    g = lambda n: w[n]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        L = {"attn_norm": g(p + "input_layernorm.weight"), "mlp_norm": g(p + "post_attention_layernorm.weight")}
        L["o"] = g(p + "self_attn.o_proj.weight")
        L["down"] = g(p + "mlp.down_proj.weight")
        if arch == "Phi3ForCausalLM":
            qkv = g(p + "self_attn.qkv_proj.weight")
            L["q"], L["k"], L["v"] = np.split(qkv, [H * hd, H * hd + KV * hd])
            L["gate"], L["up"] = np.split(g(p + "mlp.gate_up_proj.weight"), 2)
        else:
            for s in "qkv":
                L[s] = g(p + f"self_attn.{s}_proj.weight")
                if p + f"self_attn.{s}_proj.bias" in w:
                    L[s + "b"] = g(p + f"self_attn.{s}_proj.bias")
            L["gate"], L["up"] = g(p + "mlp.gate_proj.weight"), g(p + "mlp.up_proj.weight")
        if arch == "Qwen3ForCausalLM":
            L["qn"], L["kn"] = g(p + "self_attn.q_norm.weight"), g(p + "self_attn.k_norm.weight")
        m["layers"].append(L)
    m["embed"] = g("model.embed_tokens.weight")
    m["head"] = w.get("lm_head.weight", m["embed"]) if not cfg.get("tie_word_embeddings") else m["embed"]
    m["norm"] = g("model.norm.weight")
    return m


def load_gguf(path):
    from gguf import GGUFReader
    from gguf.quants import dequantize

    r = GGUFReader(path)
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.ggml.")}
    arch = meta["general.architecture"]
    k = lambda s: meta[f"{arch}.{s}"]
    w = {}
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
        w[t.name] = a.reshape([int(x) for x in reversed(t.shape)])
    H = k("attention.head_count")
    KV = meta.get(f"{arch}.attention.head_count_kv", H)
    hd = meta.get(f"{arch}.attention.key_length", k("embedding_length") // H)
    m = {
        "heads": H,
        "kv": KV,
        "hd": hd,
        "eps": k("attention.layer_norm_rms_epsilon"),
        "theta": meta.get(f"{arch}.rope.freq_base", 10000.0),
        # llama.cpp: LLM_ARCH_LLAMA uses LLAMA_ROPE_TYPE_NORM (pairs 2i, 2i+1); qwen2/3 NEOX.
        "interleaved": arch == "llama",
        "rot": meta.get(f"{arch}.rope.dimension_count", hd),
        "scale": 1.0,
        "layers": [],
    }
    m["ext"] = np.ones(m["rot"] // 2)
    for l in range(k("block_count")):
        p = f"blk.{l}."
        L = {
            "attn_norm": w[p + "attn_norm.weight"],
            "mlp_norm": w[p + "ffn_norm.weight"],
            "o": w[p + "attn_output.weight"],
            "gate": w[p + "ffn_gate.weight"],
            "up": w[p + "ffn_up.weight"],
            "down": w[p + "ffn_down.weight"],
        }
        for s in "qkv":
            L[s] = w[p + f"attn_{s}.weight"]
            if p + f"attn_{s}.bias" in w:
                L[s + "b"] = w[p + f"attn_{s}.bias"]
        if p + "attn_q_norm.weight" in w:
            L["qn"], L["kn"] = w[p + "attn_q_norm.weight"], w[p + "attn_k_norm.weight"]
        m["layers"].append(L)
    m["embed"] = w["token_embd.weight"]
    m["head"] = w.get("output.weight", m["embed"])
    m["norm"] = w["output_norm.weight"]
    return m


# ---------------------------------------------------------------- forward


def rms(x, w, eps):
    x = x.astype(np.float32)
    inv = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps))
    return (x * inv.astype(np.float32) * w).astype(np.float32)


def rope(x, m, p0):
    # x: [T, heads, hd] at positions p0..p0+T
    T = x.shape[0]
    rd = m["rot"]
    i = np.arange(rd // 2, dtype=np.float64)
    inv = 1.0 / (m["ext"] * m["theta"] ** (2 * i / rd))
    ang = np.arange(p0, p0 + T, dtype=np.float64)[:, None] * inv[None, :]
    cos = (np.cos(ang) * m["scale"]).astype(np.float32)[:, None, :]
    sin = (np.sin(ang) * m["scale"]).astype(np.float32)[:, None, :]
    r, rest = x[..., :rd], x[..., rd:]
    if m["interleaved"]:
        a, b = r[..., 0::2], r[..., 1::2]
        out = np.empty_like(r)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = b * cos + a * sin
    else:
        a, b = r[..., : rd // 2], r[..., rd // 2 :]
        out = np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    return np.concatenate([out, rest], axis=-1).astype(np.float32)


def forward(m, tokens, past=None):
    """Final-normed hidden states of `tokens` following `past` (per-layer keys and values of the
    earlier positions, or None), and the extended keys and values."""
    x = m["embed"][tokens].astype(np.float32)
    T = len(tokens)
    H, KV, hd = m["heads"], m["kv"], m["hd"]
    p0 = 0 if past is None else past[0][0].shape[0]
    # Query i (position p0+i) sees keys 0..p0+i.
    mask = np.triu(np.full((T, p0 + T), -np.inf, dtype=np.float32), p0 + 1)
    kvs = []
    for li, L in enumerate(m["layers"]):
        h = rms(x, L["attn_norm"], m["eps"])
        q = h @ L["q"].T + L.get("qb", 0)
        k = h @ L["k"].T + L.get("kb", 0)
        v = h @ L["v"].T + L.get("vb", 0)
        q, k, v = q.reshape(T, H, hd), k.reshape(T, KV, hd), v.reshape(T, KV, hd)
        if "qn" in L:
            q, k = rms(q, L["qn"], m["eps"]), rms(k, L["kn"], m["eps"])
        q, k = rope(q, m, p0), rope(k, m, p0)
        if past is not None:
            k = np.concatenate([past[li][0], k])
            v = np.concatenate([past[li][1], v])
        kvs.append((k, v))
        kr = np.repeat(k, H // KV, axis=1)
        vr = np.repeat(v, H // KV, axis=1)
        s = np.einsum("thd,shd->hts", q, kr).astype(np.float32) / np.float32(math.sqrt(hd)) + mask
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p = (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)
        o = np.einsum("hts,shd->thd", p, vr).reshape(T, H * hd)
        x = (x + o @ L["o"].T).astype(np.float32)
        h = rms(x, L["mlp_norm"], m["eps"])
        g, u = h @ L["gate"].T, h @ L["up"].T
        x = (x + ((g / (1 + np.exp(-g))) * u) @ L["down"].T).astype(np.float32)
    return rms(x, m["norm"], m["eps"]), kvs


def log_softmax_rows(m, h):
    logits = (h @ m["head"].T).astype(np.float64)
    mx = logits.max(axis=-1, keepdims=True)
    return logits - mx - np.log(np.exp(logits - mx).sum(axis=-1, keepdims=True))


# ---------------------------------------------------------------- tokens and prompts


def hf_tokenizer(d):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def llama_tokenizer(model, bin_dir):
    exe = os.path.join(bin_dir, "llama-tokenize")

    def run(text):
        out = subprocess.run(
            [exe, "-m", model, "-p", text, "--ids", "--log-disable", "--no-bos"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return json.loads(out.strip().splitlines()[-1])

    return run


FIXTURE_PROMPTS = [
    "All cats are animals. Tom is a cat. Is Tom an animal? Answer:",
    "Every bird can fly. Penguins are birds. Can penguins fly? Answer:",
    "If it rains, the grass is wet. It rains.\nThe grass is wet. Answer:",
    "Bob is big. Big things are heavy. Bob is heavy. Answer:",
    "The cow eats the grass. The grass is green. Answer:",
    "Anne is kind. Kind people are nice. Anne is not nice. Answer:",
    "No fish can sing. Nemo is a fish. Nemo sings. Answer:",
    "Question: is 2 + 2 = 4? Answer:",
    "x",
    "The sky is blue, true or false? Answer:",
    "Some dogs bark. Rex is a dog. Rex barks. Answer:",
    "Harry is young. Young people are quick. Is Harry quick?\nAnswer:",
    "If something is red then it is round. The ball is red. Answer:",
    "Cold things are blue. Ice is cold. Ice is blue. Answer:",
    "Erin is rough. Erin is not green. Answer:",
    "Uncertain, true or false: Fiona likes the mouse. Answer:",
]


def prompts(spec):
    if spec == "fixtures":
        return FIXTURE_PROMPTS
    kind, n = spec.split(":")
    if kind != "folio":
        raise SystemExit(f"unknown prompt set {spec}")
    root = os.environ.get("DELTALOGIC_DATASETS", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "datasets"))
    items = json.load(open(os.path.join(root, "folio", "logic-lm", "dev.json")))
    # Must match tests/suite/scorer_exactness.rs::folio_prompt.
    return [f"{it['context']}\n{it['question']}\nAnswer:" for it in items[: int(n)]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--llama-bin")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if os.path.isdir(args.model):
        m, tokenize = load_hf(args.model), hf_tokenizer(args.model)
    else:
        if not args.llama_bin:
            raise SystemExit("--llama-bin is needed to tokenize a GGUF model")
        m, tokenize = load_gguf(args.model), llama_tokenizer(args.model, args.llama_bin)
    cases = []
    for ctx in prompts(args.prompts):
        ct = tokenize(ctx)
        # The context once; each label continues from its keys and values.
        hc, past = forward(m, ct)
        labels = []
        for lab in LABELS:
            full = tokenize(ctx + lab)
            if full[: len(ct)] != ct:
                raise SystemExit(f"label boundary: tokens of {ctx!r} are not a prefix of +{lab!r}")
            lt = full[len(ct) :]
            h = hc[-1:]
            if len(lt) > 1:
                h = np.concatenate([h, forward(m, lt[:-1], past)[0]])
            lp = log_softmax_rows(m, h)
            labels.append(
                {"label": lab, "tokens": lt, "logprobs": [float(lp[i, t]) for i, t in enumerate(lt)]}
            )
        cases.append({"context": ctx, "context_tokens": ct, "labels": labels})
        print(f"{len(cases)}: {len(ct)} tokens", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump({"model": os.path.basename(os.path.normpath(args.model)), "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
