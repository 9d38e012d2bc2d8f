#!/usr/bin/env bash
# Static checks and short fuzz runs, each step named in the output:
#   go vet, gofmt -l, the size rule (hack/sizecheck), one version per shared module
#   (hack/samemodules.sh), staticcheck (built from its module, cached
#   under .cache/tools), ShellCheck on every script, go test -race on the packages without
#   sockets or root, and FUZZTIME (default 5s) of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK_VERSION=v0.8.2
# step names the step that begins, with how long the one before it took (the cold run's costs).
last=$SECONDS
step() { echo "== lint: $* (previous step: $((SECONDS - last)) s)"; last=$SECONDS; }

step "go vet (and with the test faults compiled in: build tag netbench_faults)"
go vet ./...
go vet -tags netbench_faults ./...

step "gofmt -l"
mapfile -t gofiles < <(git ls-files --cached --others --exclude-standard '*.go')
unformatted=$(gofmt -l "${gofiles[@]}")
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

step "size: no Go file over 400 lines, no function over 80 (hack/sizecheck)"
if ! go run ./hack/sizecheck; then
  echo "over the size limits: split it, or put a one-line reason at its top: '// size: <reason>'"
  echo "(before the package clause for a file, in the doc comment for a function)"; exit 1
fi

step "one version of each module the project and the lab's components share (hack/samemodules.sh)"
hack/samemodules.sh

step "staticcheck $STATICCHECK_VERSION"
sc=.cache/tools/staticcheck-$STATICCHECK_VERSION
[ -x "$sc/staticcheck" ] || GOBIN=$PWD/$sc go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
"$sc/staticcheck" ./...
"$sc/staticcheck" -tags netbench_faults ./...

step "shellcheck"
mapfile -t scripts < <(git ls-files --cached --others --exclude-standard '*.sh' .ci/run)
shellcheck -x -P SCRIPTDIR -P . "${scripts[@]}"

step "go test -race (packages without sockets or root)"
CGO_ENABLED=1 go test -count=1 -race ./internal/report/ ./internal/render/ ./pkg/api/v1alpha1/ ./internal/cmdutil/... ./internal/cmd/... ./internal/policyplan/ ./internal/session/ ./internal/gate/

# FUZZTIME (default 5s) of each target. A count budget (-fuzztime Nx) would count the seed and
# cached corpus too (Go 1.26), so a growing cache would leave nothing fuzzed. A time budget has
# Go 1.26's coordinator race (go.dev/issue/75804): a target that found nothing can fail with
# "context deadline exceeded" when a starved worker answers late, so a failure that wrote no
# failing input is retried, twice at most; one that wrote one fails the step.
FUZZTIME=${FUZZTIME:-5s}
fuzzlog=$(mktemp)
trap 'rm -f "$fuzzlog"' EXIT
step "fuzz, $FUZZTIME each"
for target in FuzzParseResolvConf:./internal/resolver FuzzReadJob:./internal/agent FuzzDecodeEvent:./internal/agent \
  FuzzCheckDNSName:./internal/dnsname FuzzDiff:./internal/cmd/diff FuzzDNSPayload:./internal/probes FuzzFoldLookups:./internal/probes \
  FuzzParseEvaluate:./internal/gate FuzzLoadRun:./internal/report FuzzWriteDiff:./internal/render FuzzOpenDatagram:./internal/probes; do
  name=${target%%:*} pkg=${target#*:}
  for try in 1 2 3; do
    if go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg" >"$fuzzlog" 2>&1; then cat "$fuzzlog"; break; fi
    if [ -d "$pkg/testdata/fuzz/$name" ] || [ "$try" = 3 ]; then
      cat "$fuzzlog"
      [ -d "$pkg/testdata/fuzz/$name" ] && echo "fuzz $name found a failing input: $pkg/testdata/fuzz/$name"
      echo "fuzz $name failed (try $try)"; exit 1
    fi
    # A retried try is not a test failure: its error line is shown, not its "--- FAIL" header.
    echo "fuzz $name: try $try ended with '$(grep -v -e '^--- FAIL' -e '^FAIL' -e '^exit status' -e '^fuzz: ' "$fuzzlog" | head -1 | sed 's/^ *//')' and no failing input (go.dev/issue/75804); trying again"
  done
done
step "passed"
