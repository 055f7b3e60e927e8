#!/usr/bin/env bash
# One task of the Slurm array job: scores part $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT
# of a set into its own copy of the base store. submit.sh passes the settings as environment
# variables; see docs/cluster.md.
#SBATCH --job-name=deltalogic-part
#SBATCH --ntasks=1
set -euo pipefail
: "${DL_BASE:?the base store (model registered, set built)}" "${DL_WORK:?the work directory}"
: "${DL_MODEL:?}" "${DL_SET:?}" "${SLURM_ARRAY_TASK_ID:?run as a Slurm array task}"
BIN="${DL_BIN:-deltalogic}"
I="$SLURM_ARRAY_TASK_ID"
N="${SLURM_ARRAY_TASK_COUNT:?}"
PART="$DL_WORK/part-$I-of-$N.redb"
# A requeued or resubmitted task keeps its part store: scoring resumes from what it committed.
[[ -e "$PART" ]] || cp "$DL_BASE" "$PART"
args=(score --model "$DL_MODEL" --set "$DL_SET" --shard "$I/$N" --threads "${DL_THREADS:-${SLURM_CPUS_PER_TASK:-1}}")
[[ -z "${DL_TEMPLATE:-}" ]] || args+=(--template "$DL_TEMPLATE")
[[ -z "${DL_NORM:-}" ]] || args+=(--norm "$DL_NORM")
"$BIN" --store "$PART" "${args[@]}"
