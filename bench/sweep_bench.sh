#!/usr/bin/env bash
# Points per second of `ppb-sim sweep` on a simulate-only grid of 1,000
# points of configs/example.yaml (stages 1, 2, 4, 8 x microbatches 4..253 by
# 1 → 4 x 250), with 1 and 2 workers, and with mpirun -np 2 and -np 3 (1 and
# 2 worker ranks; --bind-to none: rank 0 mostly sleeps) when the binary is
# built with PPB_MPI. Figures in
# docs/benchmarks.md. usage: bench/sweep_bench.sh [PPB_SIM]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build-release/apps/ppb-sim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "vary:"
  echo "  pipeline.stages: [1, 2, 4, 8]"
  printf "  pipeline.microbatches: ["
  seq -s ", " 4 253 | tr -d '\n'
  echo "]"
} >"$tmp/grid.yaml"
# run LABEL FLAGS -- COMMAND...: COMMAND sweep ... FLAGS, timed.
run() {
  local label=$1 flags=()
  shift
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  rm -f "$tmp/out.jsonl"
  local t0 t1
  t0=$(date +%s.%N)
  if ! /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$@" sweep --config configs/example.yaml \
    --grid "$tmp/grid.yaml" --output "$tmp/out.jsonl" --format csv "${flags[@]}" \
    >/dev/null 2>"$tmp/err"; then
    echo "$label: failed: $(head -n 1 "$tmp/err")"
    return 0
  fi
  t1=$(date +%s.%N)
  local n
  n=$(wc -l <"$tmp/out.jsonl")
  # CPU: user + system seconds of every process (a loaded machine shows in
  # wall time, not here).
  awk -v l="$label" -v n="$n" -v a="$t0" -v b="$t1" -v cpu="$(awk '{ print $1 + $2 }' "$tmp/cpu")" \
    'BEGIN { printf "%-28s %5d points  %7.2f s  %8.1f points/s  cpu %6.2f s  %6.3f ms/point\n",
             l, n, b - a, n / (b - a), cpu, 1000 * cpu / n }'
}
run "threads 1" --threads 1 -- "$bin"
run "threads 2" --threads 2 -- "$bin"
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for np in 2 3; do
    # A binary built without MPI refuses mpirun -np > 1 (reported as failed).
    run "mpirun -np $np ($((np - 1)) worker(s))" -- \
      mpirun --oversubscribe --bind-to none --allow-run-as-root -np "$np" "$bin"
  done
fi
