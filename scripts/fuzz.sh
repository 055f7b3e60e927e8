#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 60 s each) and prints executions and time
# per target. Needs cargo-fuzz (`cargo install cargo-fuzz`); the toolchain is stable, so
# RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its nightly-only flags. No sanitizer (`-s none`): the
# code is safe Rust, so the findings are panics, aborts, hangs and memory blow-ups, and the
# instrumented build stays affordable on two cores.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# A crash leaves its input under fuzz/artifacts/TARGET/: make it a test in tests/fuzz_regressions.rs.
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
