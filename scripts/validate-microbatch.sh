#!/usr/bin/env bash
# Micro-batch size against published measurements (docs/benchmarks.md,
# "Costs per micro-batch: BLOOM's micro-batch study", issue 45): BLOOM's
# 181B shape study on 384 A100s (tests/data/bloom). Fits the host's costs to
# the PP 12 runs with calibrate --runs, then simulates every run with the
# presets and with the fit: the PP 6 runs are never fitted. A benchmark, not
# a test (tests/test_host_costs.cpp checks the same). Needs python3.
#   usage: scripts/validate-microbatch.sh [PPB_SIM]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIM=${1:-$ROOT/build/apps/ppb-sim}
D=$ROOT/tests/data/bloom
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$SIM" calibrate --runs "$D/runs-pp12.yaml" -o "$TMP/fit.yaml" > "$TMP/calibrate.txt"
grep -E "rms error|fitted:" "$TMP/calibrate.txt"
# The fitted keys as one flow-map fragment ("k: v, k: v").
FIT=$(python3 -c "
import sys
keys = [l.strip() for l in open('$TMP/fit.yaml') if l.startswith('  ') and 'gpu:' not in l
        and 'memory_fragmentation' not in l]
print(', '.join(keys))")
printf '%-16s %10s %12s %8s %12s %8s\n' run measured presets error fitted error
while read -r name measured; do
  sed "s/hardware: {gpu: a100-sxm4-80gb,/hardware: {gpu: a100-sxm4-80gb, $FIT,/" \
    "$D/$name.yaml" > "$TMP/$name-fit.yaml"
  a=$("$SIM" --config "$D/$name.yaml" --format json | python3 -c \
      "import json,sys; print(json.load(sys.stdin)['iteration_time_ns'] / 1e9)")
  b=$("$SIM" --config "$TMP/$name-fit.yaml" --format json | python3 -c \
      "import json,sys; print(json.load(sys.stdin)['iteration_time_ns'] / 1e9)")
  python3 -c "
m, a, b = $measured, $a, $b
print('%-16s %10.2f %12.2f %+7.1f%% %12.2f %+7.1f%%' % ('$name', m, a, 100 * (a - m) / m, b,
      100 * (b - m) / m))"
done <<'ROWS'
pp12-mbs1 143.31
pp12-mbs2 134.02
pp12-mbs4 123.69
pp12-mbs8 129.26
pp6-mbs1 139.82
pp6-mbs2 131.02
pp6-mbs4 121.48
ROWS
