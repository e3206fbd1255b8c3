#!/usr/bin/env bash
# ppb's one entry point for people and CI on a Debian machine.
#   scripts/ppb.sh run    install what is missing, build, simulate configs/llama3-8b.yaml
#   scripts/ppb.sh test   install what is missing, build (warnings are errors), run every test
#   scripts/ppb.sh asan   the tests again under AddressSanitizer + UBSan
#   scripts/ppb.sh bench  Release build and the Google Benchmark figures
#   scripts/ppb.sh fuzz [SECONDS] [HARNESS...]
#                         clang + libFuzzer build (build-fuzz, ASan + UBSan),
#                         replay of the saved corpus, then each harness (all:
#                         tests/fuzz/corpus/*) fuzzed for SECONDS (default
#                         300); docs/fuzzing.md
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake make g++ libboost-graph-dev libboost-program-options-dev libfmt-dev
          libyaml-cpp-dev catch2 libbenchmark-dev nlohmann-json3-dev
          libopenmpi-dev openmpi-bin)
JOBS=${PPB_JOBS:-2}

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    echo "ppb: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$JOBS"
}

case "${1:-run}" in
  run)
    install_deps
    build build-release -DCMAKE_BUILD_TYPE=Release -DPPB_BUILD_TESTS=OFF -DPPB_BUILD_BENCH=OFF -DPPB_MPI=ON
    ./build-release/apps/ppb-sim --config configs/llama3-8b.yaml "${@:2}"
    ;;
  test)
    PACKAGES+=(pybind11-dev python3-dev python3-pytest)
    install_deps
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_WERROR=ON -DPPB_MPI=ON -DPPB_PYTHON=ON
    (cd build && ctest --output-on-failure -j"$JOBS")
    ;;
  asan)
    install_deps
    build build-asan -DCMAKE_BUILD_TYPE=Debug -DPPB_WERROR=ON -DPPB_SANITIZE=ON -DPPB_BUILD_BENCH=OFF
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --output-on-failure -j"$JOBS")
    ;;
  bench)
    install_deps
    build build-release -DCMAKE_BUILD_TYPE=Release -DPPB_BUILD_TESTS=OFF -DPPB_BUILD_BENCH=ON -DPPB_MPI=ON
    ./build-release/bench/ppb_bench "${@:2}"
    ;;
  fuzz)
    PACKAGES+=(clang)
    install_deps
    build build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DPPB_FUZZ=ON -DPPB_BUILD_TESTS=OFF \
      -DPPB_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
    (cd build-fuzz && ctest --output-on-failure -j"$JOBS")
    seconds=${2:-300}
    harnesses=("${@:3}")
    if ((${#harnesses[@]} == 0)); then
      for d in tests/fuzz/corpus/*/; do harnesses+=("$(basename "$d")"); done
    fi
    rm -rf build-fuzz/seeds
    tests/fuzz/seeds.sh build-fuzz/seeds
    failed=()
    summary=""
    for h in "${harnesses[@]}"; do
      mkdir -p "build-fuzz/corpus/$h" "build-fuzz/findings/$h"
      dict=()
      [ -f "tests/fuzz/dict/$h.dict" ] && dict=(-dict="tests/fuzz/dict/$h.dict")
      echo "ppb: fuzzing $h for ${seconds}s (new inputs: build-fuzz/corpus/$h)" >&2
      # One process (the machine is shared); 2 GiB and 10 s per input.
      if ./build-fuzz/tests/fuzz/fuzz_"$h" "build-fuzz/corpus/$h" "build-fuzz/seeds/$h" \
          "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
          -max_len=16384 -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$h/" \
          2> "build-fuzz/findings/$h.log"; then
        result=clean
      else
        result="FOUND (build-fuzz/findings/$h/, log build-fuzz/findings/$h.log)"
        failed+=("$h")
      fi
      execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/findings/$h.log")
      summary+=$(printf '%-14s %12s executions  %s' "$h" "${execs:-?}" "$result")$'\n'
    done
    printf '%s' "$summary"
    if ((${#failed[@]})); then
      tail -n 40 "build-fuzz/findings/${failed[0]}.log" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: scripts/ppb.sh run|test|asan|bench|fuzz [SECONDS] [HARNESS...]" >&2
    exit 2
    ;;
esac
