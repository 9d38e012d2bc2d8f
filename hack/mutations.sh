#!/usr/bin/env bash
# Mutation runs: each fidelity test is run with the defect it exists to catch injected
# (internal/fault, build tag netbench_faults) and must fail on it, with the failure it names.
# Run by `make test` after the other tests (root, lab up); `make test-mutations` alone.
#
# The lab's agent image (ghcr.io/kubectl-netbench/agent:dev) is replaced by one built with the
# faults compiled in for the runs, and the lab's own is imported again afterwards, whatever
# happens. A faulted agent behaves as the released one unless NETBENCH_FAULTS is set in its
# container, which only a plugin built with the tag does.
set -euo pipefail
cd "$(dirname "$0")/.."

# fault | test (in ./test/e2e) | what its failure must say
mutations=(
  "http-unstaggered|TestHTTPNewConnMatchesCurl|http-new-conn p50"
  "udp-dwell-kept|TestUDPProbeLossAndRTT|from ping's at the same rate"
  "loss-one-way|TestUDPProbeLossAndRTT|datagrams lost, want"
  "rtt-halved|TestZoneDelayOrdersRTT|below twice the one-way delay"
  "zone-hints-ignored|TestDNSReplicasByZone|with PreferSameZone"
  "observe-no-tcp|TestDNSTruncatedAnswerOverTCP|want per lookup 10 queries"
  "observe-udp-twice|TestDNSObserveMatchesPacketCapture|over the same window"
  "pmtu-off-by-one|TestPathMTUThroughANarrowNode|into lab-b1: path MTU"
  "race-separate|TestDNSRaceCheck|about half waiting out"
  "rtt-halved|TestLadderZoneDelay|cross-zone ≥ same-zone + 3 ms"
  "rtt-halved|TestMatrixZoneDelay|the configured delay"
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
  "$lab" import "$images/agent.tar" >/dev/null 2>&1 || echo "mutations: could not import the lab's agent image again: run hack/lab/lab.sh images" >&2
  rm -rf "$faulted"
}
trap restore EXIT

echo "== mutation runs: the agent image with faults compiled in"
VERSION=dev GOFLAGS=-tags=netbench_faults EXTRA_TAGS=ghcr.io/kubectl-netbench/agent:dev \
  hack/agent-image.sh "$faulted/agent.tar" >/dev/null
"$lab" import "$faulted/agent.tar"

caught=0 missed=0
for m in "${mutations[@]}"; do
  IFS='|' read -r name test want <<<"$m"
  out=$(NETBENCH_FAULTS=$name go test -tags netbench_faults -count=1 -v -run "^$test\$" ./test/e2e 2>&1) && rc=0 || rc=$?
  line=$(grep -F -m1 -- "$want" <<<"$out" || true)
  if [ "$rc" != 0 ] && grep -q -- "--- FAIL: $test " <<<"$out" && [ -n "$line" ]; then
    caught=$((caught + 1))
    echo "caught: $name by $test:"
    echo "    ${line#"${line%%[![:space:]]*}"}"
  else
    missed=$((missed + 1))
    echo "MISSED: $name: $test did not fail with \"$want\" (exit $rc):"
    tail -40 <<<"$out" | sed 's/^/    /'
  fi
done
echo "mutations: $caught caught, $missed missed"
[ "$missed" = 0 ]
