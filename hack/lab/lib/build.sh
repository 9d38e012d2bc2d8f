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

build_components() {
  # Rebuilt when the pinned versions or the component mains change.
  local sum
  sum=$(cat "$LAB/versions.env" "$LAB"/components/*/main.go "$LAB"/components/*/go.mod | sha256sum | cut -c1-16)
  local stamp=$BIN/.built-$sum
  if [ -f "$stamp" ]; then return 0; fi
  mkdir -p "$BIN"
  log "building Kubernetes $K8S_VERSION components (first run only; ~6-8 min on 2 cores)"
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  (cd "$LAB/components/k8s" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
      -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
      -X k8s.io/component-base/version.gitTreeState=clean \
      -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" -o "$BIN/k8s" .)
  log "building CoreDNS $COREDNS_VERSION"
  (cd "$LAB/components/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/coredns" .)
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    ln -sf k8s "$BIN/$c"
  done
  rm -f "$BIN"/.built-*
  touch "$stamp"
}

# Images are rebuilt from this tree every time (seconds) so the lab always runs current code.
build_images() {
  log "building images"
  "$LAB/images.sh" "$CACHE/images" >&2
  (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$BIN/delay" ./hack/lab/delay)
}

import_images() { # import_images NODE: every image tarball into the node's containerd
  local r=$RUN/$1
  for img in "$CACHE"/images/*.tar; do
    ctr --address "$r/containerd.sock" -n k8s.io images import "$img" >/dev/null
  done
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
