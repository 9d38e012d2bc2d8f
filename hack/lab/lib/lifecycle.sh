# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# up, status, down and check-clean.

deploy_addons() {
  sed -e "s/@CLUSTER_DNS@/$CLUSTER_DNS/g" -e "s/@UPSTREAM@/$HOST_IP/g" "$LAB/manifests/coredns.yaml" | kubectl apply -f - >/dev/null
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
  wait_for 120 "${#NODES[@]} Ready nodes" bash -c "[ \$('$BIN/kubectl' --kubeconfig '$KUBECONFIG_PATH' get nodes --no-headers 2>/dev/null | grep -cw Ready) = ${#NODES[@]} ]"
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
  # The pods' network namespaces were mounts under each node's containerd state in $RUN (unmounted
  # above, removed with $RUN below); the nodes' own are the lab's by name.
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
  for f in /run/netns/nblab-*; do [ -e "$f" ] && report "network namespace $f"; done
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
