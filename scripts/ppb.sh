#!/usr/bin/env bash
# ppb's one entry point for people and CI on a Debian machine.
#   scripts/ppb.sh run    install what is missing, build, simulate configs/example.yaml
#   scripts/ppb.sh test   install what is missing, build (warnings are errors), run every test
#   scripts/ppb.sh asan   the tests again under AddressSanitizer + UBSan
#   scripts/ppb.sh bench  Release build and the Google Benchmark figures
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
    ./build-release/apps/ppb-sim --config configs/example.yaml "${@:2}"
    ;;
  test)
    install_deps
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_WERROR=ON -DPPB_MPI=ON
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
  *)
    echo "usage: scripts/ppb.sh run|test|asan|bench" >&2
    exit 2
    ;;
esac
