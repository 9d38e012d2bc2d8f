#!/usr/bin/env bash
# The distribution path, proven without publishing: GoReleaser (installed from its Go module at
# a pinned version) checks its config and builds a snapshot of every archive; the krew manifest
# is rendered from those archives, validated by krew's own validator, installed with krew from
# this platform's archive, run through kubectl's plugin discovery, and uninstalled.
set -euo pipefail
cd "$(dirname "$0")/.."
GORELEASER_VERSION=v2.15.1
KREW_VERSION=v0.4.3
TOOLS=$PWD/.tools
GR=$TOOLS/goreleaser-$GORELEASER_VERSION/goreleaser
KREW_BIN=$TOOLS/krew-$KREW_VERSION
step() { echo "== $*"; }

if [ ! -x "$GR" ]; then
  step "installing GoReleaser $GORELEASER_VERSION from its Go module"
  GOBIN=$(dirname "$GR") go install github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION
fi
if [ ! -x "$KREW_BIN/krew" ] || [ ! -x "$KREW_BIN/validate-krew-manifest" ]; then
  step "installing krew $KREW_VERSION from its Go module"
  GOBIN=$KREW_BIN go install sigs.k8s.io/krew/cmd/krew@$KREW_VERSION sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION
fi

step "goreleaser check"
"$GR" check
step "goreleaser release --snapshot --clean --skip=publish,ko"
"$GR" release --snapshot --clean --skip=publish,ko --parallelism 2

archives=(dist/kubectl-netbench_*_*.tar.gz dist/kubectl-netbench_*_*.zip)
[ ${#archives[@]} = 6 ] || { echo "want 6 archives, got ${#archives[@]}: ${archives[*]}" >&2; exit 1; }
for a in "${archives[@]}"; do
  case "$a" in
    *.zip) list=$(unzip -Z1 "$a") ;;
    *) list=$(tar tzf "$a") ;;
  esac
  for f in LICENSE README.md kubectl_complete-netbench; do
    grep -qx "$f" <<<"$list" || { echo "$a lacks $f" >&2; exit 1; }
  done
  echo "$a: $(tr '\n' ' ' <<<"$list")"
done
[ -s dist/checksums.txt ] || { echo "no dist/checksums.txt" >&2; exit 1; }
(cd dist && grep -E '\.(tar\.gz|zip)$' checksums.txt | sha256sum --check --quiet)
echo "6 archives, each with LICENSE; checksums.txt verified"

step "rendering and validating the krew manifest"
go run ./hack/krew/render -dist dist -out dist/netbench.yaml
# krew's validator: structure, platform selectors, and every platform's install — except that
# installing every platform would download the archives from their release URIs, so that part
# is done below, for this platform, from the local archive.
"$KREW_BIN/validate-krew-manifest" -manifest dist/netbench.yaml -skip-install

step "krew install from this platform's archive"
arch=$(go env GOARCH)
archive=$(ls dist/kubectl-netbench_*_linux_"$arch".tar.gz)
export KREW_ROOT
KREW_ROOT=$(mktemp -d)
trap 'rm -rf "$KREW_ROOT"' EXIT
# krew's commands expect its plugin index (a git clone of krew-index); an empty local
# repository stands in for it, since nothing here may be fetched.
git init -q "$KREW_ROOT/index/default"
"$KREW_BIN/krew" install --manifest=dist/netbench.yaml --archive="$archive"
KUBECTL=${KUBECTL:-$(command -v kubectl || echo .cache/lab/bin/kubectl)}
[ -x "$KUBECTL" ] || { echo "no kubectl: run make lab-up (it builds one) or install kubectl" >&2; exit 1; }
step "kubectl netbench version (through kubectl's plugin discovery)"
PATH=$KREW_ROOT/bin:$PATH "$KUBECTL" plugin list 2>/dev/null | grep -q kubectl-netbench
PATH=$KREW_ROOT/bin:$PATH "$KUBECTL" netbench version
"$KREW_BIN/krew" uninstall netbench
[ ! -e "$KREW_ROOT/bin/kubectl-netbench" ] || { echo "uninstall left the plugin" >&2; exit 1; }
echo "release-check: passed"
