#!/usr/bin/env bash
# Builds the seed corpus of every fuzz harness under DEST/<harness>/: the
# saved corpus (tests/fuzz/corpus/<harness>, reproducers and hand seeds) plus
# the matching shipped and test inputs (configs/, tests/data/).
#   tests/fuzz/seeds.sh DEST
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:?usage: tests/fuzz/seeds.sh DEST}

seed() {  # seed HARNESS FILE...: copies the files that exist
  local h=$1
  shift
  mkdir -p "$dest/$h"
  local f
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$dest/$h/$(echo "$f" | tr '/' '_')"
  done
  return 0
}

for h in tests/fuzz/corpus/*/; do
  h=$(basename "$h")
  seed "$h" tests/fuzz/corpus/"$h"/*
done
seed config configs/*.yaml tests/data/configs/*.yaml
seed schedule_csv configs/*.csv tests/data/configs/*.csv
seed hf_config configs/hf/*.json tests/data/hf/*.json
seed sapp_layers configs/sapp/*.json tests/data/sapp/*.json
seed measurements tests/data/sapp/*.yaml
seed candidates tests/data/snapshots/inputs/candidates.yaml
seed plan configs/plan-llama3-8b.yaml configs/llama3-70b-fp8.yaml tests/data/plan/*.yaml
seed runs tests/data/step/runs*.yaml configs/guide/runs/runs.yaml
seed launch configs/megatron/*.sh configs/megatron/*.log tests/data/megatron/*.sh \
  tests/data/torchtitan/*.toml tests/data/torchtitan/main/*/config_registry.py \
  tests/data/mindformers/*.yaml
