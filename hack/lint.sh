#!/usr/bin/env bash
# Static checks and short fuzz runs, each step named in the output:
#   go vet, gofmt -l, the size rule (hack/sizecheck), one version per shared module
#   (hack/samemodules.sh), staticcheck (built from its module, cached
#   under .cache/tools), ShellCheck on every script, go test -race on the packages without
#   sockets or root, and FUZZTIME (default 10s) of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK_VERSION=v0.8.2
FUZZTIME=${FUZZTIME:-10s}
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

step "fuzz, $FUZZTIME each"
for target in FuzzParseResolvConf:./internal/resolver FuzzReadJob:./internal/agent FuzzDecodeEvent:./internal/agent \
  FuzzCheckDNSName:./internal/dnsname FuzzDiff:./internal/cmd/diff FuzzDNSPayload:./internal/probes FuzzFoldLookups:./internal/probes \
  FuzzParseEvaluate:./internal/gate FuzzLoadRun:./internal/report FuzzWriteDiff:./internal/render FuzzOpenDatagram:./internal/probes; do
  name=${target%%:*} pkg=${target#*:}
  # A failing input is written under testdata/fuzz and fails the step. A run that ends without
  # one ("context deadline exceeded" from a worker starved on a busy 2-core machine) is retried once.
  if ! go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg"; then
    if [ -d "$pkg/testdata/fuzz/$name" ]; then echo "fuzz $name found a failing input: $pkg/testdata/fuzz/$name"; exit 1; fi
    echo "fuzz $name: no failing input recorded; retrying once"
    go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg"
  fi
done
step "passed"
