# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# Per node: cgroups, configs, containerd, kubelet and kube-proxy.

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

# write_node_config NAME ZONE IP POD-CIDR: the node's CNI, containerd, kubelet and kube-proxy
# configs from hack/lab/templates.
write_node_config() {
  local name=$1 ip=$3 cidr=$4
  local d=$STATE/nodes/$name r=$RUN/$name
  mkdir -p "$d/cni" "$d/kubelet" "$d/pod-logs" "$r"
  local gw=${cidr%.0/24}.1
  local vars=(NODE_NAME="$name" NODE_IP="$ip" NODE_DIR="$d" NODE_RUN="$r" POD_CIDR="$cidr" POD_GATEWAY="$gw"
    STATE="$STATE" CLUSTER_DNS="$CLUSTER_DNS" CLUSTER_CIDR="$CLUSTER_CIDR" KUBECONFIG="$KUBECONFIG_PATH")
  render cni.conflist "${vars[@]}" > "$d/cni/10-lab.conflist"
  render containerd.toml "${vars[@]}" > "$d/containerd.toml"
  local search=""
  [ "$LAB_FOURTH_SEARCH" = 1 ] && search="search $REGION.compute.internal"
  printf '%s\nnameserver %s\n' "$search" "$HOST_IP" > "$d/resolv.conf"
  render kubelet.yaml "${vars[@]}" > "$d/kubelet.yaml"
  render kube-proxy.yaml "${vars[@]}" > "$d/kube-proxy.yaml"
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
