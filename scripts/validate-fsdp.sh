#!/usr/bin/env bash
# Sharded data parallelism against published measurements (docs/benchmarks.md,
# "FSDP and offload against published runs", issue 43): the configs of
# bench/validation/tt-fsdp-*, simulated with every default. A benchmark, not
# a test. Needs python3 (to read ppb's JSON).
#   usage: scripts/validate-fsdp.sh [PPB_SIM]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIM=${1:-$ROOT/build/apps/ppb-sim}
V=$ROOT/bench/validation
printf '%-38s %10s %10s %8s %10s %10s\n' run measured ppb error "GiB meas." "GiB ppb"
while read -r name measured gib; do
  "$SIM" --config "$V/$name.yaml" --format json | python3 -c "
import json, sys
d = json.load(sys.stdin)
t = d['tokens_per_s_per_gpu']; m = $measured
print('%-38s %10.1f %10.1f %+7.1f%% %10.1f %10.1f' % ('$name', m, t, 100 * (t - m) / m, $gib,
      d['max_peak_memory_bytes'] / 2**30))
"
done <<'ROWS'
tt-fsdp-h100-llama3-8b-8gpu 5762 82.4
tt-fsdp-h100-llama3-8b-128gpu 5605 67.0
tt-fsdp-h100-llama3-70b-256gpu 829 71.9
tt-fsdp-h100-llama3-405b-512gpu-1f1b 100 82.5
tt-fsdp-h100-llama3-405b-512gpu-interleaved 128 72.7
ROWS
