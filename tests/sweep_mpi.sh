#!/usr/bin/env bash
# The MPI sweep equals the single-process one (ctest entries sweep_mpi_np2
# and sweep_mpi_np3, with PPB_MPI=ON): the same rows (the file's order
# follows completion, so lines are compared sorted), the same summary, the
# same standard output without --output, and a run resumed under mpirun
# from a cut file completes it to the same rows.
# usage: tests/sweep_mpi.sh PPB_SIM MPIRUN NP DATA_DIR
set -euo pipefail
bin=$1 mpirun=$2 np=$3 data=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
args=(sweep --config "$data/base.yaml" --grid "$data/grid.yaml")
mpi=("$mpirun" --oversubscribe --allow-run-as-root -np "$np" "$bin")

"$bin" "${args[@]}" --threads 1 --output "$tmp/single.jsonl" >"$tmp/single.txt" 2>/dev/null
"${mpi[@]}" "${args[@]}" --output "$tmp/mpi.jsonl" >"$tmp/mpi.txt" 2>"$tmp/mpi.err"
sort "$tmp/single.jsonl" >"$tmp/a"
sort "$tmp/mpi.jsonl" >"$tmp/b"
cmp "$tmp/a" "$tmp/b"
cmp "$tmp/single.txt" "$tmp/mpi.txt"
test "$(wc -l <"$tmp/mpi.jsonl")" -eq 24

# Standard output (rows in point order) without --output.
"$bin" "${args[@]}" --threads 1 >"$tmp/single.out" 2>/dev/null
"${mpi[@]}" "${args[@]}" >"$tmp/mpi.out" 2>/dev/null
cmp "$tmp/single.out" "$tmp/mpi.out"

# Resumed under mpirun from the first 10 rows and half of the 11th.
head -n 10 "$tmp/mpi.jsonl" >"$tmp/cut.jsonl"
sed -n 11p "$tmp/mpi.jsonl" | head -c 40 >>"$tmp/cut.jsonl"
"${mpi[@]}" "${args[@]}" --output "$tmp/cut.jsonl" >"$tmp/cut.txt" 2>"$tmp/cut.err"
grep -q "the last line is not a complete row" "$tmp/cut.err"
grep -q "24/24 points done (10 from the results file)" "$tmp/cut.err"
sort "$tmp/cut.jsonl" >"$tmp/c"
cmp "$tmp/a" "$tmp/c"
cmp "$tmp/single.txt" "$tmp/cut.txt"
echo "sweep under mpirun -np $np equals the single process"
