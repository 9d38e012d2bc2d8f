#!/usr/bin/env bash
# The ladder's own overhead on the lab: wall time minus time measuring, for a ladder to the demo's
# shop-api with --probes rtt, run N times (default 5), one after the other. Writes OUT (default
# benchmarks/LADDER.md) — each run, the median against the goal, the machine, the versions, the
# date and this command line — and prints it. Every number in it is measured or set below.
#   hack/bench-ladder.sh [N [OUT]]     (root, lab up: make lab-up)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
out=${2:-benchmarks/LADDER.md}
goal=5 # s: the most the median overhead may be
cmdline="hack/bench-ladder.sh${*:+ $*}" via=""
[ -n "${MAKELEVEL:-}" ] && via=" (by \`make bench-ladder\`)"
load0=$(cut -d' ' -f1 /proc/loadavg) # other work shares the cores: said in the file
# shellcheck source=hack/lab-demo.sh
source hack/lab-demo.sh
ladder=(bin/kubectl-netbench ladder -n demo deploy/shop-api --probes rtt -o json)
lines=() overheads=()
for i in $(seq "$n"); do
  t=$("${ladder[@]}" |
    jq -r '[.timing.wallSeconds, .timing.measuringSeconds, .timing.overheadSeconds, ([.rungs[] | select(.skipped == null)] | length)] | @tsv')
  read -r wall measuring overhead rungs <<<"$t"
  echo "run $i: $rungs rungs, wall $wall s = measuring $measuring s + overhead $overhead s" >&2
  lines+=("| $i | $rungs | $wall | $measuring | $overhead |")
  overheads+=("$overhead")
done
median=$(printf '%s\n' "${overheads[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
met=$(awk -v m="$median" -v g="$goal" 'BEGIN {print (m <= g) ? "met" : "not met"}')
load1=$(cut -d' ' -f1 /proc/loadavg)
{
  echo "# The ladder's own overhead on the lab"
  echo
  echo "Written by \`$cmdline\`$via on $(date -u '+%Y-%m-%d %H:%M UTC')."
  echo
  echo "- Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r); the whole lab shares those cores; load average $load0 when the run started, $load1 when it ended"
  echo "- Versions: $(bin/kubectl-netbench version | paste -sd';' | sed 's/;/; /g')"
  echo "- Each run: \`kubectl netbench ${ladder[*]:1}\`, the $n runs one after the other on the lab as it was (its zone delay, if any, left as set); overhead is the report's own wall time minus its time measuring"
  echo
  echo "| run | rungs | wall, s | measuring, s | overhead, s |"
  echo "|---:|---:|---:|---:|---:|"
  printf '%s\n' "${lines[@]}"
  echo
  echo "Overhead median over the $n runs: $median s; goal: at most $goal s: $met."
} >"$out"
cat "$out"
