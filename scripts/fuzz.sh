#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 60 s each) and prints executions and time
# per target. Needs cargo-fuzz (`cargo install cargo-fuzz`); the toolchain is stable, so
# RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its nightly-only flags. No sanitizer (`-s none`): the
# code is safe Rust, so the findings are panics, aborts, hangs and memory blow-ups, and the
# instrumented build stays affordable on two cores.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# A crash leaves its input under fuzz/artifacts/TARGET/: make it a test in a module of tests/suite/ (a new file needs its `mod` line in tests/suite/main.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz list)
fi
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    # Seed an empty corpus with the repository's own (broken) fixtures of that reader.
    if [ -z "$(ls -A "fuzz/corpus/$t")" ]; then
        case "$t" in
            dataset_folio) seeds=(fixtures/bad/folio_*.jsonl fixtures/bad/latin1.jsonl) ;;
            dataset_proofwriter) seeds=(fixtures/bad/proofwriter_*.json) ;;
            dataset_ruletaker) seeds=(fixtures/bad/ruletaker_*.jsonl) ;;
            dataset_clomo) seeds=(fixtures/bad/clomo_*.json fixtures/bad/not_json.json) ;;
            hf_model) seeds=(fixtures/hf/*/config.json) ;;
            *) seeds=() ;;
        esac
        for f in "${seeds[@]}"; do cp "$f" "fuzz/corpus/$t/$(basename "$(dirname "$f")")-$(basename "$f")"; done
    fi
    log="fuzz/artifacts/$t.log"
    mkdir -p fuzz/artifacts
    start=$(date +%s)
    status=0
    (cd fuzz && cargo fuzz run -O -s none "$t" -- -max_total_time="$secs" -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1) >"$log" 2>&1 || status=$?
    took=$(( $(date +%s) - start ))
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "$t: $runs executions in ${took}s (exit $status; log $log)"
done
