#!/usr/bin/env bash
# An example Slurm job array for `ppb-sim sweep` (docs/sweep.md): job K of
# the array runs shard K/N of the grid into PREFIX.K.jsonl, resuming that
# file if the job ran before (preempted, timed out: resubmit the index).
# Afterwards: ppb-sim sweep merge PREFIX.*.jsonl --output PREFIX.jsonl
#
#   sbatch --array=1-16 scripts/sweep-slurm.sh base.yaml grid.yaml study
#
# Adjust the #SBATCH lines to your cluster; PPB_SIM names the binary
# (default build-release/apps/ppb-sim).
#SBATCH --job-name=ppb-sweep
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
#SBATCH --output=ppb-sweep-%A_%a.log
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: sbatch --array=1-N scripts/sweep-slurm.sh BASE.yaml GRID.yaml PREFIX" >&2
  exit 2
fi
: "${SLURM_ARRAY_TASK_ID:?run it as a job array: sbatch --array=1-N ...}"
: "${SLURM_ARRAY_TASK_COUNT:?run it as a job array: sbatch --array=1-N ...}"
ppb_sim=${PPB_SIM:-build-release/apps/ppb-sim}
k=$SLURM_ARRAY_TASK_ID
n=$SLURM_ARRAY_TASK_COUNT
# Arrays may start at 0 (--array=0-15): shards count from 1.
if [ "${SLURM_ARRAY_TASK_MIN:-1}" -eq 0 ]; then k=$((k + 1)); fi
exec "$ppb_sim" sweep --config "$1" --grid "$2" --shard "$k/$n" \
  --threads "${SLURM_CPUS_PER_TASK:-1}" --output "$3.$k.jsonl"
