# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# Install and build (cached): packages, Kubernetes and CoreDNS from their modules, images.

install_packages() {
  local missing=()
  for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} = 0 ] && return 0
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# components_stamp: the file that says the components are built for the pinned versions and mains.
components_stamp() {
  local sum
  sum=$(cat "$LAB/versions.env" "$LAB"/components/*/main.go "$LAB"/components/*/go.mod | sha256sum | cut -c1-16)
  echo "$BIN/.built-$sum"
}

components_built() { [ -f "$(components_stamp)" ]; }

# fetch_modules downloads the modules both components need (quietly; the build reports progress).
fetch_modules() {
  log "downloading the components' Go modules (first run only)"
  (cd "$LAB/components/k8s" && go mod download) &
  local k=$!
  (cd "$LAB/components/coredns" && go mod download)
  (cd "$LAB/components/netpol" && go mod download)
  wait "$k"
}

build_components() {
  # Rebuilt when the pinned versions or the component mains change.
  local stamp
  stamp=$(components_stamp)
  if [ -f "$stamp" ]; then return 0; fi
  mkdir -p "$BIN"
  grep -q "kube-network-policies $NETPOL_VERSION\$" "$LAB/components/netpol/go.mod" ||
    die "hack/lab/components/netpol/go.mod does not require kube-network-policies $NETPOL_VERSION (versions.env)"
  log "building Kubernetes $K8S_VERSION components, CoreDNS $COREDNS_VERSION and kube-network-policies $NETPOL_VERSION side by side (first run only: many minutes on 2 cores with cold Go caches)"
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  # Side by side: the one's single-threaded link overlaps the other's compiling.
  (go_build_progress CoreDNS "$LAB/components/coredns" -trimpath -ldflags "-s -w" -o "$BIN/coredns" . &&
    go_build_progress kube-network-policies "$LAB/components/netpol" -trimpath -ldflags "-s -w" -o "$BIN/netpol" .) &
  local coredns=$! rc=0
  go_build_progress Kubernetes "$LAB/components/k8s" -trimpath -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
      -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
      -X k8s.io/component-base/version.gitTreeState=clean \
      -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" -o "$BIN/k8s" . || rc=$?
  wait "$coredns" || rc=$?
  [ "$rc" = 0 ] || die "building the components failed"
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    ln -sf k8s "$BIN/$c"
  done
  rm -f "$BIN"/.built-*
  touch "$stamp"
}

# go_build_progress NAME DIR GO-BUILD-ARGS...: go build in DIR (CGO off) that says, every 15 s,
# how many of the packages it needs it has compiled so far (go build -v names each package as it
# compiles it; packages already in the Go cache are not named, so a warm build ends early).
go_build_progress() {
  local name=$1 dir=$2; shift 2
  log "$name: resolving the packages to build (downloads modules the first time)"
  local total out pid start n rc
  total=$(cd "$dir" && go list -deps . | wc -l) || return 1
  out=$(mktemp)
  (cd "$dir" && CGO_ENABLED=0 exec go build -v "$@" 2>"$out") &
  pid=$! start=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 15); do kill -0 "$pid" 2>/dev/null && sleep 1; done
    kill -0 "$pid" 2>/dev/null || break
    n=$(grep -cv '^#' "$out" || true) # grep -c exits 1 when it counts none (set -e)
    log "$name: $n of $total packages compiled ($((100 * n / total)) %, $((SECONDS - start)) s)"
  done
  rc=0
  wait "$pid" || rc=$?
  if [ "$rc" != 0 ]; then cat "$out" >&2; fi
  rm -f "$out"
  return "$rc"
}

# Images are rebuilt from this tree every time (seconds) so the lab always runs current code.
build_images() {
  log "building images"
  "$LAB/images.sh" "$CACHE/images" >&2
  # The lab's own programs that run outside the cluster: the delay line, the outside host, the
  # load balancer.
  build_program delay ./hack/lab/delay
  build_program outside ./test/apps/outside
  build_program lb ./hack/lab/lb
}

build_program() { (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$BIN/$1" "$2"); }

import_images() { # import_images NODE [TAR...]: the tarballs (default: every lab image) into the node's containerd
  local r=$RUN/$1
  shift
  [ $# -gt 0 ] || set -- "$CACHE"/images/*.tar
  for img in "$@"; do
    ctr --address "$r/containerd.sock" -n k8s.io images import "$img" >/dev/null
  done
}

# import TAR...: import image tarballs into every running node; a tag they carry replaces the
# node's image of that name (the mutation runs' agent, then the lab's own again).
cmd_import() {
  [ "$(id -u)" = 0 ] || die "run as root"
  [ $# -gt 0 ] || die "usage: lab.sh import TAR..."
  local f
  for f in "$@"; do [ -f "$f" ] || die "import: no image tarball $f"; done
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    import_images "$name" "$@"
  done
  log "imported on every node: $*"
}

# images: rebuild the images from this tree and import them into the running nodes.
cmd_images() {
  [ "$(id -u)" = 0 ] || die "run as root"
  build_images
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    import_images "$name"
  done
  log "images rebuilt and imported on every node"
}
