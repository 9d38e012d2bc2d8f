# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# up, status, down and check-clean.

deploy_addons() {
  # kube-dns has an address of each of the lab's families, the primary first.
  local ips policy=SingleStack
  ips=$(by_family "$CLUSTER_DNS" "$CLUSTER_DNS6")
  has_ipv6 && policy=RequireDualStack
  sed -e "s/@CLUSTER_DNS@/${ips%%,*}/g" -e "s/@CLUSTER_DNS_IPS@/$ips/g" -e "s/@IP_FAMILY_POLICY@/$policy/g" \
    -e "s/@UPSTREAM@/$HOST_IP/g" "$LAB/manifests/coredns.yaml" | kubectl apply -f - >/dev/null
  publish_proxy_config
}

# write_settings records the settings this lab is brought up with (LAB_NETWORK_POLICY=0|1,
# LAB_PROXY_MODE), checked first, for later commands.
write_settings() {
  local np=${LAB_NETWORK_POLICY:-1} mode=${LAB_PROXY_MODE:-iptables} fam=${LAB_IP_FAMILY:-4,6}
  case "$np" in 0 | 1) ;; *) die "LAB_NETWORK_POLICY=$np: want 1 (NetworkPolicy enforced, the default) or 0" ;; esac
  case "$fam" in 4 | 4,6 | 6,4) ;; *) die "LAB_IP_FAMILY=$fam: want 4,6 (dual-stack, IPv4 primary: the default), 6,4 (IPv6 primary) or 4" ;; esac
  check_proxy_mode "$mode"
  if [ "$fam" != 4 ] && { [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || echo 1)" != 0 ] || ! command -v ip6tables >/dev/null; }; then
    die "LAB_IP_FAMILY=$fam: this host has no IPv6 (net.ipv6.conf.all.disable_ipv6 not 0, or no ip6tables): use LAB_IP_FAMILY=4"
  fi
  mkdir -p "$STATE"
  printf 'LAB_NETWORK_POLICY=%s\nLAB_PROXY_MODE=%s\nLAB_IP_FAMILY=%s\n' "$np" "$mode" "$fam" >"$STATE/settings.env"
}

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
  # The components' modules download while apt installs the packages (both mostly wait on the
  # network); the build waits for them.
  local fetch=""
  if ! components_built; then
    (fetch_modules) & fetch=$!
  fi
  install_packages
  if [ -n "$fetch" ]; then wait "$fetch" || die "downloading the components' Go modules failed"; fi
  build_components
  build_images
  write_settings
  gen_certs
  setup_network
  setup_outside
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
  # LAB_WAN_DELAY=ONEWAY (e.g. 2ms) turns the outside host's WAN delay on at once.
  if [ -n "${LAB_WAN_DELAY:-}" ]; then cmd_wan_delay "$LAB_WAN_DELAY"; fi
  log "waiting for the nodes and cluster DNS"
  wait_for 120 "${#NODES[@]} Ready nodes" bash -c "[ \$('$BIN/kubectl' --kubeconfig '$KUBECONFIG_PATH' get nodes --no-headers 2>/dev/null | grep -cw Ready) = ${#NODES[@]} ]"
  wait_for 120 "CoreDNS" kubectl -n kube-system rollout status deploy/coredns --timeout=2s
  log "the lab is up in $(( $(date +%s) - START )) s (NetworkPolicy enforced: $(lab_setting LAB_NETWORK_POLICY), kube-proxy mode $(lab_setting LAB_PROXY_MODE), IP families $(lab_setting LAB_IP_FAMILY)); KUBECONFIG=$KUBECONFIG_PATH"
  kubectl get nodes -L topology.kubernetes.io/zone
}

