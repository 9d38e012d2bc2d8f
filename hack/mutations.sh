#!/usr/bin/env bash
# Mutation runs: each fidelity test is run with the defect it exists to catch injected
# (internal/fault, build tag netbench_faults) and must fail on its comparison with the reference,
# with the failure that comparison prints. Run by `make test` after the other tests (root, lab
# up); `make test-mutations` alone.
#
# A row counts only if its test passed without the fault: in the log of the run before
# (NETBENCH_MUTATION_BASELINE, which hack/test.sh passes), or else in a run made here first.
#
# The lab's agent image (ghcr.io/kubectl-netbench/agent:dev) is replaced by one built with the
# faults compiled in for the runs, and the lab's own is imported again afterwards, whatever
# happens. A faulted agent behaves as the released one unless NETBENCH_FAULTS is set in its
# container, which only a plugin built with the tag, or the e2e tests' own pods in such a
# build, do.
set -euo pipefail
cd "$(dirname "$0")/.."

# fault | package | test (or test/subtest: only that part runs) | what the failing comparison says
mutations=(
  "http-extra-rtt|./test/e2e|TestHTTPNewConnMatchesCurl|on the same path: more than 10 % apart"
  "udp-dwell-kept|./test/e2e|TestUDPProbeLossAndRTT/rtt-beside-ping|from ping's at the same rate (median"
  "loss-one-way|./test/e2e|TestUDPProbeLossAndRTT/loss-each-way|datagrams lost, want"
  "rtt-halved|./test/e2e|TestZoneDelayOrdersRTT|is below twice the one-way delay"
  "rtt-halved|./test/e2e|TestLadderZoneDelay|cross-zone ≥ same-zone + 3 ms"
  "rtt-halved|./test/e2e|TestMatrixZoneDelay|the configured delay"
  "rtt-wakeup|./test/e2e|TestLadderZoneDelay|on the same pair: more than 5 % + 150 µs apart"
  "rtt-wakeup|./test/e2e|TestMatrixZoneDelay|on the same pod path: more than 5 % + 150 µs outside"
  "zone-hints-ignored|./test/e2e|TestDNSReplicasByZone|with PreferSameZone: the report's cross-zone share is 0.5"
  "observe-no-tcp|./test/e2e|TestDNSTruncatedAnswerOverTCP|TCP connections over the same window, 2 queries each"
  "observe-udp-twice|./test/e2e|TestDNSObserveMatchesPacketCapture/A_and_AAAA|NXDOMAIN, the capture"
  "pmtu-off-by-one|./test/e2e|TestPathMTUThroughANarrowNode|path MTU 1401, want 1400"
  "race-separate|./test/e2e|TestDNSRaceCheck|about half waiting out"
  "pod-limit-ignored|./test/e2e|TestPathMarksCPULimitedProbes|on the limited pod: exit 0, want 3"
  "traffic-own-counted|./test/e2e|TestPathShowsCompetingTraffic|besides the agents' on the client pod's interface"
  "dataplane-vs-dst|./test/e2e|TestLadderServiceCostsWithZoneDelay/zoned-close|of the same-node rung's and not below"
  "entry-connect-to-answer|./test/e2e|TestNodePortWayIn|more than 5 % + 150 µs outside ping's"
  "entry-extra-hop-without-baseline|./test/e2e|TestNodePortWayIn|more than 5 % + 150 µs outside ping's"
  "entry-node-from-answerer|./test/e2e|TestLoadBalancerWayIn|extra-hop: not measured in this run"
  "entry-extra-hop-without-baseline|./test/e2e|TestLoadBalancerWayIn|more than 5 % + 150 µs outside ping's"
  "way-in-entry-ignored|./test/e2e|TestPathWayIn|more than 5 % + 150 µs outside ping's"
  "throughput-inflated|./test/e2e|TestPathBothFamilies/throughput|its interface received"
  "throughput-inflated|./internal/agent|TestThroughputThroughASlowLink|through a 20 Mbit/s link"
  "throughput-inflated|./test/e2e|TestPathToAnOutsideAgent|its host's interface received"
  "crr-from-connect|./test/e2e|TestTCPCRRThroughTheZoneDelay|below the delay line's two round trips"
  "loaded-after-load|./test/e2e|TestLatencyUnderLoadOnABottleneck|not ten times fq_codel's"
  "rate-sample-dropped|./internal/probes|TestRateProbesOnLoopback|Little's law says"
  "load-rate-inflated|./internal/probes|TestDNSLoadFindsTheKnee|want the knee of a 1,000 q/s server"
  "ndots-off-by-one|./internal/resolver|TestModelMatchesRealResolvers|(-model +wire)"
  "latency-from-buckets|./internal/probes|TestRequestPercentilesAreObserved|from the server's median answer time"
  "egress-connect-with-lookup|./test/e2e|TestPathToAnOutsideHostBesideCurl|https connect: more than 10 % below or 10 % above curl's"
  "egress-connect-with-lookup|./test/e2e|TestLadderEgress|more than 5 % + 150 µs outside ping's"
  "egress-grpc-no-reuse|./test/e2e|TestPathToAnOutsideGRPCServer|answer on a reused connection: path p50"
  "rtt-wakeup|./test/e2e|TestPathPingsAnOutsideHost|on the same path: more than 5 % + 150 µs outside"
  "egress-download-over-limit|./test/e2e|TestPathDownloadsBesideCurl|on the same path: more than 25 % outside"
)

