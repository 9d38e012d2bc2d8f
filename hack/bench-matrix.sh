#!/usr/bin/env bash
# The matrix's own cost by cluster size: plan and orchestrate a whole run against a fake cluster
# whose agents answer at once (BenchmarkMatrixOrchestration), and write the table to
# benchmarks/MATRIX.md with the machine, versions, date and command line. Every number in it is
# measured or read from the benchmark's source. No cluster needed.
#   hack/bench-matrix.sh [COUNT]     (runs per size, default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
out=benchmarks/MATRIX.md
src=internal/cmd/matrix/bench_test.go
cmdline="hack/bench-matrix.sh${*:+ $*}" via=""
[ -n "${MAKELEVEL:-}" ] && via=" (by \`make bench-matrix\`)"
load0=$(cut -d' ' -f1 /proc/loadavg) # other work shares the cores: said in the file
# The fake cluster's zones and the run's --concurrency, as the benchmark sets them.
zones=$(sed -n 's/.*fakecluster\.NewFleet(n, \([0-9][0-9]*\)).*/\1/p' "$src" | head -1)
conc=$(sed -n 's/.*o\.Concurrency, o\.MaxPairs = sc\.scope, \([0-9][0-9]*\),.*/\1/p' "$src" | head -1)
if [ -z "$zones" ] || [ -z "$conc" ]; then
  echo "bench-matrix: cannot read the fake cluster's zones or the run's --concurrency from $src" >&2
  exit 1
fi
gotest=(go test -run '^$' -bench BenchmarkMatrixOrchestration -benchtime "${count}x" ./internal/cmd/matrix/)
raw=$("${gotest[@]}")
# rows: "scope nodes pairs agents calls plan-ms run-ms heap-MiB", one per benchmark.
rows=$(echo "$raw" | awk '/^BenchmarkMatrixOrchestration\// {
  split($1, a, "/"); scope = a[2]; n = a[3]; sub(/nodes=/, "", n); sub(/-[0-9]+$/, "", n)
  for (i = 3; i < NF; i++) v[$(i+1)] = $i
  print scope, n, v["pairs/run"] + 0, v["agents/run"] + 0, v["api-calls/run"] + 0, v["plan-ms/run"], v["ns/op"] / 1e6, v["peak-heap-MiB/run"]
}')
[ -n "$rows" ] || { echo "bench-matrix: no benchmark results in:"; echo "$raw"; exit 1; } >&2
load1=$(cut -d' ' -f1 /proc/loadavg)
{
  echo "# The matrix's cost in API calls, memory and time, by cluster size"
  echo
  echo "Written by \`$cmdline\`$via on $(date -u '+%Y-%m-%d %H:%M UTC'), which ran \`${gotest[*]}\`."
  echo
  echo "- Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r); load average $load0 when the run started, $load1 when it ended"
  echo "- Versions: $(go version | cut -d' ' -f3); kubectl-netbench from this tree ($(git describe --tags --always --dirty 2>/dev/null || echo 'no git'))"
  echo "- What runs: a whole \`matrix\` run — list the nodes, plan, create the DaemonSet, watch its pods, post one job"
  echo "  per pair, build the report, delete the DaemonSet — against a fake clientset of N nodes in $zones zones"
  echo "  whose agents answer at once, so the time is the plugin's own; \`--concurrency $conc\` (both as $src sets them)."
  echo "  Mean of $count runs per row. API calls count every request to the API server (lists, watch, create,"
  echo "  delete, access reviews) and every job posted through the pod proxy; peak heap is the plugin's live heap"
  echo "  at its highest during the run, above what was live before."
  echo
  echo "| scope | nodes | pairs | agents | API calls | API calls per pair | plan, ms | whole run, ms | peak heap, MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  echo "$rows" | awk '{printf "| %s | %d | %d | %d | %d | %.2f | %.1f | %.1f | %.1f |\n", $1, $2, $3, $4, $5, $5 / $3, $6, $7, $8}'
  echo
  echo "Per scope, over the sizes above (smallest–largest; one figure where every size gave the same):"
  echo
  echo "$rows" | awk '
    function span(lo, hi) { return lo == hi ? lo : lo "–" hi }
    !($1 in seen) { seen[$1] = 1; order[++k] = $1; plo[$1] = phi[$1] = $3; xlo[$1] = xhi[$1] = $5 - $3 }
    { if ($3 < plo[$1]) plo[$1] = $3; if ($3 > phi[$1]) phi[$1] = $3
      x = $5 - $3; if (x < xlo[$1]) xlo[$1] = x; if (x > xhi[$1]) xhi[$1] = x }
    END { for (i = 1; i <= k; i++) { s = order[i]
      printf "- `--scope %s`: %s pairs; API calls beyond one per pair: %s\n", s, span(plo[s], phi[s]), span(xlo[s], xhi[s]) } }'
  echo
  echo "\`--scope nodes\` has N² − N pairs by definition and is bounded by \`--max-pairs\`."
  echo "\`TestMatrixAPICallsGrowLinearly\` (internal/cmd/matrix) fails if the API calls per node grow with the cluster's size,"
  echo "or if \`--scope zones\` needs more calls in a larger cluster."
} >"$out"
cat "$out"
