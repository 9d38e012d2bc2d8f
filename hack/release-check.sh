#!/usr/bin/env bash
# The distribution path, proven without publishing: the agent image for every architecture by
# the one recipe (hack/agent-image.sh), shown identical to the lab's, pushed with crane to a
# registry on loopback and pulled back by digest; GoReleaser (installed from its Go module at
# a pinned version) checks its config and builds a snapshot of every archive with the image's
# digest pinned in the plugin; the krew manifest
# is rendered from those archives, validated by krew's own validator, installed with krew from
# this platform's archive, run through kubectl's plugin discovery, and uninstalled.
#
# RELEASE_PLATFORMS=host (CI) builds only this machine's archive with the release's config (its
# builds narrowed to this GOOS/GOARCH); the default builds all six, as a release does.
set -euo pipefail
cd "$(dirname "$0")/.."
RELEASE_PLATFORMS=${RELEASE_PLATFORMS:-all}
GORELEASER_VERSION=v2.15.1
KREW_VERSION=v0.4.3
CRANE_VERSION=v0.22.1 # the go-containerregistry our image builder uses
TOOLS=$PWD/.tools
GR=$TOOLS/goreleaser-$GORELEASER_VERSION/goreleaser
KREW_BIN=$TOOLS/krew-$KREW_VERSION
CRANE=$TOOLS/crane-$CRANE_VERSION/crane
step() { echo "== $*"; }

if [ ! -x "$GR" ]; then
  step "installing GoReleaser $GORELEASER_VERSION from its Go module"
  GOBIN=$(dirname "$GR") go install github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION
fi
if [ ! -x "$KREW_BIN/krew" ] || [ ! -x "$KREW_BIN/validate-krew-manifest" ]; then
  step "installing krew $KREW_VERSION from its Go module"
  GOBIN=$KREW_BIN go install sigs.k8s.io/krew/cmd/krew@$KREW_VERSION sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION
fi

if [ ! -x "$CRANE" ]; then
  step "installing crane $CRANE_VERSION from its Go module"
  GOBIN=$(dirname "$CRANE") go install github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION
fi

VERSION=0.0.0-snapshot.$(git rev-parse --short HEAD)
export VERSION
step "agent image $VERSION for amd64 and arm64 (hack/agent-image.sh)"
rm -rf dist-image
VERSION=$VERSION ARCHS=amd64,arm64 hack/agent-image.sh dist-image/agent
export AGENT_IMAGE_DIGEST
AGENT_IMAGE_DIGEST=$(cat dist-image/agent.digest)
# The lab's image (one architecture, a tarball for containerd) is the index's image, byte for byte.
host_arch=$(go env GOARCH)
VERSION=$VERSION ARCHS=$host_arch hack/agent-image.sh dist-image/lab.tar >/dev/null
lab_digest=$(cat dist-image/lab.digest)
index_digest=$(jq -r --arg a "$host_arch" '.manifests[] | select(.platform.architecture == $a) | .digest' \
  "dist-image/agent/blobs/sha256/${AGENT_IMAGE_DIGEST#sha256:}")
[ "$lab_digest" = "$index_digest" ] || { echo "the lab's agent image $lab_digest is not the release's $index_digest" >&2; exit 1; }
echo "the lab's $host_arch image is the release index's: $lab_digest"

step "crane push to a registry on loopback, pulled back by digest"
reg_log=$(mktemp)
"$CRANE" registry serve --address 127.0.0.1:0 >"$reg_log" 2>&1 &
reg_pid=$!
trap 'kill $reg_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q 'serving on port [0-9]' "$reg_log" && break; sleep 0.1; done
port=$(grep -o 'serving on port [0-9]*' "$reg_log" | grep -o '[0-9]*$' | head -1)
reg=127.0.0.1:$port
[ -n "$port" ] || { echo "crane registry did not start: $(cat "$reg_log")" >&2; exit 1; }
"$CRANE" push dist-image/agent "$reg/kubectl-netbench/agent:$VERSION" >/dev/null
pushed=$("$CRANE" digest "$reg/kubectl-netbench/agent:$VERSION")
[ "$pushed" = "$AGENT_IMAGE_DIGEST" ] || { echo "pushed $pushed, built $AGENT_IMAGE_DIGEST" >&2; exit 1; }
"$CRANE" manifest "$reg/kubectl-netbench/agent@$AGENT_IMAGE_DIGEST" | jq -r '.manifests[].platform.architecture' | sort | tr '\n' ' '
echo "pulled by digest $AGENT_IMAGE_DIGEST"
kill $reg_pid 2>/dev/null || true
trap - EXIT

step "goreleaser check"
"$GR" check
config=.goreleaser.yaml want=6
case "$RELEASE_PLATFORMS" in
  all) ;;
  host)
    config=$(mktemp --suffix=.yaml) want=1
    sed -e "s/^    goos: \[.*\]$/    goos: [$(go env GOOS)]/" -e "s/^    goarch: \[.*\]$/    goarch: [$(go env GOARCH)]/" .goreleaser.yaml >"$config"
    grep -q "goos: \[$(go env GOOS)\]" "$config" || { echo "could not narrow .goreleaser.yaml's builds to this platform" >&2; exit 1; }
    ;;
  *) echo "RELEASE_PLATFORMS=$RELEASE_PLATFORMS: want all or host" >&2; exit 1 ;;
esac
step "goreleaser release --snapshot --clean --skip=publish ($RELEASE_PLATFORMS platforms)"
"$GR" release --config "$config" --snapshot --clean --skip=publish --parallelism 2

shopt -s nullglob
archives=(dist/kubectl-netbench_*_*.tar.gz dist/kubectl-netbench_*_*.zip)
shopt -u nullglob
[ ${#archives[@]} = "$want" ] || { echo "want $want archives, got ${#archives[@]}: ${archives[*]}" >&2; exit 1; }
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
# No test fault ships (internal/fault, build tag netbench_faults): a faulted build names its
# switch, NETBENCH_FAULTS, and a released one cannot.
while IFS= read -r b; do
  if grep -a -q NETBENCH_FAULTS "$b"; then echo "$b carries the test faults (build tag netbench_faults)" >&2; exit 1; fi
done < <(find dist -type f \( -name kubectl-netbench -o -name kubectl-netbench.exe \); ls bin/agent-image/linux_*/netbench-agent)
(cd dist && grep -E '\.(tar\.gz|zip)$' checksums.txt | sha256sum --check --quiet)
echo "$want archives, each with LICENSE; checksums.txt verified"

step "rendering and validating the krew manifest"
present=()
[ "$RELEASE_PLATFORMS" = host ] && present=(-present-only)
go run ./hack/krew/render -dist dist -out dist/netbench.yaml -agent-digest dist-image/agent.digest "${present[@]}"
grep -q "ghcr.io/kubectl-netbench/agent:$VERSION@$AGENT_IMAGE_DIGEST" dist/netbench.yaml ||
  { echo "the manifest does not pin the agent image" >&2; exit 1; }
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
PATH=$KREW_ROOT/bin:$PATH "$KUBECTL" netbench version | tee "$KREW_ROOT/version.txt"
grep -q "ghcr.io/kubectl-netbench/agent:$VERSION@$AGENT_IMAGE_DIGEST" "$KREW_ROOT/version.txt" ||
  { echo "the installed plugin does not pin the agent image" >&2; exit 1; }
"$KREW_BIN/krew" uninstall netbench
[ ! -e "$KREW_ROOT/bin/kubectl-netbench" ] || { echo "uninstall left the plugin" >&2; exit 1; }
echo "release-check: passed"