lab=hack/lab/lab.sh
images=${LAB_CACHE:-.cache/lab}/images
# Exit 3: the runs could not be made (not root, or no lab); hack/test.sh counts that as a skip,
# or as a failure under NETBENCH_E2E_REQUIRE_LAB=1.
if [ "$(id -u)" != 0 ]; then
  echo "mutation runs skipped: they need root (the lab's images are replaced for them)"
  exit 3
fi
if ! "$lab" status >/dev/null 2>&1 || [ ! -f "$images/agent.tar" ]; then
  echo "mutation runs skipped: the lab is not up (hack/lab/lab.sh up)"
  exit 3
fi

faulted=$(mktemp -d)
restore() {
  local rc=$?
  if ! "$lab" import "$images/agent.tar" >/dev/null 2>&1; then
    echo "mutations: the lab's own agent image could not be imported again: run hack/lab/lab.sh images" >&2
    rc=1
  fi
  rm -rf "$faulted"
  exit "$rc"
}
trap restore EXIT

echo "== mutation runs: the fault switch itself, with and without the tag"
go test -count=1 ./internal/fault
go test -count=1 -tags netbench_faults ./internal/fault

# The end-to-end tests delete their namespaces without waiting: the timing comparisons below
# start once the last of them is gone (its pods too), not while it is torn down.
kubectl=${LAB_CACHE:-.cache/lab}/bin/kubectl
for _ in $(seq 120); do
  left=$("$kubectl" --kubeconfig "$("$lab" kubeconfig)" get namespaces -o name | grep -c '^namespace/e2e-' || true)
  [ "$left" = 0 ] && break
  sleep 1
done
[ "$left" = 0 ] || echo "mutations: $left end-to-end namespaces still terminating after 120 s"

echo "== mutation runs: the agent image with faults compiled in"
VERSION=dev GOFLAGS=-tags=netbench_faults EXTRA_TAGS=ghcr.io/kubectl-netbench/agent:dev \
  hack/agent-image.sh "$faulted/agent.tar" >/dev/null
"$lab" import "$faulted/agent.tar"

# Built once with the faults compiled in, not once per row (a link of the plugin or of a test
# binary takes 5-10 s on a 2-core machine): the plugin the end-to-end tests run
# (NETBENCH_E2E_PLUGIN), and each package's test binary.
echo "== mutation runs: the plugin and the test binaries with faults compiled in"
go build -tags netbench_faults -o "$faulted/kubectl-netbench" ./cmd/kubectl-netbench
testbin() { echo "$faulted/$(tr '/.' '__' <<<"$1").test"; }
for pkg in $(printf '%s\n' "${mutations[@]}" | cut -d'|' -f2 | sort -u); do
  go test -c -tags netbench_faults -o "$(testbin "$pkg")" "$pkg"
done

# anchored TEST[/SUB]: the -run pattern matching exactly that test (go test splits it at "/").
anchored() {
  local top=${1%%/*}
  if [ "$top" = "$1" ]; then echo "^$1\$"; else echo "^$top\$/^${1#*/}\$"; fi
}

# passed TEST PKG: the test passed without any fault, in the baseline log or in a run now.
passed() {
  if [ -n "${NETBENCH_MUTATION_BASELINE:-}" ]; then
    grep -qE -- "^ *--- PASS: $1 " "$NETBENCH_MUTATION_BASELINE"
  else
    local out
    out=$(go test -count=1 -v -run "$(anchored "$1")" "$2" 2>&1 || true)
    grep -qE -- "^ *--- PASS: $1 " <<<"$out"
  fi
}

caught=0 missed=0
for m in "${mutations[@]}"; do
  IFS='|' read -r name pkg test want <<<"$m"
  # NETBENCH_MUTATIONS_ONLY: a regular expression of faults or tests, to run some rows alone.
  if [ -n "${NETBENCH_MUTATIONS_ONLY:-}" ] && ! grep -qE -- "$NETBENCH_MUTATIONS_ONLY" <<<"$name $test"; then
    continue
  fi
  if ! passed "$test" "$pkg"; then
    missed=$((missed + 1))
    echo "MISSED: $name: $test did not pass without the fault, so its failure with it proves nothing"
    continue
  fi
  start=$SECONDS
  # With what go test gives a test binary: the package's directory, go test's default timeout
  # (10m), and a test that calls os.Exit(0) failing (paniconexit0); verbose.
  out=$(cd "$pkg" && NETBENCH_FAULTS=$name NETBENCH_E2E_PLUGIN=$faulted/kubectl-netbench \
    "$(testbin "$pkg")" -test.paniconexit0 -test.count=1 -test.v -test.timeout=10m -test.run "$(anchored "$test")" 2>&1) && rc=0 || rc=$?
  line=$(grep -F -m1 -- "$want" <<<"$out" || true)
  if [ "$rc" != 0 ] && grep -q -- "--- FAIL: $test " <<<"$out" && [ -n "$line" ]; then
    caught=$((caught + 1))
    echo "caught: $name by $test ($((SECONDS - start)) s):"
    echo "    ${line#"${line%%[![:space:]]*}"}"
  else
    missed=$((missed + 1))
    echo "MISSED: $name: $test did not fail with \"$want\" (exit $rc):"
    tail -40 <<<"$out" | sed 's/^/    /'
  fi
done
echo "mutations: $caught caught, $missed missed"
[ "$missed" = 0 ]
