#!/usr/bin/env bash
# The step model against published measurements (docs/benchmarks.md, "The
# whole step against published runs"): simulates each bench/validation
# config and prints predicted against measured TFLOP/s per GPU, both by the
# paper's formula 96 B s l h^2 (1 + s/6h + V/16lh) per step. A benchmark,
# not a test: usage scripts/validate-step.sh [PPB_SIM]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIM=${1:-$ROOT/build/apps/ppb-sim}
printf '%-8s %6s %5s %5s %6s %10s %10s %7s\n' model gpus tp pp dp measured predicted error
while read -r name h l batch gpus tp pp measured; do
  cfg=$ROOT/bench/validation/n21-$name.yaml
  ns=$("$SIM" --config "$cfg" --format json | sed -n 's/^  "iteration_time_ns": \([0-9]*\),$/\1/p')
  awk -v h="$h" -v l="$l" -v B="$batch" -v g="$gpus" -v ns="$ns" -v m="$measured" \
      -v name="$name" -v tp="$tp" -v pp="$pp" 'BEGIN {
    s = 2048; V = 51200
    f = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
    p = f / (ns / 1e9) / g / 1e12
    printf "%-8s %6d %5d %5d %6d %10.1f %10.1f %+6.1f%%\n", name, g, tp, pp, g / (tp * pp), m, p, 100 * (p - m) / m
  }'
done <<'ROWS'
1.7B 2304 24 512 32 1 1 137
3.6B 3072 30 512 64 2 1 138
7.5B 4096 36 512 128 4 1 142
18.4B 6144 40 1024 256 8 1 135
39.1B 8192 48 1536 512 8 2 138
76.1B 10240 60 1792 1024 8 4 140
145.6B 12288 80 2304 1536 8 8 148
310.1B 16384 96 2160 1920 8 16 155
529.6B 20480 105 2520 2520 8 35 163
1008B 25600 128 3072 3072 8 64 163
ROWS
