#!/usr/bin/env bash
# Output snapshots: every subcommand of ppb-sim on the shipped configs.
#
#   scripts/snapshots.sh check  [PPB_SIM]   compare against tests/data/snapshots/
#   scripts/snapshots.sh update [PPB_SIM]   rewrite tests/data/snapshots/
#
# PPB_SIM defaults to build/apps/ppb-sim. Each case is one file under
# tests/data/snapshots/: the command line, its exit status, its stdout, its
# stderr and every file it wrote, each under a header line. Commands run in a
# scratch folder that links configs/ and data/ (tests/data), so every path in
# the output is relative and the same on every machine. Search and plan run under a
# node limit on one thread; the figures that depend on the clock
# (`solve_time_s`, the anytime profile's times, the gap sides' times, the
# plan's first answer and solve time) are masked, and so is a sweep's rate on stderr. `check` names the
# first snapshot that differs and its first differing line, and exits 1; a
# change to output is a deliberate `update`,
# reviewed in the commit that makes it.
#
# Cases run PPB_JOBS at a time (default 2), each in its own scratch folder;
# the snapshot files and the check's messages (in name order) do not depend
# on the order in which cases finish.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-check}
SIM=$(realpath "${2:-$ROOT/build/apps/ppb-sim}")
SNAP=$ROOT/tests/data/snapshots
case "$MODE" in check|update) ;; *) echo "usage: scripts/snapshots.sh check|update [PPB_SIM]" >&2; exit 2 ;; esac
[ -x "$SIM" ] || { echo "snapshots: no ppb-sim binary at $SIM" >&2; exit 2; }

JOBS=${PPB_JOBS:-2}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "snapshots: PPB_JOBS must be a positive integer; got $JOBS" >&2; exit 2; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
GOT=$WORK/got
mkdir -p "$GOT"

# case NAME ARGS...: queues a run of ppb-sim ARGS; run_case runs it.
NAMES=()
ARGS=()
case_() {
  NAMES+=("$1")
  shift
  ARGS+=("$(printf '%q ' "$@")")
}

# run_case I: runs case I in its own scratch folder, which links configs/
# and data/ (tests/data); files the command writes go to out/ and are
# appended to the snapshot in name order.
run_case() {
  local name=${NAMES[$1]}
  eval "set -- ${ARGS[$1]}"
  local dir=$WORK/case-$name
  local run=$dir/run
  mkdir -p "$run/out"
  ln -s "$ROOT/configs" "$run/configs"
  ln -s "$ROOT/tests/data" "$run/data"
  local rc=0
  (cd "$run" && "$SIM" "$@" >"$dir/stdout" 2>"$dir/stderr") || rc=$?
  {
    echo "### ppb-sim $*"
    echo "### exit $rc"
    echo "### stdout"
    cat "$dir/stdout"
    echo "### stderr"
    cat "$dir/stderr"
    local f
    for f in $(cd "$run/out" && find . -type f | LC_ALL=C sort); do
      echo "### file ${f#./}"
      cat "$run/out/$f"
    done
  } | sed -E -e 's/"solve_time_s": [-0-9.eE+]+/"solve_time_s": "<masked>"/' \
      -e 's/"time_s": [-0-9.eE+]+/"time_s": "<masked>"/' \
      -e 's/"first_answer_s": [-0-9.eE+]+/"first_answer_s": "<masked>"/' \
      -e 's/^(first answer after )[0-9.]+ s(; [0-9]+ improvement\(s\); solve time )[0-9.]+ s$/\1<masked> s\2<masked> s/' \
      -e 's/^(solve time )[0-9.]+ s$/\1<masked> s/' \
      -e 's/^(anytime: first strategy at )[0-9.]+ s/\1<masked> s/' \
      -e 's/(improvement\(s\), the last at )[0-9.]+ s/\1<masked> s/' \
      -e 's/^(gap sides: incumbent last improved at )[0-9.]+ s(.* at )[0-9.]+ s$/\1<masked> s\2<masked> s/' \
      -e 's/(nodes, [0-9]+ evaluations, )[0-9.]+ s([, ])/\1<masked> s\2/' \
      -e "s/\\(after [0-9.]+ s of the frameworks' deployable searches\\)/(after <masked> s of the frameworks' deployable searches)/" \
      -e 's/^(sweep: [0-9]+\/[0-9]+ points done \([0-9]+ from the results file\)), .*$/\1, <rate masked>/' \
      >"$GOT/$name.part"
  mv "$GOT/$name.part" "$GOT/$name"
  rm -rf "$dir"
}

