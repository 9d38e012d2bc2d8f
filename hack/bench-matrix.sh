#!/usr/bin/env bash
# The matrix's own cost at 10 … 5000 nodes: plan and orchestrate a whole run against a fake
# cluster whose agents answer at once (BenchmarkMatrixOrchestration), and write the table to
# benchmarks/MATRIX.md with the machine it ran on. No cluster needed.
#   hack/bench-matrix.sh [COUNT]     (runs per size, default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
out=benchmarks/MATRIX.md
raw=$(go test -run '^$' -bench BenchmarkMatrixOrchestration -benchtime "${count}x" ./pkg/plugin/)
{
  echo "# The matrix's cost in API calls, memory and time, by cluster size"
  echo
  echo "\`make bench-matrix\` ($(date -u +%Y-%m-%d), $(nproc) vCPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3)):"
  echo "a whole \`matrix\` run — list the nodes, plan, create the DaemonSet, watch its pods, post one job"
  echo "per pair, build the report, delete the DaemonSet — against a fake clientset of N nodes in 3 zones"
  echo "whose agents answer at once, so the time is the plugin's own. Mean of $count runs per row."
  echo "API calls count every request to the API server (lists, watch, create, delete, access"
  echo "reviews) and every job posted through the pod proxy; peak heap is the plugin's live heap at"
  echo "its highest during the run, above what was live before. \`--concurrency 100\`."
  echo
  echo "| scope | nodes | pairs | agents | API calls | API calls per pair | plan, ms | whole run, ms | peak heap, MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  echo "$raw" | awk '/^BenchmarkMatrixOrchestration\// {
    split($1, a, "/"); scope = a[2]; n = a[3]; sub(/nodes=/, "", n); sub(/-[0-9]+$/, "", n)
    for (i = 3; i < NF; i++) v[$(i+1)] = $i
    printf "| %s | %d | %d | %d | %d | %.2f | %.1f | %.1f | %.1f |\n", scope, n, v["pairs/run"], v["agents/run"], v["api-calls/run"],
      v["api-calls/run"] / v["pairs/run"], v["plan-ms/run"], v["ns/op"] / 1e6, v["peak-heap-MiB/run"]
  }'
  echo
  echo "\`--scope zones\` (3 pairs per cell) costs the same at any size: 9 cells × 3 pairs, agents only on"
  echo "the nodes those pairs use. \`--sample N\` and \`--scope nodes\` cost one call per pair plus a"
  echo "constant dozen; \`--scope nodes\` has N² − N pairs by definition and is bounded by \`--max-pairs\`."
  echo "\`TestMatrixAPICallsGrowLinearly\` fails if the calls per node grow from 10 to 1000 nodes."
} >"$out"
cat "$out"
