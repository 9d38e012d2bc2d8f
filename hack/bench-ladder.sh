#!/usr/bin/env bash
# The ladder's own overhead on the lab: wall time minus time measuring, for a three-rung ladder
# (same node, same zone, cross zone) run N times (default 5). Prints each run and the median.
#   hack/bench-ladder.sh [N]     (root, lab up: make lab-up)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
# shellcheck source=hack/lab-demo.sh
source hack/lab-demo.sh
overheads=()
for i in $(seq "$n"); do
  t=$(bin/kubectl-netbench ladder -n demo deploy/shop-api --probes rtt -o json |
    jq -r '[.timing.wallSeconds, .timing.measuringSeconds, .timing.overheadSeconds, ([.rungs[] | select(.skipped == null)] | length)] | @tsv')
  read -r wall measuring overhead rungs <<<"$t"
  echo "run $i: $rungs rungs, wall $wall s = measuring $measuring s + overhead $overhead s"
  overheads+=("$overhead")
done
median=$(printf '%s\n' "${overheads[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
echo "overhead median $median s over $n runs ($(nproc) cores; goal: at most 5 s for three rungs)"