cmd_status() {
  local bad=0
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler upstream-dns outside; do
    if running "$c"; then echo "$c: running"; else echo "$c: stopped"; bad=1; fi
  done
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    for c in $(node_daemons "$name"); do
      if running "$c"; then echo "$c: running"; else echo "$c: stopped"; bad=1; fi
    done
  done
  # The zone delay's lines, while it is on: a line that died lets its node's traffic through
  # undelayed (--queue-bypass), which no test should mistake for a measurement.
  local delay
  delay=$(cat "$RUN/delay.state" 2>/dev/null || echo off)
  if [ "$delay" != off ]; then
    for n in "${NODES[@]}"; do
      read -r name _ <<<"$n"
      if running "delay-$name"; then echo "delay-$name: running ($delay)"; else echo "delay-$name: stopped, zone delay $delay set"; bad=1; fi
    done
  fi
  delay=$(wan_delay_state)
  if [ "$delay" != off ]; then
    if running wan-delay; then echo "wan-delay: running ($delay)"; else echo "wan-delay: stopped, WAN delay $delay set"; bad=1; fi
  fi
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
  # The pods' network namespaces were mounts under each node's containerd state in $RUN (unmounted
  # above, removed with $RUN below); the nodes' own are the lab's by name.
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    ip netns delete "nblab-${name#lab-}" 2>/dev/null || true
  done
  teardown_outside
  ip link delete "$BRIDGE" 2>/dev/null || true
  local t
  for t in iptables ip6tables; do
    while $t -D FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment netbench-lab -j ACCEPT 2>/dev/null; do :; done
  done
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
  for f in /run/netns/nblab-*; do [ -e "$f" ] && report "network namespace $f"; done
  grep -E " ($STATE|$RUN)" /proc/self/mountinfo >/dev/null && report "mounts under $STATE or $RUN"
  for h in /sys/fs/cgroup/*/lab-*; do [ -d "$h" ] && report "cgroup $h"; done
  iptables -S 2>/dev/null | grep -q netbench-lab && report "iptables rules tagged netbench-lab"
  ip6tables -S 2>/dev/null | grep -q netbench-lab && report "ip6tables rules tagged netbench-lab"
  ip link show "$BRIDGE" >/dev/null 2>&1 && report "bridge $BRIDGE"
  ip -o link show | grep ' nbl-' >/dev/null && report "links named nbl-* (the nodes' and the router's veths)"
  ip route | grep -q "10.244." && report "routes to pod CIDRs"
  ip -6 route | grep -q "fd00:10:244:" && report "IPv6 routes to pod CIDRs"
  [ -e "$STATE" ] && report "$STATE"
  [ -e "$RUN" ] && report "$RUN"
  if [ $left = 0 ]; then echo "clean: no lab process, network namespace, mount, cgroup, iptables rule, route or state is left"; fi
  return $left
}

# cmd_dns_autopath on|off: the cluster DNS walks the search path itself for the first search
# candidate (CoreDNS autopath with pods verified: it answers a CNAME to the name that exists),
# or not; CoreDNS restarts with the new Corefile and the command returns once it is ready.
cmd_dns_autopath() {
  local cm
  case "${1:-}" in on | off) ;; *) die "usage: lab.sh dns-autopath on|off" ;; esac
  cm=$(kubectl -n kube-system get configmap coredns -o yaml | sed -e '/autopath @kubernetes/d' -e 's/pods verified/pods insecure/')
  if [ "$1" = on ]; then
    cm=$(sed -e 's/pods insecure/pods verified/' -e 's/^\( *\)kubernetes cluster.local/\1autopath @kubernetes\n\1kubernetes cluster.local/' <<<"$cm")
  fi
  kubectl replace -f - <<<"$cm" >/dev/null
  kubectl -n kube-system rollout restart deploy/coredns >/dev/null
  kubectl -n kube-system rollout status deploy/coredns --timeout=120s >/dev/null
  wait_for 60 "the old CoreDNS pods to go" old_coredns_gone
  log "CoreDNS autopath $1"
}

NODELOCAL_IP=169.254.20.10

# cmd_nodelocaldns on|off: NodeLocal DNSCache in its iptables mode (manifests/nodelocaldns.yaml):
# every node answers the pods' queries to the kube-dns ClusterIP and to 169.254.20.10 itself;
# "off" removes the caches, their addresses and rules, and the upstream Service.
cmd_nodelocaldns() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local n name ns a p t chain upstream addrs=("$NODELOCAL_IP" "$CLUSTER_DNS")
  case "${1:-}" in on | off) ;; *) die "usage: lab.sh nodelocaldns on|off" ;; esac
  # With IPv6 the cache answers the Service's IPv6 ClusterIP too (the pods' nameserver on an
  # IPv6-primary lab).
  if has_ipv6; then addrs+=("$CLUSTER_DNS6"); fi
  if [ "$1" = off ]; then
    kubectl -n kube-system delete daemonset/node-local-dns configmap/node-local-dns service/kube-dns-upstream --ignore-not-found --wait=true >/dev/null
  fi
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    ns=$(node_ns "$name")
    for a in "${addrs[@]}"; do ip -n "$ns" addr del "$(host_prefix "$a")" dev lo 2>/dev/null || true; done
    for t in iptables ip6tables; do
      ip netns exec "$ns" "$t" -t raw -F NBLAB-NODELOCAL 2>/dev/null || true
      for chain in PREROUTING OUTPUT; do
        ip netns exec "$ns" "$t" -t raw -D "$chain" -j NBLAB-NODELOCAL 2>/dev/null || true
      done
      ip netns exec "$ns" "$t" -t raw -X NBLAB-NODELOCAL 2>/dev/null || true
    done
    [ "$1" = on ] || continue
    for a in "${addrs[@]}"; do ip -n "$ns" addr add "$(host_prefix "$a")" dev lo; done
    ipt "$ns" -t raw -N NBLAB-NODELOCAL
    for a in "${addrs[@]}"; do
      t=iptables
      [[ "$a" == *:* ]] && t=ip6tables
      for p in udp tcp; do
        ip netns exec "$ns" "$t" -t raw -A NBLAB-NODELOCAL -d "$a" -p "$p" --dport 53 -j NOTRACK
        ip netns exec "$ns" "$t" -t raw -A NBLAB-NODELOCAL -s "$a" -p "$p" --sport 53 -j NOTRACK
      done
    done
    for chain in PREROUTING OUTPUT; do ipt "$ns" -t raw -I "$chain" -j NBLAB-NODELOCAL; done
  done
  if [ "$1" = off ]; then log "NodeLocal DNSCache off"; return; fi
  kubectl -n kube-system apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: kube-dns-upstream, namespace: kube-system, labels: {k8s-app: kube-dns-upstream}}
spec:
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
YAML
  upstream=$(kubectl -n kube-system get service kube-dns-upstream -o jsonpath='{.spec.clusterIP}')
  sed -e "s/@LOCAL_IP@/$NODELOCAL_IP/g" -e "s/@CLUSTER_DNS@/${addrs[*]:1}/g" -e "s/@UPSTREAM_IP@/$upstream/g" \
    "$LAB/manifests/nodelocaldns.yaml" | kubectl apply -f - >/dev/null
  kubectl -n kube-system rollout status daemonset/node-local-dns --timeout=120s >/dev/null
  log "NodeLocal DNSCache on: every node answers ${addrs[*]} (cache misses go to kube-dns-upstream $upstream)"
}

# cmd_dns_race PCT [NODE]|off: stands in for the conntrack race that drops one of two UDP queries
# a client sends at once from one socket through the Service's DNAT: the node of every CoreDNS
# replica (or of those on NODE only) drops PCT % of the UDP DNS packets to the replica that are
# the second of their flow while the first is still unanswered (conntrack state NEW, 2nd packet:
# glibc's AAAA sent together with its A). Queries sent one at a time, or from separate sockets,
# are never dropped.
cmd_dns_race() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local pct=${1:-} only=${2:-} n name ns node addr prob t
  [ -n "$pct" ] || die "usage: lab.sh dns-race PERCENT [NODE] (e.g. 30 lab-b1) | dns-race off"
  [ -z "$only" ] || node_ns "$only" >/dev/null
  if [ "$pct" != off ] && { ! [[ "$pct" =~ ^[0-9]+$ ]] || [ "$pct" -gt 100 ]; }; then die "dns-race $pct: want a whole percentage 0-100"; fi
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    ns=$(node_ns "$name")
    for t in iptables ip6tables; do
      ip netns exec "$ns" $t -D FORWARD -j NBLAB-DNSRACE 2>/dev/null || true
      ip netns exec "$ns" $t -F NBLAB-DNSRACE 2>/dev/null || true
      ip netns exec "$ns" $t -X NBLAB-DNSRACE 2>/dev/null || true
    done
  done
  if [ "$pct" = off ]; then log "DNS race off"; return; fi
  prob=$(awk -v p="$pct" 'BEGIN { printf "%.4f", p / 100 }')
  while read -r node addr; do
    [ -z "$only" ] || [ "$node" = "$only" ] || continue
    ns=$(node_ns "$node")
    t=iptables
    [[ $addr == *:* ]] && t=ip6tables # an IPv6-primary lab's replica
    ip netns exec "$ns" $t -N NBLAB-DNSRACE 2>/dev/null || true
    ip netns exec "$ns" $t -A NBLAB-DNSRACE -d "$addr" -p udp --dport 53 -m conntrack --ctstate NEW \
      -m connbytes --connbytes 2:2 --connbytes-dir original --connbytes-mode packets \
      -m statistic --mode random --probability "$prob" -j DROP
    ip netns exec "$ns" $t -C FORWARD -j NBLAB-DNSRACE 2>/dev/null || ip netns exec "$ns" $t -I FORWARD -j NBLAB-DNSRACE
  done < <(kubectl -n kube-system get pods -l k8s-app=kube-dns -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.podIP}{"\n"}{end}')
  log "DNS race: $pct % of second queries sent at once on one socket are dropped at ${only:+the }CoreDNS replica${only:+s on $only}${only:-s}"
}

# cmd_dns_pin NODE...|off: the CoreDNS replicas run only on these nodes (one per zone still, by
# the Deployment's spread constraint); "off" lets them run anywhere again. Returns once rolled out.
cmd_dns_pin() {
  local n values
  [ $# -gt 0 ] || die "usage: lab.sh dns-pin NODE... (e.g. lab-a2 lab-b2) | dns-pin off"
  if [ "$1" = off ]; then
    kubectl -n kube-system patch deployment coredns --type=json -p '[{"op":"remove","path":"/spec/template/spec/affinity"}]' >/dev/null 2>&1 || true
  else
    for n in "$@"; do node_ns "$n" >/dev/null; done
    values=$(printf '"%s",' "$@")
    kubectl -n kube-system patch deployment coredns --type=strategic -p \
      "{\"spec\":{\"template\":{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[${values%,}]}]}]}}}}}}}" >/dev/null
  fi
  kubectl -n kube-system rollout status deploy/coredns --timeout=120s >/dev/null
  wait_for 60 "the old CoreDNS pods to go" old_coredns_gone
  log "CoreDNS replicas on: $(kubectl -n kube-system get pods -l k8s-app=kube-dns -o jsonpath='{.items[*].spec.nodeName}')"
}

# old_coredns_gone: no more CoreDNS pods than the Deployment wants.
old_coredns_gone() {
  local want have
  want=$(kubectl -n kube-system get deploy coredns -o jsonpath='{.spec.replicas}')
  have=$(kubectl -n kube-system get pods -l k8s-app=kube-dns -o name | wc -l)
  [ "$have" -le "$want" ]
}
