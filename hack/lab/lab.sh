#!/usr/bin/env bash
# The lab: a real Kubernetes cluster with three worker nodes in two zones, on this machine.
#
#   hack/lab/lab.sh up | down | status | kubeconfig | check-clean | delay SAME CROSS | delay off
#
# Every node is a network namespace with its own IP on a lab bridge, its own containerd, kubelet
# and kube-proxy. The control plane (etcd, kube-apiserver, controller-manager, scheduler) and
# the lab's upstream DNS run on the bridge's host address. Nothing leaves the machine.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAB=$ROOT/hack/lab
# shellcheck source=hack/lab/versions.env
source "$LAB/versions.env"

CACHE=${LAB_CACHE:-$ROOT/.cache/lab}     # built binaries and images, kept across runs
STATE=${LAB_STATE:-/var/lib/netbench-lab} # certificates, configs, node data, logs
RUN=${LAB_RUN:-/run/netbench-lab}         # pids, sockets
BIN=$CACHE/bin
KUBECONFIG_PATH=$STATE/admin.kubeconfig

BRIDGE=nblab0
HOST_IP=10.77.0.1
SERVICE_CIDR=10.96.0.0/16
CLUSTER_DNS=10.96.0.10
CLUSTER_CIDR=10.244.0.0/16
REGION=lab-region-1
# name zone node-ip pod-cidr
NODES=(
  "lab-a1 zone-a 10.77.0.11 10.244.1.0/24"
  "lab-a2 zone-a 10.77.0.12 10.244.2.0/24"
  "lab-b1 zone-b 10.77.0.13 10.244.3.0/24"
)
# LAB_FOURTH_SEARCH=1 adds a 4th search domain to every pod, as EKS's <region>.compute.internal.
LAB_FOURTH_SEARCH=${LAB_FOURTH_SEARCH:-0}
# Names the lab's upstream DNS answers; everything else is NXDOMAIN.
UPSTREAM_NAMES=${LAB_UPSTREAM_NAMES:-"example.com www.example.com api.example.com netbench.example.org"}
UPSTREAM_ADDR=10.77.0.250 # the address those names resolve to (nothing listens there)

