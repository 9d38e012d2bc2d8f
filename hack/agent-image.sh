#!/usr/bin/env bash
# The agent image — one recipe for the lab, the e2e tests and the release: the agent built with
# the same flags for each architecture, packed by hack/imagebuild on an empty base (non-root
# 65532, /tmp, a passwd file), every timestamp the epoch, so the same version gives the same
# digest anywhere.
#
#   hack/agent-image.sh OUT.tar    one architecture, a tarball containerd imports (the lab)
#   hack/agent-image.sh OUT-DIR    every ARCHS, an OCI layout holding one index (the release)
#
# The digest of what was written goes to OUT.digest. Environment: VERSION (default: git
# describe), ARCHS (default: this machine's), EXTRA_TAGS (more tags for the tarball).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: hack/agent-image.sh OUT.tar|OUT-DIR}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
ARCHS=${ARCHS:-$(go env GOARCH)}
PKG=github.com/kubectl-netbench/kubectl-netbench
REPO=ghcr.io/kubectl-netbench/agent
bin=bin/agent-image
mkdir -p "$bin"
for arch in ${ARCHS//,/ }; do
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "-s -w -X $PKG/internal/version.Version=$VERSION" \
    -o "$bin/linux_$arch/netbench-agent" ./cmd/netbench-agent
done
go build -o "$bin/imagebuild" ./hack/imagebuild
args=(-tag "$REPO:$VERSION" -arch "$ARCHS" -entrypoint /netbench-agent -file "$bin/linux_{arch}/netbench-agent:/netbench-agent:0755")
for t in ${EXTRA_TAGS:-}; do args+=(-tag "$t"); done
case $out in
  *.tar) "$bin/imagebuild" "${args[@]}" -o "$out" -digest-file "${out%.tar}.digest" ;;
  *) "$bin/imagebuild" "${args[@]}" -oci "$out" -digest-file "$out.digest" ;;
esac
