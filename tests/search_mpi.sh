#!/usr/bin/env bash
# The search under mpirun equals the single process (ctest entries
# search_mpi_np2 and search_mpi_np3, with PPB_MPI=ON): the same report,
# text and JSON, but for the search's own figures (nodes, evaluations,
# seconds, processes) — on a placement search (units: device-order
# prefixes), a search over several schedule choices (units: the choices)
# and one where nothing fits (the least capacity, found after the merge).
# usage: tests/search_mpi.sh PPB_SIM MPIRUN NP SOURCE_DIR
set -euo pipefail
bin=$1 mpirun=$2 np=$3 src=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi=("$mpirun" --oversubscribe --allow-run-as-root -np "$np" "$bin")
# The figures that depend on how the work was shared, and the anytime
# profile (when each process improved its best: clock times, and which
# improvements a process saw depends on what it was granted).
strip() {
  sed -e '/^  "anytime": \[/,/^  \],\{0,1\}$/d' "$1" |
    grep -v -e '^search: [0-9]* nodes' -e '^placement: [0-9]* device orders' \
      -e '^anytime: ' -e '^gap sides: ' \
      -e '"nodes":' -e '"evaluations":' -e '"solve_time_s":' -e '"processes":' \
      -e '"placements_searched":' -e '"placement_nodes":'
}
n=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  read -r -a args <<<"$line"
  for format in text json; do
    n=$((n + 1))
    "$bin" search "${args[@]}" --threads 1 --time-limit 0 --format "$format" \
      >"$tmp/single.$n" 2>/dev/null </dev/null
    "${mpi[@]}" search "${args[@]}" --threads 1 --time-limit 0 --format "$format" \
      >"$tmp/mpi.$n" 2>"$tmp/mpi.err.$n" </dev/null
    diff <(strip "$tmp/single.$n") <(strip "$tmp/mpi.$n")
    if [ "$format" = text ]; then
      grep -q "shared by $np MPI processes" "$tmp/mpi.$n"
    else
      grep -q "\"processes\": $np" "$tmp/mpi.$n"
    fi
  done
done <<EOT
--config $src/tests/data/configs/hetero-4.yaml
--config $src/configs/example.yaml --schedules 1f1b,gpipe,interleaved --virtual-stages-list 1,2
--config $src/tests/data/search_mpi/nofit.yaml --schedules 1f1b,gpipe
EOT
grep -q "PROVED OPTIMAL" "$tmp/mpi.1"
grep -q "smallest per-device memory at which one fits: 4.26 GiB" "$tmp/mpi.5"
echo "search under mpirun -np $np equals the single process ($n reports)"