log() { printf '[lab %5ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
die() { echo "lab: $*" >&2; exit 1; }
START=$(date +%s)

kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

pidfile() { echo "$RUN/pids/$1.pid"; }
running() { local f; f=$(pidfile "$1"); [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

# start NAME NETNS CMD...: runs CMD in the background (inside NETNS unless it is "-"), logging
# to $STATE/logs/NAME.log, and records its pid.
start() {
  local name=$1 ns=$2; shift 2
  running "$name" && return 0
  mkdir -p "$STATE/logs" "$RUN/pids"
  if [ "$ns" = - ]; then
    setsid "$@" >>"$STATE/logs/$name.log" 2>&1 < /dev/null &
  else
    setsid nsenter --net="/run/netns/$ns" -- "$@" >>"$STATE/logs/$name.log" 2>&1 < /dev/null &
  fi
  echo $! > "$(pidfile "$name")"
}

wait_for() { # wait_for SECONDS DESCRIPTION CMD...
  local t=$1 what=$2; shift 2
  local end=$(( $(date +%s) + t ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "timed out after ${t}s waiting for $what (logs: $STATE/logs)"
    sleep 0.2
  done
}

# ---------------------------------------------------------------- install and build (cached)

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

# ---------------------------------------------------------------- certificates and configs

gen_certs() {
  local d=$STATE/pki
  [ -f "$d/admin.crt" ] && return 0
  mkdir -p "$d"
  log "generating certificates"
  (
    cd "$d"
    openssl genrsa -out ca.key 2048 2>/dev/null
    openssl req -x509 -new -key ca.key -subj "/CN=netbench-lab-ca" -days 3650 -out ca.crt 2>/dev/null
    cat > apiserver.cnf <<EOF
[req]
distinguished_name = dn
[dn]
[ext]
subjectAltName = IP:$HOST_IP,IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
EOF
    openssl genrsa -out apiserver.key 2048 2>/dev/null
    openssl req -new -key apiserver.key -subj "/CN=kube-apiserver" -out apiserver.csr 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile apiserver.cnf -extensions ext -out apiserver.crt 2>/dev/null
    printf '[ext]\nkeyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = clientAuth\n' > client.cnf
    openssl genrsa -out admin.key 2048 2>/dev/null
    openssl req -new -key admin.key -subj "/O=system:masters/CN=netbench-lab-admin" -out admin.csr 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.cnf -extensions ext -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  cat > "$KUBECONFIG_PATH" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: netbench-lab
  cluster:
    server: https://$HOST_IP:6443
    certificate-authority: $d/ca.crt
users:
- name: netbench-lab-admin
  user:
    client-certificate: $d/admin.crt
    client-key: $d/admin.key
contexts:
- name: netbench-lab
  context: {cluster: netbench-lab, user: netbench-lab-admin, namespace: default}
current-context: netbench-lab
EOF
}

# ---------------------------------------------------------------- network

setup_network() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "creating the lab network"
    ip link add "$BRIDGE" type bridge
    ip addr add "$HOST_IP/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  # Bridged frames may pass the host's iptables (br_netfilter): let the lab's through.
  iptables -C FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment netbench-lab -j ACCEPT 2>/dev/null ||
    iptables -I FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment netbench-lab -j ACCEPT
  for n in "${NODES[@]}"; do
    read -r name zone ip cidr <<<"$n"
    local ns=nblab-${name#lab-}
    if [ ! -e "/run/netns/$ns" ]; then
      ip netns add "$ns"
      ip link add "nbl-${name#lab-}" type veth peer name eth0 netns "$ns"
      ip link set "nbl-${name#lab-}" master "$BRIDGE" up
      ip -n "$ns" addr add "$ip/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
      # No default route: everything the lab talks to is on the bridge or routed below, and any
      # other destination (a registry, a real resolver) fails at once instead of leaving the node.
      ip -n "$ns" route add unreachable default
      ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
      ip netns exec "$ns" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
    fi
    ip route replace "$cidr" via "$ip" dev "$BRIDGE"
    for m in "${NODES[@]}"; do
      read -r oname _ oip ocidr <<<"$m"
      [ "$oname" = "$name" ] && continue
      ip -n "$ns" route replace "$ocidr" via "$oip" dev eth0
    done
  done
}

# ---------------------------------------------------------------- control plane

start_control_plane() {
  mkdir -p "$STATE/etcd"
  start etcd - etcd --name lab --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster lab=http://127.0.0.1:2380 --unsafe-no-fsync
  wait_for 30 etcd curl -sf http://127.0.0.1:2379/health

  local p=$STATE/pki
  start kube-apiserver - "$BIN/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 \
    --bind-address="$HOST_IP" --advertise-address="$HOST_IP" --secure-port=6443 \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
    --client-ca-file="$p/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --authorization-mode=RBAC --allow-privileged=true \
    --kubelet-client-certificate="$p/admin.crt" --kubelet-client-key="$p/admin.key" \
    --kubelet-preferred-address-types=InternalIP \
    --profiling=false --v=1
  wait_for 90 kube-apiserver kubectl get --raw /readyz

  start kube-controller-manager - "$BIN/kube-controller-manager" \
    --kubeconfig="$KUBECONFIG_PATH" --leader-elect=false \
    --service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
    --use-service-account-credentials=true --cluster-cidr="$CLUSTER_CIDR" \
    --bind-address=127.0.0.1 --profiling=false --v=1
  start kube-scheduler - "$BIN/kube-scheduler" \
    --kubeconfig="$KUBECONFIG_PATH" --leader-elect=false --bind-address=127.0.0.1 --profiling=false --v=1
}

# The lab's upstream DNS, standing in for the Internet's: it answers A for UPSTREAM_NAMES,
# NODATA for their other types, and NXDOMAIN for every other name.
start_upstream_dns() {
  local d=$STATE/upstream re="" soa
  mkdir -p "$d"
  for name in $UPSTREAM_NAMES; do re="$re${re:+|}${name//./\\.}"; done
  soa='authority "{{ .Zone }} 60 IN SOA ns.lab. hostmaster.lab. 1 60 60 60 60"'
  cat > "$d/Corefile" <<EOF
.:53 {
  bind $HOST_IP
  template IN A . {
    match "^($re)\\.\$"
    answer "{{ .Name }} 60 IN A $UPSTREAM_ADDR"
    fallthrough
  }
  template IN ANY . {
    match "^($re)\\.\$"
    rcode NOERROR
    $soa
    fallthrough
  }
  template IN ANY . {
    rcode NXDOMAIN
    $soa
  }
}
EOF
  start upstream-dns - "$BIN/coredns" -conf "$d/Corefile"
}

# ---------------------------------------------------------------- nodes

cgroup_prepare() { # cgroup v1 (hybrid): one root per kubelet, cpuset filled from the parent
  local root=$1
  for h in /sys/fs/cgroup/*/; do
    h=${h%/}
    [ "$(basename "$h")" = unified ] && continue
    mountpoint -q "$h" || continue
    mkdir -p "$h/$root"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" > "$h/$root/cpuset.cpus"
      cat "$h/cpuset.mems" > "$h/$root/cpuset.mems"
    fi
  done
}

write_node_config() {
  local name=$1 zone=$2 ip=$3 cidr=$4
  local d=$STATE/nodes/$name r=$RUN/$name
  mkdir -p "$d/cni" "$d/kubelet" "$d/pod-logs" "$r"
  local gw=${cidr%.0/24}.1
  cat > "$d/cni/10-lab.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "lab",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$d/cni-ipam", "ranges": [[{"subnet": "$cidr", "gateway": "$gw"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
  cat > "$d/containerd.toml" <<EOF
version = 2
root = "$d/containerd"
state = "$r/containerd"
[grpc]
  address = "$r/containerd.sock"
[ttrpc]
  address = "$r/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "netbench.lab/pause:1"
  restrict_oom_score_adj = true
  enable_unprivileged_icmp = true
  enable_unprivileged_ports = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$r/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
EOF
  local search=""
  [ "$LAB_FOURTH_SEARCH" = 1 ] && search="search $REGION.compute.internal"
  printf '%s\nnameserver %s\n' "$search" "$HOST_IP" > "$d/resolv.conf"
  cat > "$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: /$name
failCgroupV1: false
containerRuntimeEndpoint: unix://$r/containerd.sock
clusterDNS: [$CLUSTER_DNS]
clusterDomain: cluster.local
resolvConf: $d/resolv.conf
podLogsDir: $d/pod-logs
failSwapOn: false
serializeImagePulls: false
enforceNodeAllocatable: []
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podPidsLimit: -1
rotateCertificates: false
serverTLSBootstrap: false
maxPods: 50
EOF
  cat > "$d/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $KUBECONFIG_PATH}
mode: iptables
hostnameOverride: $name
bindAddress: $ip
clusterCIDR: $CLUSTER_CIDR
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
conntrack: {maxPerCore: 0, min: 0}
EOF
}

import_images() { # import_images NODE: every image tarball into the node's containerd
  local r=$RUN/$1
  for img in "$CACHE"/images/*.tar; do
    ctr --address "$r/containerd.sock" -n k8s.io images import "$img" >/dev/null
  done
}

# search4 on|off: pods created from now on get (or lose) the 4th search domain. The kubelet reads
# its resolvConf file for every new pod.
cmd_search4() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local line=""
  case "${1:-}" in on) line="search $REGION.compute.internal" ;; off) ;; *) die "usage: lab.sh search4 on|off" ;; esac
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    printf '%s\nnameserver %s\n' "$line" "$HOST_IP" > "$STATE/nodes/$name/resolv.conf"
  done
  log "4th search domain ${1} for new pods"
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

start_node() {
  local name=$1 zone=$2 ip=$3 cidr=$4
  local ns=nblab-${name#lab-} d=$STATE/nodes/$name r=$RUN/$name
  write_node_config "$@"
  cgroup_prepare "$name"
  start "containerd-$name" "$ns" containerd --config "$d/containerd.toml"
  wait_for 30 "containerd on $name" ctr --address "$r/containerd.sock" version
  import_images "$name"
  start "kubelet-$name" "$ns" "$BIN/kubelet" --config="$d/kubelet.yaml" \
    --kubeconfig="$KUBECONFIG_PATH" --hostname-override="$name" --node-ip="$ip" \
    --root-dir="$d/kubelet" --cert-dir="$d/kubelet/pki" \
    --node-labels="topology.kubernetes.io/zone=$zone,topology.kubernetes.io/region=$REGION" --v=1
  start "kube-proxy-$name" "$ns" "$BIN/kube-proxy" --config="$d/kube-proxy.yaml" --v=1
}

deploy_addons() {
  sed -e "s/@CLUSTER_DNS@/$CLUSTER_DNS/g" -e "s/@UPSTREAM@/$HOST_IP/g" "$LAB/manifests/coredns.yaml" | kubectl apply -f - >/dev/null
}

# Zone latency: each node holds its egress to another node for the one-way delay of that pair's
# class (queue 1: same zone, queue 2: cross zone). Same-node traffic never leaves the node.
cmd_delay() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local same=${1:-} cross=${2:-}
  [ -n "$same" ] || die "usage: lab.sh delay SAME CROSS (one-way, e.g. 200us 1ms) | delay off"
  for n in "${NODES[@]}"; do
    read -r name zone _ <<<"$n"
    local ns=nblab-${name#lab-}
    local f; f=$(pidfile "delay-$name")
    if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; fi
    ip netns exec "$ns" iptables -t mangle -N NBLAB-DELAY 2>/dev/null || true
    ip netns exec "$ns" iptables -t mangle -F NBLAB-DELAY
    ip netns exec "$ns" iptables -t mangle -C POSTROUTING -o eth0 -j NBLAB-DELAY 2>/dev/null ||
      ip netns exec "$ns" iptables -t mangle -A POSTROUTING -o eth0 -j NBLAB-DELAY
    [ "$same" = off ] && continue
    for m in "${NODES[@]}"; do
      read -r oname ozone oip ocidr <<<"$m"
      [ "$oname" = "$name" ] && continue
      local q=2
      [ "$ozone" = "$zone" ] && q=1
      for dst in "$oip" "$ocidr"; do
        ip netns exec "$ns" iptables -t mangle -A NBLAB-DELAY -d "$dst" -j NFQUEUE --queue-num $q --queue-bypass
      done
    done
    start "delay-$name" "$ns" "$BIN/delay" "1=$same" "2=$cross"
  done
  if [ "$same" = off ]; then log "zone delay off"; else log "zone delay on: same zone $same, cross zone $cross one way"; fi
}

# ---------------------------------------------------------------- commands

cmd_up() {
  [ "$(id -u)" = 0 ] || die "run as root (it creates network namespaces and starts node daemons)"
  if cmd_status >/dev/null 2>&1; then
    log "the lab is already up"
    kubectl get nodes -L topology.kubernetes.io/zone
    return 0
  fi
  if [ -e "$RUN" ] || [ -e "$STATE" ] || ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "clearing what a lab that is not (fully) running left behind"
    cmd_down >/dev/null
  fi
  install_packages
  build_components
  build_images
  gen_certs
  setup_network
  start_control_plane
  start_upstream_dns
  for n in "${NODES[@]}"; do
    # shellcheck disable=SC2086
    start_node $n
  done
  deploy_addons
  # LAB_ZONE_DELAY="SAME CROSS" (one-way, e.g. "200us 1ms") turns the zone latency on at once.
  if [ -n "${LAB_ZONE_DELAY:-}" ]; then
    # shellcheck disable=SC2086
    cmd_delay $LAB_ZONE_DELAY
  fi
  log "waiting for the nodes and cluster DNS"
  wait_for 120 "3 Ready nodes" bash -c "[ \$('$BIN/kubectl' --kubeconfig '$KUBECONFIG_PATH' get nodes --no-headers 2>/dev/null | grep -cw Ready) = 3 ]"
  wait_for 120 "CoreDNS" kubectl -n kube-system rollout status deploy/coredns --timeout=2s
  log "the lab is up in $(( $(date +%s) - START )) s; KUBECONFIG=$KUBECONFIG_PATH"
  kubectl get nodes -L topology.kubernetes.io/zone
}

cmd_status() {
  local bad=0
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler upstream-dns; do
    if running "$c"; then echo "$c: running"; else echo "$c: stopped"; bad=1; fi
  done
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    for c in containerd kubelet kube-proxy; do
      if running "$c-$name"; then echo "$c-$name: running"; else echo "$c-$name: stopped"; bad=1; fi
    done
  done
  if [ $bad = 0 ]; then
    kubectl get nodes -L topology.kubernetes.io/zone 2>/dev/null || bad=1
  fi
  return $bad
}

kill_pidfiles() {
  [ -d "$RUN/pids" ] || return 0
  local pids=()
  for f in "$RUN"/pids/*.pid; do
    [ -f "$f" ] || continue
    pids+=("$(cat "$f")")
  done
  [ ${#pids[@]} = 0 ] && return 0
  kill "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  kill -9 "${pids[@]}" 2>/dev/null || true
  rm -f "$RUN"/pids/*.pid
}

cmd_down() {
  [ "$(id -u)" = 0 ] || die "run as root"
  kill_pidfiles
  # Container shims and the containers they ran outlive containerd: end them by their cgroups,
  # then remove the cgroups (a killed process leaves its cgroup once it has been reaped).
  pkill -9 -f "containerd-shim.*$RUN" 2>/dev/null || true
  local end=$(( $(date +%s) + 20 ))
  while :; do
    local busy=0
    for n in "${NODES[@]}"; do
      read -r name _ <<<"$n"
      for h in /sys/fs/cgroup/*/"$name"; do
        [ -d "$h" ] || continue
        busy=1
        # shellcheck disable=SC2038 # the pipe carries pids read from cgroup.procs, not file names
        find "$h" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      done
    done
    [ $busy = 0 ] && break
    [ "$(date +%s)" -lt "$end" ] || { echo "lab: cgroups still busy after 20 s" >&2; break; }
    sleep 0.2
  done
  # Mounts made by containerd and kubelet (rootfs, shm, volumes), deepest first.
  for _ in 1 2 3; do
    { awk '{print $5}' /proc/self/mountinfo | grep -E "^($STATE|$RUN)" || true; } | sort -r | while read -r m; do
      umount -l "$m" 2>/dev/null || true
    done
  done
  # Pod network namespaces containerd made (only the lab runs containerd here) and the nodes'.
  for f in /run/netns/cni-*; do
    [ -e "$f" ] || continue
    umount "$f" 2>/dev/null || true
    rm -f "$f"
  done
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    ip netns delete "nblab-${name#lab-}" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
  while iptables -D FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment netbench-lab -j ACCEPT 2>/dev/null; do :; done
  rm -rf "$RUN" "$STATE"
  log "the lab is down"
}

# check-clean: proves nothing of the lab is left; prints what is and fails if anything is.
cmd_check_clean() {
  local left=0
  report() { echo "left behind: $*"; left=1; }
  local procs
  procs=$(pgrep -af "$RUN|$STATE|$BIN/" | grep -v pgrep || true)
  [ -n "$procs" ] && report "processes:
$procs"
  for f in /run/netns/nblab-* /run/netns/cni-*; do [ -e "$f" ] && report "network namespace $f"; done
  grep -E " ($STATE|$RUN)" /proc/self/mountinfo >/dev/null && report "mounts under $STATE or $RUN"
  for h in /sys/fs/cgroup/*/lab-*; do [ -d "$h" ] && report "cgroup $h"; done
  iptables -S 2>/dev/null | grep -q netbench-lab && report "iptables rules tagged netbench-lab"
  ip link show "$BRIDGE" >/dev/null 2>&1 && report "bridge $BRIDGE"
  ip route | grep -q "10.244." && report "routes to pod CIDRs"
  [ -e "$STATE" ] && report "$STATE"
  [ -e "$RUN" ] && report "$RUN"
  if [ $left = 0 ]; then echo "clean: no lab process, network namespace, mount, cgroup, iptables rule, route or state is left"; fi
  return $left
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kubeconfig) echo "$KUBECONFIG_PATH" ;;
  check-clean) cmd_check_clean ;;
  delay) shift; cmd_delay "$@" ;;
  images) cmd_images ;;
  search4) shift; cmd_search4 "$@" ;;
  *) echo "usage: $0 up|down|status|kubeconfig|check-clean|delay SAME CROSS|delay off|images|search4 on|off" >&2; exit 2 ;;
esac
