#!/usr/bin/env bash
# Builds every image the lab runs, from this repository, as tarballs containerd imports:
#   hack/lab/images.sh OUTDIR
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: images.sh OUTDIR}
BIN=${LAB_CACHE:-$ROOT/.cache/lab}/bin
mkdir -p "$OUT" "$OUT/build"
B=$OUT/build
cd "$ROOT"
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
IB=$B/imagebuild
go build -o "$IB" ./hack/imagebuild
static() { CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${3:-}" -o "$B/$1" "$2"; }

static pause ./hack/lab/images/pause
"$IB" -tag netbench.lab/pause:1 -o "$OUT/pause.tar" -entrypoint /pause -file "$B/pause:/pause:0755"

# The agent image exactly as released (hack/agent-image.sh). The plugin's default image is
# ghcr.io/kubectl-netbench/agent:<its version>; a dev build's is :dev.
VERSION=$VERSION EXTRA_TAGS=ghcr.io/kubectl-netbench/agent:dev hack/agent-image.sh "$OUT/agent.tar" >&2

static sample-app ./test/apps/sample-app
"$IB" -tag netbench.lab/sample-app:1 -o "$OUT/sample-app.tar" -entrypoint /sample-app -file "$B/sample-app:/sample-app:0755"

"$IB" -tag netbench.lab/coredns:1 -o "$OUT/coredns.tar" -entrypoint /coredns -file "$BIN/coredns:/coredns:0755"

# The real C library resolvers: glibc (dynamic, with Debian's libraries) and musl (static).
gcc -O2 -o "$B/resolver-glibc" test/apps/resolver/resolver.c
libs=()
for l in $(ldd "$B/resolver-glibc" | grep -o '/[^ ]*'); do libs+=(-file "$l:$l:0755"); done
printf 'hosts: files dns\n' > "$B/nsswitch.conf"
"$IB" -tag netbench.lab/resolver-glibc:1 -o "$OUT/resolver-glibc.tar" -entrypoint /resolver \
  -file "$B/resolver-glibc:/resolver:0755" -file "$B/nsswitch.conf:/etc/nsswitch.conf:0644" "${libs[@]}"
musl-gcc -static -O2 -o "$B/resolver-musl" test/apps/resolver/resolver.c
"$IB" -tag netbench.lab/resolver-musl:1 -o "$OUT/resolver-musl.tar" -entrypoint /resolver \
  -file "$B/resolver-musl:/resolver:0755"
# Go's own resolver, the same looper in Go (static, as CGO_ENABLED=0 apps are).
static resolver-go ./test/apps/resolver-go
"$IB" -tag netbench.lab/resolver-go:1 -o "$OUT/resolver-go.tar" -entrypoint /resolver \
  -file "$B/resolver-go:/resolver:0755"
