# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# Per node: cgroups, configs, containerd, kubelet and kube-proxy.

# PROXY_LOG is kube-proxy's logging: its topology decisions too (why a Service's zone hints
# are not used on a node), which the ladder's end-to-end tests print when a spread surprises,
# and its handlers' calls (config=4), where restart_proxy sees the node's zone reach it.
PROXY_LOG=(--v=1 "--vmodule=topology=7,config=4")

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
  local ip6 cidr6 range4 range6
  ip6=$(ip6_of "$ip") cidr6=$(cidr6_of "$cidr")
  range4="[{\"subnet\": \"$cidr\", \"gateway\": \"${cidr%.0/24}.1\"}]"
  range6="[{\"subnet\": \"$cidr6\", \"gateway\": \"${cidr6%/64}1\"}]"
  # The pod ranges and routes of the lab's families, in its order (the first is the pods' primary).
  local vars=(NODE_NAME="$name" NODE_IP="$(primary_of "$ip" "$ip6")" NODE_IPS="$(by_family "$ip" "$ip6")"
    NODE_DIR="$d" NODE_RUN="$r" POD_RANGES="$(by_family "$range4" "$range6")"
    POD_ROUTES="$(by_family '{"dst": "0.0.0.0/0"}' '{"dst": "::/0"}')"
    STATE="$STATE" CLUSTER_DNS="$(primary_of "$CLUSTER_DNS" "$CLUSTER_DNS6")"
    CLUSTER_CIDR="$(by_family "$CLUSTER_CIDR" "$CLUSTER_CIDR6")" KUBECONFIG="$KUBECONFIG_PATH"
    PROXY_MODE="$(lab_setting LAB_PROXY_MODE)" UNPRIVILEGED_ICMP="$([ "$name" = "$NO_PING_NODE" ] && echo false || echo true)")
  render cni.conflist "${vars[@]}" > "$d/cni/10-lab.conflist"
  render containerd.toml "${vars[@]}" > "$d/containerd.toml"
  # The lab's private registry (none runs by default; a test serves one there, with basic auth):
  # pulled over plain HTTP (containerd 1.6 wants the host's own section for that, not only
  # server), with the credentials of the pod's imagePullSecrets.
  mkdir -p "$d/certs.d/$REGISTRY"
  printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$REGISTRY" "$REGISTRY" \
    > "$d/certs.d/$REGISTRY/hosts.toml"
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
    --kubeconfig="$KUBECONFIG_PATH" --hostname-override="$name" --node-ip="$(by_family "$ip" "$(ip6_of "$ip")")" \
    --root-dir="$d/kubelet" --cert-dir="$d/kubelet/pki" \
    --node-labels="topology.kubernetes.io/zone=$zone,topology.kubernetes.io/region=$REGION" --v=1
  start "kube-proxy-$name" "$ns" "$BIN/kube-proxy" --config="$d/kube-proxy.yaml" "${PROXY_LOG[@]}"
  if [ "$(lab_setting LAB_NETWORK_POLICY)" = 1 ]; then
    # The chain the enforcer fills with the selected pods' NFQUEUE rules (see its main.go).
    ipt "$ns" -t mangle -N NBLAB-NETPOL 2>/dev/null || true
    ipt_ensure "$ns" mangle "-I FORWARD 1" -j NBLAB-NETPOL
    start "netpol-$name" "$ns" "$BIN/netpol" --kubeconfig="$KUBECONFIG_PATH" --node="$name" --v=1 \
      --ipv6="$(has_ipv6 && echo true || echo false)"
  fi
}

# node_daemons NAME: the daemons a node runs with the lab's settings.
node_daemons() {
  echo "containerd-$1 kubelet-$1 kube-proxy-$1"
  if [ "$(lab_setting LAB_NETWORK_POLICY)" = 1 ]; then echo "netpol-$1"; fi
}

# proxy-mode iptables|nftables|ipvs: restarts every node's kube-proxy in that mode, after
# kube-proxy --cleanup has removed the old mode's rules, and returns once each has synced.
cmd_proxy_mode() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local mode=${1:-}
  check_proxy_mode "$mode"
  sed -i "s/^LAB_PROXY_MODE=.*/LAB_PROXY_MODE=$mode/" "$STATE/settings.env"
  for n in "${NODES[@]}"; do
    read -r name zone ip cidr <<<"$n"
    local ns=nblab-${name#lab-} f
    f=$(pidfile "kube-proxy-$name")
    if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
    while running "kube-proxy-$name"; do sleep 0.1; done
    rm -f "$f"
    nsenter --net="/run/netns/$ns" "$BIN/kube-proxy" --cleanup >>"$STATE/logs/kube-proxy-$name.log" 2>&1 || true
    write_node_config "$name" "$zone" "$ip" "$cidr"
    restart_proxy "$name" "$ns" "$mode"
  done
  publish_proxy_config
  log "kube-proxy runs in $mode mode on every node"
}

# restart_proxy NAME NETNS MODE starts the node's kube-proxy again, on a node that exists and
# carries its zone label, and returns once it serves and has the zone. kube-proxy v1.37 hangs
# its zone handler on a node informer that already runs, then registers the proxier with it:
# when the node's first event comes in between, the zone is kept with no one to tell, and the
# proxier ignores every zone hint until the label changes (its log says "node is missing
# label"). Such a kube-proxy is started again, up to three times; the last one is left
# running, without its zone, when the command fails.
restart_proxy() {
  local name=$1 ns=$2 mode=$3 log=$STATE/logs/kube-proxy-$1.log from try
  for try in 1 2 3; do
    from=$(( $(wc -l <"$log") + 1 ))
    start "kube-proxy-$name" "$ns" "$BIN/kube-proxy" --config="$STATE/nodes/$name/kube-proxy.yaml" "${PROXY_LOG[@]}"
    wait_for 60 "kube-proxy on $name to sync in $mode mode" proxy_healthy "$ns"
    for _ in $(seq 50); do
      if tail -n +"$from" "$log" | grep -q 'Calling handler.OnTopologyChange'; then return 0; fi
      sleep 0.1
    done
    [ "$try" = 3 ] && break
    log "kube-proxy on $name did not get its node's zone (try $try of 3): starting it again"
    stop "kube-proxy-$name"
  done
  die "kube-proxy on $name never got its node's zone label, and runs without it (log: $log)"
}

# check_proxy_mode MODE dies unless the lab can run kube-proxy in MODE here.
check_proxy_mode() {
  case "$1" in
    iptables | nftables) ;;
    ipvs)
      modprobe ip_vs 2>/dev/null || true
      [ -e /proc/net/ip_vs ] || die "LAB_PROXY_MODE=ipvs: this kernel has no IPVS (no ip_vs module, /proc/net/ip_vs missing): use iptables or nftables"
      ;;
    *) die "LAB_PROXY_MODE / proxy-mode ${1:-(none)}: want iptables, nftables or ipvs" ;;
  esac
}

# proxy_healthy NETNS: kube-proxy's healthz in the node's namespace answers 200 (it does once
# its first sync is done).
proxy_healthy() {
  nsenter --net="/run/netns/$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/10256 && printf "GET /healthz HTTP/1.0\r\n\r\n" >&3 && head -1 <&3 | grep -q " 200 "'
}

# publish_proxy_config writes the ConfigMap kube-system/kube-proxy as kubeadm does (key
# config.conf), so that what a user may read about the dataplane is there to read.
publish_proxy_config() {
  local first
  read -r first _ <<<"${NODES[0]}"
  kubectl -n kube-system create configmap kube-proxy --from-file=config.conf="$STATE/nodes/$first/kube-proxy.yaml" \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null
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
