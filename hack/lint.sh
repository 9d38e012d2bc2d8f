#!/usr/bin/env bash
# Static checks and short fuzz runs, each step named in the output:
#   go vet, gofmt -l, the size rule (hack/sizecheck), one version per shared module
#   (hack/samemodules.sh), staticcheck (built from its module, cached
#   under .cache/tools), ShellCheck on every script, go test -race on the packages without
#   sockets or root, and a short fuzz run of every fuzz target (FUZZTIME: each one's budget).
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

# Each target's budget is a count of executions, about 5 s of a 2-core machine's fuzzing (a
# third to a half of what each did in 10 s beside the demo). A count has no deadline: with a
# time budget, Go 1.26's coordinator can fail a target that found nothing with "context deadline
# exceeded" when a starved worker answers late (go.dev/issue/75804). FUZZTIME (e.g. 30s or
# 1000x) replaces every budget.
step "fuzz, ${FUZZTIME:-a count of executions per target}"
for target in FuzzParseResolvConf:./internal/resolver:80000 FuzzReadJob:./internal/agent:800 FuzzDecodeEvent:./internal/agent:35000 \
  FuzzCheckDNSName:./internal/dnsname:60000 FuzzDiff:./internal/cmd/diff:20 FuzzDNSPayload:./internal/probes:35000 \
  FuzzFoldLookups:./internal/probes:4000 FuzzParseEvaluate:./internal/gate:150000 FuzzLoadRun:./internal/report:300 \
  FuzzWriteDiff:./internal/render:7000 FuzzOpenDatagram:./internal/probes:40000; do
  IFS=: read -r name pkg count <<<"$target"
  # A failing input is written under testdata/fuzz and fails the step.
  if ! go test -run '^$' -fuzz "^$name\$" -fuzztime "${FUZZTIME:-${count}x}" "$pkg"; then
    [ -d "$pkg/testdata/fuzz/$name" ] && echo "fuzz $name found a failing input: $pkg/testdata/fuzz/$name"
    exit 1
  fi
done
step "passed"
