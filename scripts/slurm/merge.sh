#!/usr/bin/env bash
# The job after the array (--dependency=afterok): merges the N part stores into a copy of the
# base store (each merge recomputes a sample of the new scores), then `score` finds every score
# cached and writes the whole set's result, and the report is written beside it.
#SBATCH --job-name=deltalogic-merge
#SBATCH --ntasks=1
set -euo pipefail
: "${DL_BASE:?}" "${DL_WORK:?}" "${DL_MODEL:?}" "${DL_SET:?}" "${DL_SHARDS:?}"
BIN="${DL_BIN:-deltalogic}"
OUT="$DL_WORK/merged.redb"
cp "$DL_BASE" "$OUT.part"
# Each merge recomputes DL_VERIFY_SAMPLE (default 8) of the part's new scores with the model, from
# the empty state: with many parts of a large model, that is worth lowering (docs/cluster.md).
for ((i = 0; i < DL_SHARDS; i++)); do
    "$BIN" --store "$OUT.part" cache merge --verify-sample "${DL_VERIFY_SAMPLE:-8}" \
        "$DL_WORK/part-$i-of-$DL_SHARDS.redb"
done
args=(score --model "$DL_MODEL" --set "$DL_SET" --threads "${DL_THREADS:-${SLURM_CPUS_PER_TASK:-1}}")
[[ -z "${DL_TEMPLATE:-}" ]] || args+=(--template "$DL_TEMPLATE")
[[ -z "${DL_NORM:-}" ]] || args+=(--norm "$DL_NORM")
"$BIN" --store "$OUT.part" --json "${args[@]}" >"$DL_WORK/score.json"
mv "$OUT.part" "$OUT"
"$BIN" --store "$OUT" report --format json --svg "$DL_WORK/failure-modes.svg" >"$DL_WORK/report.json"
echo "merged store: $OUT; report: $DL_WORK/report.json"
