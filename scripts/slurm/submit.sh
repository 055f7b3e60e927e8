#!/usr/bin/env bash
# Submits a sharded scoring run: an array job of N parts and a merge job that runs after all of
# them succeeded. Prints the two job ids. See docs/cluster.md.
# Usage: scripts/slurm/submit.sh --store BASE --work DIR --model M --set S --shards N
#            [--template T] [--norm X] [--bin PATH] [--cpus C] [-- SBATCH_OPTIONS...]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CPUS=2
BIN="$(command -v deltalogic || true)"
TEMPLATE="" NORM="" BASE="" WORK="" MODEL="" SET="" SHARDS=""
while (($#)); do
    case "$1" in
        --store) BASE="$2" ;;
        --work) WORK="$2" ;;
        --model) MODEL="$2" ;;
        --set) SET="$2" ;;
        --shards) SHARDS="$2" ;;
        --template) TEMPLATE="$2" ;;
        --norm) NORM="$2" ;;
        --bin) BIN="$2" ;;
        --cpus) CPUS="$2" ;;
        --) shift; break ;;
        *) echo "error: unknown option $1 (see the usage at the top of $0)" >&2; exit 2 ;;
    esac
    shift 2
done
for v in BASE WORK MODEL SET SHARDS BIN; do
    [[ -n "${!v}" ]] || { echo "error: missing ${v,,} (--${v,,}; --bin when deltalogic is not on PATH)" >&2; exit 2; }
done
[[ "$SHARDS" =~ ^[1-9][0-9]*$ ]] || { echo "error: --shards $SHARDS: give a positive number" >&2; exit 2; }
[[ -f "$BASE" ]] || { echo "error: $BASE: no such store" >&2; exit 2; }
mkdir -p "$WORK"
# Every node reads these paths: they must be on a shared filesystem, as absolute paths.
BASE="$(realpath "$BASE")" WORK="$(realpath "$WORK")" BIN="$(realpath "$BIN")"
export DL_BIN="$BIN" DL_BASE="$BASE" DL_WORK="$WORK" DL_MODEL="$MODEL" DL_SET="$SET" \
    DL_SHARDS="$SHARDS" DL_TEMPLATE="$TEMPLATE" DL_NORM="$NORM"
array=$(sbatch --parsable --export=ALL --array="0-$((SHARDS - 1))" --cpus-per-task="$CPUS" \
    --output="$WORK/part-%a.log" "$@" "$HERE/score-part.sh")
array="${array%%;*}"
merge=$(sbatch --parsable --export=ALL --dependency="afterok:$array" --cpus-per-task="$CPUS" \
    --output="$WORK/merge.log" "$@" "$HERE/merge.sh")
echo "array job $array ($SHARDS parts), merge job ${merge%%;*}"
