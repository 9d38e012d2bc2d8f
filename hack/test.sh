#!/usr/bin/env bash
# Runs every Go test and ends with one summary line: "N passed, N failed, N skipped".
# Tests that need root (network namespaces) skip with their reason when not run as root, and the
# end-to-end tests skip when no lab cluster is up. PKGS selects packages (default ./...); on the
# default set the mutation runs (hack/mutations.sh) follow, unless NETBENCH_NO_MUTATIONS is set.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The end-to-end package takes ~12 min on a 2-core machine: past go test's default of 10 min per
# package. A -timeout given as an argument comes later and wins.
# By default the end-to-end package runs after the others, alone: its timing comparisons (the
# agent beside curl, the real glibc beside the race check) then share the two cores with nothing
# but the lab. Within it, the tests that time nothing and switch nothing of the lab (beside() in
# test/e2e) run after the others, NETBENCH_E2E_PARALLEL of them at once (default 8: they mostly wait for the lab).
parallel=(-parallel "${NETBENCH_E2E_PARALLEL:-8}")
run() {
  go test -count=1 -v -timeout 45m "$@" 2>&1 | tee -a "$log" | grep -vE '^=== (RUN|PAUSE|CONT)'
  return "${PIPESTATUS[0]}"
}
rc=0
# times: each part's wall time, printed before the summary line.
t0=$SECONDS times=""
took() { times+="${times:+, }$1 $((SECONDS - t0)) s"; t0=$SECONDS; }
if [ -n "${PKGS:-}" ]; then
  # shellcheck disable=SC2086 # PKGS is a list of packages
  run "${parallel[@]}" "$@" $PKGS || rc=$?
else
  mapfile -t pkgs < <(go list ./... | grep -v '/test/e2e$')
  run "$@" "${pkgs[@]}" || rc=$?
  took "unit"
  run "${parallel[@]}" "$@" ./test/e2e || rc=$?
  took "end-to-end"
fi
passed=$(grep -cE '^\s*--- PASS' "$log")
failed=$(grep -cE '^\s*--- FAIL' "$log")
skipped=$(grep -cE '^\s*--- SKIP' "$log")
# The mutation runs (hack/mutations.sh): each fidelity test must fail with its defect injected.
# Run after everything else, and only on the default package set.
mutations=""
if [ -z "${PKGS:-}" ] && [ -z "${NETBENCH_NO_MUTATIONS:-}" ] && [ "$rc" != 0 ]; then
  echo "mutation runs not made: tests failed without any fault"
elif [ -z "${PKGS:-}" ] && [ -z "${NETBENCH_NO_MUTATIONS:-}" ]; then
  mrc=0
  NETBENCH_MUTATION_BASELINE=$log hack/mutations.sh | tee "$log.m" || mrc=${PIPESTATUS[0]}
  case $mrc in
    0) ;;
    3) if [ "${NETBENCH_E2E_REQUIRE_LAB:-}" = 1 ]; then
         echo "the mutation runs need the lab (NETBENCH_E2E_REQUIRE_LAB=1)"; rc=1; failed=$((failed + 1))
       else
         skipped=$((skipped + 1))
       fi ;;
    *) rc=1
       missed=$(sed -n 's/^mutations: [0-9]* caught, \([0-9]*\) missed$/\1/p' "$log.m" | tail -1)
       failed=$((failed + ${missed:-1})) ;;
  esac
  mutations=$(grep -E '^mutations: ' "$log.m" | tail -1)
  rm -f "$log.m"
  took "mutation runs"
fi
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
  failed=1 # a build failure or a panic outside any test
  grep -E 'FAIL|cannot|undefined|panic' "$log" | head -20
fi
# The failing tests' own lines again, last: a long log's tail then still says why. go test -v
# streams a test's lines under "=== RUN/CONT/NAME <test>" headers as they are logged.
if grep -qE '^ *--- FAIL' "$log"; then
  echo "failing tests, with their lines (each cut at 60):"
  awk '
    FNR == NR { if (match($0, /^ *--- FAIL: [^ ]+/)) { f = substr($0, RSTART, RLENGTH); sub(/^ *--- FAIL: /, "", f); failed[f] = 1 } next }
    /^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
    /^(--- |PASS|FAIL|ok  )/ { cur = "" }
    /^ *--- (PASS|SKIP)/ { cur = ""; next }
    /^ *--- FAIL/ { print; cur = $3; next }
    cur in failed && /^ / && n[cur]++ < 60 { print "  " cur ": " substr($0, 5) }
  ' "$log" "$log" | head -400
fi
[ -n "$times" ] && echo "times: $times"
echo "$passed passed, $failed failed, $skipped skipped${mutations:+; $mutations}"
exit "$rc"
