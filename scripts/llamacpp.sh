#!/usr/bin/env bash
# Dev only: builds llama.cpp (the token and logits oracle) from the PyPI sdist of
# llama-cpp-python into .tools/. CI never runs this; tests read the goldens it produced.
# Idempotent: finished steps are skipped. Prints the bin directory.
# On CPUs with AMX whose tiles the kernel does not enable (this machine kind), llama.cpp's AMX
# matmul faults: pass --repack 0 to llama-bench (this also turns off the AVX repacked kernels of
# Q4_0/Q4_K/Q5_K/Q6_K/Q8_0; Q4_1 has none), e.g.
#   llama-bench -m models/SmolLM2-135M-Instruct.Q4_1.gguf -p 256 -n 0 -t 2 --repack 0
# Usage: scripts/llamacpp.sh [--avx2]
#   --avx2: a second build limited to AVX2 + FMA + F16C (no AVX-512) in .tools/llama.cpp-avx2,
#     for llama.cpp's own spread across vector units (scripts/llamacpp_golden.py).
set -euo pipefail

VERSION=0.3.36
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.tools"
SRC="$TOOLS/llama-cpp-python-$VERSION"
BUILD="$TOOLS/llama.cpp-build"
ISA=(-DGGML_NATIVE=ON)
if [[ "${1:-}" == "--avx2" ]]; then
    BUILD="$TOOLS/llama.cpp-avx2"
    ISA=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF)
fi
VENV="$TOOLS/venv"
JOBS="${JOBS:-2}"
TARGETS=(llama-tokenize llama-bench llama-batched-bench llama-perplexity llama-quantize)

mkdir -p "$TOOLS"
if [[ ! -x "$VENV/bin/cmake" ]]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet cmake
fi
if [[ ! -d "$SRC/vendor/llama.cpp" ]]; then
    "$VENV/bin/pip" download --quiet --no-deps \
        "llama-cpp-python==$VERSION" -d "$TOOLS/sdist"
    tar -xzf "$TOOLS/sdist/llama_cpp_python-$VERSION.tar.gz" -C "$TOOLS" 2>/dev/null ||
        tar -xzf "$TOOLS/sdist/llama-cpp-python-$VERSION.tar.gz" -C "$TOOLS"
    [[ -d "$SRC" ]] || mv "$TOOLS/llama_cpp_python-$VERSION" "$SRC"
fi
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
    "$VENV/bin/cmake" -S "$SRC/vendor/llama.cpp" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_CURL=OFF "${ISA[@]}" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
fi
"$VENV/bin/cmake" --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"
echo "$BUILD/bin"