# ---- simulate: text and JSON on every shipped config
for cfg in "$ROOT"/configs/*.yaml; do
  base=$(basename "$cfg" .yaml)
  case_ "simulate-$base.txt" --config "configs/$base.yaml"
  case_ "simulate-$base.json" --config "configs/$base.yaml" --format json
done
case_ simulate-example-interleaved.txt --config configs/example.yaml --schedule interleaved --virtual-stages 2
case_ simulate-example-gpipe.txt --config configs/example.yaml --schedule gpipe
case_ simulate-custom-csv.txt --config configs/custom.yaml --schedule-csv configs/custom-p2.csv
# the zero-bubble generation: V placement, split backward, overlapped F+B
case_ simulate-example-zbv.txt --config configs/example.yaml --schedule zbv-zero-bubble --virtual-stages 2
# the adaptive ones say which order they kept: 1F1B's as a fallback, a planned one
case_ simulate-example-zb1p.txt --config configs/example.yaml --schedule zb-1p
case_ simulate-llama3-8b-zb2p.json --config configs/llama3-8b.yaml --schedule zb-2p --format json
case_ simulate-example-dualpipev.json --config configs/example.yaml --schedule dualpipev \
  --virtual-stages 2 --format json
case_ dump-schedule-example-dualpipev.txt --config configs/example.yaml --schedule dualpipev \
  --virtual-stages 2 --dump-schedule out/schedule.csv
case_ emit-torchtitan-example-zbv.txt --config configs/example.yaml --schedule zbv-zero-bubble \
  --virtual-stages 2 --emit torchtitan
case_ emit-megatron-example-zbv.txt --config configs/example.yaml --schedule zbv-zero-bubble \
  --virtual-stages 2 --emit megatron

# ---- schedule dumps, critical paths, pictures, traces
for base in example interleaved heterogeneous tight-memory; do
  case_ "dump-schedule-$base.txt" --config "configs/$base.yaml" --dump-schedule out/schedule.csv
  case_ "critical-path-$base.txt" --config "configs/$base.yaml" --critical-path
done
case_ svg-report-example.txt --config configs/example.yaml --svg out/run.svg --report out/run.html
case_ svg-report-interleaved.txt --config configs/interleaved.yaml --svg out/run.svg --report out/run.html
case_ trace-example.txt --config configs/example.yaml --trace out/trace.json

# ---- framework output: every --emit form, text and JSON, and to a file
for base in example interleaved llama3-8b llama3-70b-fsdp; do
  for fw in megatron mindformers torchtitan torchtitan-0.2.2 deepspeed; do
    case_ "emit-$fw-$base.txt" --config "configs/$base.yaml" --emit "$fw"
  done
  case_ "emit-all-$base.json" --config "configs/$base.yaml" --format json \
    --emit megatron,mindformers,torchtitan,deepspeed
done
case_ emit-file-interleaved.txt --config configs/interleaved.yaml --emit megatron --emit-file out/emit.txt
# MoE (issue 44): the dispatcher, expert TP, combined 1F1B and balance flags.
case_ emit-megatron-deepseek-v3.txt --config configs/deepseek-v3.yaml --emit megatron
for fw in megatron torchtitan; do
  case_ "emit-$fw-gpt-oss-120b.txt" --config configs/gpt-oss-120b.yaml --emit "$fw"
done
# A hybrid model (issue 47): its split as --hybrid-layer-pattern's '|' segments.
case_ emit-megatron-mamba-800m.txt --config data/megatron/mamba_800m_8.yaml --stages 2 \
  --emit megatron

# ---- search under a node limit (and no time limit: a slow build, ASan,
# must give the same bytes), one thread
for base in example search-80l-p8 tight-memory interleaved heterogeneous; do
  case_ "search-$base.json" search --config "configs/$base.yaml" --node-limit 300 --time-limit 0 \
    --threads 1 --format json
done
case_ search-search-80l-p8-emit.json search --config configs/search-80l-p8.yaml --node-limit 300 \
  --time-limit 0 --threads 1 --format json --emit megatron,deepspeed
case_ search-example-closed.txt search --config configs/example.yaml --node-limit 100000 \
  --time-limit 0 --threads 1
# The step model: the search's objective is the whole step (tail included).
case_ search-megatron-145b-a100.txt search --config configs/megatron-145b-a100.yaml \
  --node-limit 300 --time-limit 0 --threads 1
case_ search-megatron-145b-uncertainty.json search --config configs/megatron-145b-a100.yaml \
  --node-limit 100 --time-limit 0 --threads 1 --uncertainty 10% --uncertainty-samples 16 \
  --format json
case_ search-example-multi.json search --config configs/example.yaml --node-limit 200 \
  --time-limit 0 --threads 1 --format json --schedules 1f1b,interleaved --virtual-stages-list 2,4

# ---- plan: every layout's search under a node limit, no time limit, one
# thread (the same bytes on every build)
case_ plan-llama3-8b.txt plan --config configs/plan-llama3-8b.yaml --node-limit 300 \
  --time-limit 0 --threads 1
case_ plan-llama3-8b.json plan --config configs/plan-llama3-8b.yaml --node-limit 300 \
  --time-limit 0 --threads 1 --format json --emit megatron
case_ plan-tiny-report.txt plan --config data/plan/tiny.yaml --threads 1 --report out/plan.html
# Low precision as a plan dimension (issue 42): FP8 recipes on H100 (mxfp8
# refused), BF16 / FP8 / MXFP8 / NVFP4 on a GB200 NVL72 rack.
case_ plan-llama3-70b-fp8.txt plan --config configs/llama3-70b-fp8.yaml --node-limit 100 \
  --time-limit 0 --threads 1
case_ plan-llama3-405b-gb200.txt plan --config configs/llama3-405b-gb200.yaml --node-limit 100 \
  --time-limit 0 --threads 1
# Offload as a plan dimension (issue 43): the host's share of 405B's optimizer.
case_ plan-llama3.1-405b-offload.txt plan --config configs/llama3.1-405b-offload.yaml \
  --node-limit 100 --time-limit 0 --threads 1
# EP and the MoE dispatcher as plan dimensions (issue 44).
case_ plan-gpt-oss-120b.txt plan --config configs/gpt-oss-120b.yaml --node-limit 100 \
  --time-limit 0 --threads 1
case_ plan-bad-input.txt plan --config configs/example.yaml
# The plan's top layouts on drawn machines (issue 45).
case_ plan-llama3-8b-uncertainty.txt plan --config configs/plan-llama3-8b.yaml --node-limit 100 \
  --time-limit 0 --threads 1 --uncertainty 10%

# ---- rank
case_ rank-example.txt rank --config configs/example.yaml --candidates data/snapshots/inputs/candidates.yaml
case_ rank-example.json rank --config configs/example.yaml --candidates data/snapshots/inputs/candidates.yaml --format json
# Ranking with its uncertainty (issue 45): 32 drawn machines, seed 1.
case_ rank-megatron-145b-uncertainty.txt rank --config configs/megatron-145b-a100.yaml \
  --candidates data/snapshots/inputs/candidates-145b.yaml --uncertainty 10%
case_ rank-megatron-145b-uncertainty.json rank --config configs/megatron-145b-a100.yaml \
  --candidates data/snapshots/inputs/candidates-145b.yaml --uncertainty 10% \
  --uncertainty-samples 8 --uncertainty-seed 3 --format json

# ---- compare: text, JSON, CSV
for fmt in text json csv; do
  case_ "compare-example.$fmt" compare --config configs/example.yaml --format "$fmt"
  case_ "compare-interleaved-vary.$fmt" compare --config configs/interleaved.yaml --format "$fmt" \
    --schedules 1f1b,interleaved --vary pipeline.virtual_stages=2,4 --vary cluster.link.bandwidth=x0.5,x1
done
# Low precision: the FP8 recipes compared (issue 42).
case_ compare-llama3-70b-fp8-recipes.txt compare --config configs/llama3-70b-fp8.yaml \
  --schedules interleaved --vary training.fp8.recipe=delayed,tensorwise,blockwise
# The step model: the GPU and the data-parallel size (m from the global batch at each point).
case_ compare-megatron-145b-vary.txt compare --config configs/megatron-145b-a100.yaml \
  --schedules 1f1b --vary hardware.gpu=a100-sxm4-80gb,h100-sxm --vary training.data_parallel=12,24
case_ compare-megatron-145b-uncertainty.txt compare --config configs/megatron-145b-a100.yaml \
  --schedules 1f1b,interleaved --vary training.micro_batch_size=1,2 --uncertainty 10%

# ---- model: every HF-derived shipped config
for cfg in "$ROOT"/configs/*.yaml; do
  base=$(basename "$cfg" .yaml)
  grep -qE "^ +(hf_config|architecture):" "$cfg" || continue
  case_ "model-$base.txt" model --config "configs/$base.yaml"
  case_ "model-$base.json" model --config "configs/$base.yaml" --format json
done
case_ model-example.txt model --config configs/example.yaml      # refused: layers, not an architecture

# ---- the user's guide (docs/guide.md): every command it shows, whose output
# tests/test_docs.cpp finds in the guide
G=configs/guide/llama3-70b.yaml
case_ guide-1-simulate.txt --config $G
case_ guide-1-critical-path.txt --config $G --critical-path
case_ guide-1-report.txt --config $G --report out/report.html
case_ guide-1-emit.txt --config $G --emit megatron
case_ guide-2-compare.txt compare --config $G --schedules 1f1b,interleaved,zb-2p,zbv-zero-bubble,zb-v
case_ guide-2-compare-v.txt compare --config $G --schedules interleaved \
  --vary pipeline.virtual_stages=2,4,5,10
case_ guide-2-search.txt search --config configs/guide/llama3-70b-fsdp.yaml --schedules zb-v --emit torchtitan \
  --node-limit 300 --time-limit 0 --threads 1
case_ guide-3-simulate.txt --config configs/guide/llama3-70b-oom.yaml
case_ guide-3-search.txt search --config configs/guide/llama3-70b-oom.yaml --target megatron \
  --emit megatron --node-limit 300 --time-limit 0 --threads 1
case_ guide-4-plan.txt plan --config configs/plan-llama3-8b.yaml --emit megatron \
  --node-limit 300 --time-limit 0 --threads 1
case_ guide-5-search.txt search --config configs/hetero-16.yaml --emit megatron \
  --node-limit 300 --time-limit 0 --threads 1
case_ guide-8-model.txt model --config configs/llama3-70b-fsdp.yaml
case_ guide-6-calibrate.txt calibrate --runs configs/guide/runs/runs.yaml
case_ guide-7-shard.txt sweep --config configs/llama3-8b.yaml --grid configs/sweep/models.yaml \
  --shard 1/2 --output out/study.1.jsonl --threads 1

# ---- calibrate: SAPP's measurement inputs
case_ calibrate-hp_init_demo.txt calibrate --measurements data/sapp/hp_init_demo.yaml --memory-unit 1MiB \
  --time-unit 1ms --no-constant --output out/layers.yaml
case_ calibrate-hp_init_demo.json calibrate --measurements data/sapp/hp_init_demo.yaml --memory-unit 1MiB \
  --time-unit 1ms --no-constant --format json
case_ calibrate-hp_init_demo-constant.txt calibrate --measurements data/sapp/hp_init_demo.yaml \
  --memory-unit 1MiB --time-unit 1ms    # accepted with a warning: negative per-stage constant (as SAPP)
case_ calibrate-hp_init_demo-no-unit.txt calibrate --measurements data/sapp/hp_init_demo.yaml   # refused
case_ calibrate-step-runs.txt calibrate --runs data/step/runs.yaml
case_ calibrate-mf_mem.txt calibrate --measurements data/sapp/mf_mem.yaml --memory-unit 1MiB --no-constant
case_ calibrate-mf_mem.json calibrate --measurements data/sapp/mf_mem.yaml --memory-unit 1MiB --no-constant \
  --format json

# ---- --from megatron (issue 47): Megatron-LM's launch and log as input
M=configs/megatron
case_ guide-10-from-megatron.txt --from megatron $M/train_llama3_8b_h100_fp8.sh --cluster $M/h100.yaml \
  --show-config
case_ from-megatron-simulate.txt --from megatron $M/train_llama3_8b_h100_fp8.sh \
  --cluster $M/h100.yaml
case_ from-megatron-log.json --from megatron $M/llama3_8b_h100_fp8.log --cluster $M/h100.yaml \
  --format json
case_ from-megatron-gpt3-world.txt --from megatron data/megatron/train_gpt3_175b_distributed.sh \
  --cluster $M/h100.yaml   # refused: TP 8 x PP 16 on the script's 8 GPUs
case_ from-megatron-gpt3-1024.txt model --from megatron data/megatron/train_gpt3_175b_distributed.sh \
  --cluster $M/h100.yaml --gpus 1024
case_ from-megatron-no-cluster.txt --from megatron $M/train_llama3_8b_h100_fp8.sh   # refused
case_ calibrate-megatron-log.txt calibrate --runs $M/runs-log.yaml

# ---- --from torchtitan (issue 47): torchtitan v0.2.2's job configs as input
T=data/torchtitan
case_ from-torchtitan-8b.txt --from torchtitan $T/llama3_8b.toml --cluster $M/h100.yaml --gpus 64
case_ from-torchtitan-pp-config.txt --from torchtitan $T/llama3_8b_pp.toml --cluster $M/h100.yaml \
  --show-config
case_ from-torchtitan-405b.json --from torchtitan $T/llama3_405b.toml --cluster $M/h100.yaml \
  --gpus 512 --format json
case_ from-torchtitan-no-gpus.txt --from torchtitan $T/llama3_70b.toml --cluster $M/h100.yaml   # refused
case_ from-torchtitan-main-405b-config.txt --from torchtitan \
  $T/main/llama3/config_registry.py:llama3_405b --cluster $M/h100.yaml --gpus 512 --show-config
case_ from-torchtitan-main-8b.txt search --from torchtitan $T/main/llama3/config_registry.py:llama3_8b \
  --cluster $M/h100.yaml --gpus 64 --node-limit 2000
case_ from-torchtitan-main-moe-config.txt --from torchtitan \
  $T/main/qwen3/config_registry.py:qwen3_moe_deepep --cluster $M/h100.yaml --gpus 8 --show-config
case_ from-torchtitan-main-gpt-oss.txt --from torchtitan \
  $T/main/gpt_oss/config_registry.py:gpt_oss_120b --cluster $M/h100.yaml --gpus 64
case_ from-torchtitan-llama4-scout.txt --from torchtitan $T/llama4_17bx16e.toml \
  --cluster $M/h100.yaml --gpus 64

# ---- --from mindformers (issue 47): MindFormers' own training YAMLs as input
F=data/mindformers
case_ from-mindformers-qwen3-32b.txt --from mindformers $F/pretrain_qwen3_32b_4k.yaml \
  --cluster $M/h100.yaml
case_ from-mindformers-70b-config.txt --from mindformers $F/finetune_llama3_1_70b.yaml \
  --cluster $M/h100.yaml --show-config
case_ from-mindformers-moe.json --from mindformers $F/pretrain_qwen3_30b_a3b_4k.yaml \
  --cluster $M/h100.yaml --format json
case_ from-mindformers-template.txt --from mindformers $F/llm_pretrain_dense_template.yaml \
  --cluster $M/h100.yaml   # refused: pretrained_model_dir is a placeholder
case_ from-mindformers-qwen2.5-search.txt search --from mindformers $F/finetune_qwen2_5_7b_8k.yaml \
  --cluster $M/h100.yaml --node-limit 2000

# ---- sweep: the rows in point order (two threads), the summary and the file
# (one thread: the file's order follows completion), a bad grid
case_ sweep-models.jsonl sweep --config configs/llama3-8b.yaml --grid configs/sweep/models.yaml \
  --threads 2
case_ sweep-models.csv sweep --config configs/llama3-8b.yaml --grid configs/sweep/models.yaml \
  --threads 2 --format csv
case_ sweep-models-output.txt sweep --config configs/llama3-8b.yaml \
  --grid configs/sweep/models.yaml --threads 1 --output out/study.jsonl
case_ sweep-bad-grid.txt sweep --config configs/example.yaml --grid data/sweep/bad-grid.yaml

# ---- bad input: the messages are output too
case_ error-missing-config.txt --config configs/does-not-exist.yaml
case_ error-bad-schedule.txt --config configs/example.yaml --schedule zigzag
case_ error-bad-flag.txt search --config configs/example.yaml --time-limit soon

# ---- run the queued cases, JOBS at a time: the searches first (they run to
# a node limit and take most of the time; measured: the two search-80l-p8
# cases about 85% of it, every other case under 2%), so that no worker is
# left with a long case at the end; then the rest, each group in the order
# queued.
dups=$(printf '%s\n' "${NAMES[@]}" | sort | uniq -d)
[ -z "$dups" ] || { echo "snapshots: case names used twice: $dups" >&2; exit 2; }
order=()
for i in "${!NAMES[@]}"; do [[ "${ARGS[$i]}" != search\ * ]] || order+=("$i"); done
for i in "${!NAMES[@]}"; do [[ "${ARGS[$i]}" == search\ * ]] || order+=("$i"); done
running=0
for i in "${order[@]}"; do
  if ((running >= JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_case "$i" &
  running=$((running + 1))
done
wait
for name in "${NAMES[@]}"; do
  [ -f "$GOT/$name" ] || { echo "snapshots: case $name did not complete" >&2; exit 2; }
done

if [ "$MODE" = update ]; then
  mkdir -p "$SNAP"
  find "$SNAP" -maxdepth 1 -type f -delete
  cp "$GOT"/* "$SNAP"/
  echo "snapshots: wrote $(ls "$GOT" | wc -l) files to tests/data/snapshots/"
  exit 0
fi

status=0
for f in "$GOT"/*; do
  name=$(basename "$f")
  want=$SNAP/$name
  if [ ! -f "$want" ]; then
    echo "snapshot tests/data/snapshots/$name: missing (run scripts/snapshots.sh update)"
    status=1
    continue
  fi
  if ! cmp -s "$want" "$f"; then
    line=$(cmp "$want" "$f" 2>/dev/null | sed -nE 's/.*line ([0-9]+).*/\1/p' || true)
    [ -n "$line" ] || line=$(($(wc -l <"$want") + 1))
    echo "snapshot tests/data/snapshots/$name: differs first at line $line"
    echo "  expected: $(sed -n "${line}p" "$want" | cut -c1-200)"
    echo "  got:      $(sed -n "${line}p" "$f" | cut -c1-200)"
    status=1
  fi
done
for want in "$SNAP"/*; do
  [ -f "$want" ] || continue
  name=$(basename "$want")
  if [ ! -f "$GOT/$name" ]; then
    echo "snapshot tests/data/snapshots/$name: no longer produced"
    status=1
  fi
done
[ $status -eq 0 ] && echo "snapshots: $(ls "$GOT" | wc -l) match"
exit $status
