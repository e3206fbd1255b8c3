#!/usr/bin/env bash
# The plan under mpirun gives the single process's answer (ctest entries
# plan_mpi_np2 and plan_mpi_np3, with PPB_MPI=ON), on plans closed without a
# time limit (closed, or stopped at a node limit, which is deterministic):
# the same best layout, split and figures, the same proof or the same bound
# and gap, the same "your config". What was pruned or searched (and so the
# rest of the top list) depends on when each process learned the others'
# incumbents, so it is not compared.
# usage: tests/plan_mpi.sh PPB_SIM MPIRUN NP SOURCE_DIR
set -euo pipefail
bin=$1 mpirun=$2 np=$3 src=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi=("$mpirun" --oversubscribe --allow-run-as-root -np "$np" "$bin")
strip() {
  if [ "$2" = text ]; then
    grep -e '^   \*' -e '^proved optimal' -e '^not proved' -e '^your config' \
      -e "^best layout's split" -e '^where the best step goes' "$1"
  else
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]));
print(json.dumps({k: j[k] for k in ["best", "proved_optimal", "gap", "lower_bound_ns",
      "stop_reason", "your_config"]}, sort_keys=True))' "$1"
  fi
}
n=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  read -r -a args <<<"$line"
  for format in text json; do
    n=$((n + 1))
    "$bin" plan "${args[@]}" --threads 1 --time-limit 0 --format "$format" \
      >"$tmp/single.$n" 2>/dev/null </dev/null
    "${mpi[@]}" plan "${args[@]}" --threads 1 --time-limit 0 --format "$format" \
      >"$tmp/mpi.$n" 2>"$tmp/mpi.err.$n" </dev/null
    diff <(strip "$tmp/single.$n" "$format") <(strip "$tmp/mpi.$n" "$format")
    [ -n "$(strip "$tmp/single.$n" "$format")" ]
    if [ "$format" = text ]; then
      grep -q "layouts shared by $np MPI processes" "$tmp/mpi.$n"
      grep -q -e "^proved optimal" -e "^not proved" "$tmp/mpi.$n"
    else
      grep -q "\"processes\": $np" "$tmp/mpi.$n"
    fi
  done
done <<EOT
--config $src/tests/data/plan/tiny.yaml
--config $src/configs/plan-llama3-8b.yaml --node-limit 300
EOT
echo "plan under mpirun -np $np equals the single process ($n reports)"
