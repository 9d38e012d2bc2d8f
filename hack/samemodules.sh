#!/usr/bin/env bash
# Fails when the project and the lab's components (hack/lab/components/*) build a module they
# share at different versions. With one version of each, and one build configuration (CGO off,
# -trimpath: the Makefile's), the Go cache compiles a shared package once: client-go, the API
# types, gRPC, x/net … are compiled by the first lab-up and reused by vet, the tests and the
# release, and CoreDNS, kube-network-policies and Kubernetes reuse each other's.
# To align: `go get MODULE@VERSION` (the highest listed) in each module named, then `go mod tidy`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The modules that may differ, each with its reason (few packages each: built twice).
allowed=(
  # kube-network-policies v0.8.0's containerd/nri v0.9.0 does not compile against runtime-spec
  # v1.1 or later (LinuxPids.Limit became a pointer); Kubernetes needs v1.3.0.
  github.com/opencontainers/runtime-spec
)
all=$(mktemp)
trap 'rm -f "$all"' EXIT
mods() { go list -deps -test -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' "$@" | sort -u | grep -v '^$'; }
mods ./... | sed 's/$/ ./' >"$all"
for dir in hack/lab/components/*/; do
  (cd "$dir" && mods .) | sed "s|\$| $dir|" >>"$all"
done
differ=$(awk '{ if (!(($1, $2) in seen)) { seen[$1, $2] = 1; n[$1]++ }; at[$1] = at[$1] "  " $3 " " $2 }
  END { for (m in n) if (n[m] > 1) print m ":" at[m] }' "$all" | sort | grep -vF -f <(printf '%s:\n' "${allowed[@]}") || true)
if [ -n "$differ" ]; then
  echo "modules built at different versions by the project (.) and the lab's components:"
  echo "$differ"
  exit 1
fi
echo "one version of each of the $(cut -d' ' -f1 "$all" | sort -u | wc -l) modules the project and the lab's components build (allowed to differ: ${allowed[*]})"
