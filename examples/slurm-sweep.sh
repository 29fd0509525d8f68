#!/usr/bin/env bash
# A supernode sweep as a Slurm job array: each array task runs one deterministic shard
# (points with index % N == task), then one job merges the shards and draws the charts.
#
# Submit (16 shards, the merge chained after all of them succeed):
#
#   OUT=/shared/sweeps/decode-10k
#   JOB=$(sbatch --parsable --array=0-15 examples/slurm-sweep.sh scenarios/sweep-decode-10k.toml "$OUT")
#   sbatch --dependency=afterok:$JOB --wrap "supernode merge $OUT/shard-* --out $OUT/merged"
#
# OUT must be on a filesystem every node sees. supernode reads SLURM_ARRAY_TASK_ID,
# SLURM_ARRAY_TASK_COUNT and SLURM_ARRAY_TASK_MIN itself, so the array must be a contiguous
# range (0-15, or 1-16; not 0-30:2). A requeued or preempted task continues where it stopped
# (--resume keeps the points already in its results.jsonl). `supernode merge` refuses shards of
# different sweeps, missing or duplicate shards, and shards that did not finish.
#
#SBATCH --job-name=supernode-sweep
#SBATCH --cpus-per-task=4
#SBATCH --mem=1G
#SBATCH --time=01:00:00
#SBATCH --requeue
#SBATCH --output=supernode-sweep-%A_%a.log

set -euo pipefail

SWEEP=${1:?usage: sbatch --array=0-<N-1> slurm-sweep.sh SWEEP.toml OUT_DIR}
OUT=${2:?usage: sbatch --array=0-<N-1> slurm-sweep.sh SWEEP.toml OUT_DIR}
SUPERNODE=${SUPERNODE:-supernode}

: "${SLURM_ARRAY_TASK_ID:?run this with sbatch --array=...}"

exec "$SUPERNODE" sweep "$SWEEP" \
  --out "$OUT/shard-$SLURM_ARRAY_TASK_ID" \
  --jobs "${SLURM_CPUS_PER_TASK:-1}" \
  --resume
