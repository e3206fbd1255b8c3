#!/usr/bin/env bash
# The step model against published measurements (docs/benchmarks.md, "The
# whole step against published runs"): simulates each bench/validation
# config and prints predicted against measured TFLOP/s per GPU, both by the
# source's own formula: Narayanan et al. 2021 (n21-*, A100, full recompute)
# 96 B s l h^2 (1 + s/6h + V/16lh) per step; the Megatron-LM README's H100
# table (mcore-*, Megatron-Core r0.8.0's num_floating_point_operations for
# MHA and a 4h MLP) 72 B s l h^2 (1 + s/6h + V/12lh). A benchmark, not a
# test: usage scripts/validate-step.sh [PPB_SIM]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIM=${1:-$ROOT/build/apps/ppb-sim}

# row PREFIX SEQ VOCAB K DIV NAME H LAYERS BATCH GPUS TP PP MEASURED
row() {
  local prefix=$1 s=$2 V=$3 k=$4 div=$5 name=$6 h=$7 l=$8 batch=$9
  local gpus=${10} tp=${11} pp=${12} measured=${13}
  local ns
  ns=$("$SIM" --config "$ROOT/bench/validation/$prefix-$name.yaml" --format json |
       sed -n 's/^  "iteration_time_ns": \([0-9]*\),$/\1/p')
  awk -v h="$h" -v l="$l" -v B="$batch" -v g="$gpus" -v ns="$ns" -v m="$measured" \
      -v name="$name" -v tp="$tp" -v pp="$pp" -v s="$s" -v V="$V" -v k="$k" -v div="$div" 'BEGIN {
    f = k * B * s * l * h * h * (1 + s / (6 * h) + V / (div * l * h))
    p = f / (ns / 1e9) / g / 1e12
    printf "%-8s %6d %5d %5d %6d %10.1f %10.1f %+6.1f%%\n", name, g, tp, pp, g / (tp * pp), m, p, 100 * (p - m) / m
  }'
}
header() { printf '%-8s %6s %5s %5s %6s %10s %10s %7s\n' model gpus tp pp dp measured predicted error; }

echo "Narayanan et al. 2021, Table 1 (A100 80GB, full recompute):"
header
while read -r name h l batch gpus tp pp measured; do
  row n21 2048 51200 96 16 "$name" "$h" "$l" "$batch" "$gpus" "$tp" "$pp" "$measured"
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
echo
echo "Megatron-LM README at f2e5db402c (Megatron-Core r0.8.0, H100):"
header
while read -r name h l batch gpus tp pp measured; do
  row mcore 4096 131072 72 12 "$name" "$h" "$l" "$batch" "$gpus" "$tp" "$pp" "$measured"
done <<'ROWS'
1.7B 2048 24 192 48 1 1 408.8
7.1B 4096 30 192 96 2 1 465.9
16B 6144 32 192 192 4 1 489.1
32B 7168 48 192 384 8 1 459.6
70B 8192 84 384 768 8 2 419.7
119B 10240 92 768 1536 8 4 420.5
177B 12288 96 1152 2304 8 6 432.8
314B 16384 96 1536 3072 8 8 474.4
462B 18432 112 3072 6144 8 16 459.9
ROWS
