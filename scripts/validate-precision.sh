#!/usr/bin/env bash
# Low precision against published measurements (docs/benchmarks.md, "Low
# precision against published runs", issue 42): the configs of
# bench/validation/te-* and tt-*, simulated with every default. A benchmark,
# not a test. Needs python3 (to read ppb's JSON).
#   usage: scripts/validate-precision.sh [PPB_SIM]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIM=${1:-$ROOT/build/apps/ppb-sim}
V=$ROOT/bench/validation

echo "TransformerEngine gemm_profiling.rst, the 5B model's layer on B300 (ms per layer,"
echo "fprop + dgrad + wgrad; ppb prices dgrad and wgrad as long as fprop):"
printf '%-6s %10s %10s %8s %12s %12s\n' recipe "TE GEMMs" "ppb GEMMs" error "TE autocast" "ppb +quant"
while read -r recipe gemms autocast; do
  "$SIM" model --config "$V/te-b300-5b-$recipe.yaml" --format json | python3 -c "
import json, sys
d = json.load(sys.stdin)
layer = [l for l in d['step_model']['layers'] if l['layer'].startswith('decoder')][0]
g = 3 * sum(x['time_ns'] for x in layer['gemms']) / 1e6
q = layer.get('quantize', {})
# One micro-batch a step: the weights' cast is paid once, here.
qt = sum(q.get(k, 0) for k in ('forward_ns', 'backward_ns', 'wgrad_ns', 'weight_step_ns')) / 1e6
m = $gemms
print('%-6s %10.3f %10.3f %+7.1f%% %12.3f %12.3f' % ('$recipe', m, g, 100 * (g - m) / m, $autocast, g + qt))
"
done <<'ROWS'
bf16 12.835 12.227
mxfp8 7.324 8.507
nvfp4 3.754 6.439
ROWS

tokens() {
  "$SIM" --config "$1" --format json | python3 -c "
import json, sys
print('%.1f' % json.load(sys.stdin)['tokens_per_s_per_gpu'])"
}
# table TITLE PREFIX BASE_MEASURED ROWS...: each row "variant measured".
table() {
  local title=$1 prefix=$2
  shift 2
  echo
  echo "$title"
  printf '%-11s %10s %10s %11s %11s\n' variant measured ppb "measured x" "ppb x"
  local base_m="" base_p=""
  while (($#)); do
    local variant=$1 measured=$2
    shift 2
    local p
    p=$(tokens "$V/$prefix-$variant.yaml")
    [ -z "$base_m" ] && base_m=$measured && base_p=$p
    awk -v v="$variant" -v m="$measured" -v p="$p" -v bm="$base_m" -v bp="$base_p" \
      'BEGIN { printf "%-11s %10.1f %10.1f %10.3fx %10.3fx\n", v, m, p, m / bm, p / bp }'
  done
}
table "torchtitan, Llama 3.1 8B on 8 H100 (FSDP 8, batch 2 x 8,192), tokens/s per GPU:" \
  tt-h100-llama3-8b bf16 6667 fp8 8532
table "torchtitan docs/mxfp8.md, Llama 3 8B on 8 B200 (FSDP2, batch 1 x 8,192), tokens/s per GPU:" \
  tt-b200-llama3-8b bf16 8307.5 mxfp8 9969.0 tensorwise 10417.0
