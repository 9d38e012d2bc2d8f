# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# The lab bridge, one network namespace per node, routes, and the zone delay.

setup_network() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "creating the lab network ($(by_family IPv4 IPv6))"
    ip link add "$BRIDGE" type bridge
    ip addr add "$HOST_IP/24" dev "$BRIDGE"
    if has_ipv6; then ip addr add "$HOST_IP6/64" dev "$BRIDGE" nodad; fi
    ip link set "$BRIDGE" up
  fi
  # Bridged frames may pass the host's iptables (br_netfilter): let the lab's through.
  local t
  for t in iptables ip6tables; do
    [ $t = ip6tables ] && ! has_ipv6 && continue
    $t -C FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment netbench-lab -j ACCEPT 2>/dev/null ||
      $t -I FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment netbench-lab -j ACCEPT
  done
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
      if has_ipv6; then
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.forwarding=1
        ip -n "$ns" addr add "$(ip6_of "$ip")/64" dev eth0 nodad
        ip -n "$ns" -6 route add unreachable default
      fi
    fi
    ip route replace "$cidr" via "$ip" dev "$BRIDGE"
    if has_ipv6; then ip -6 route replace "$(cidr6_of "$cidr")" via "$(ip6_of "$ip")" dev "$BRIDGE"; fi
    for m in "${NODES[@]}"; do
      read -r oname _ oip ocidr <<<"$m"
      [ "$oname" = "$name" ] && continue
      ip -n "$ns" route replace "$ocidr" via "$oip" dev eth0
      if has_ipv6; then ip -n "$ns" -6 route replace "$(cidr6_of "$ocidr")" via "$(ip6_of "$oip")" dev eth0; fi
    done
  done
}

# Zone latency: each node holds its egress to another node for the one-way delay of that pair's
# class (queue 1: same zone, queue 2: cross zone). Same-node traffic never leaves the node.
# A slow node (lab.sh slow-node NODE EXTRA) adds EXTRA to both queues of its own delay line, so
# every path from that node to another one is EXTRA longer one way (and its round trips too).
cmd_delay() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local same=${1:-} cross=${2:-}
  [ -n "$same" ] || die "usage: lab.sh delay SAME CROSS (one-way, e.g. 200us 1ms) | delay off"
  mkdir -p "$RUN"
  if [ "$same" = off ]; then echo off >"$RUN/delay.state"; else echo "$same $cross" >"$RUN/delay.state"; fi
  for n in "${NODES[@]}"; do
    read -r name zone _ <<<"$n"
    local ns=nblab-${name#lab-}
    local f; f=$(pidfile "delay-$name")
    if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; fi
    ipt "$ns" -t mangle -N NBLAB-DELAY 2>/dev/null || true
    ipt "$ns" -t mangle -F NBLAB-DELAY
    ipt_ensure "$ns" mangle "-A POSTROUTING" -o eth0 -j NBLAB-DELAY
    local extra q1=$same q2=$cross
    extra=$(cat "$RUN/slow-$name" 2>/dev/null || true)
    if [ "$same" = off ]; then
      [ -n "$extra" ] || continue
      q1=$extra q2=$extra
    elif [ -n "$extra" ]; then
      q1=$same$extra q2=$cross$extra # Go durations add up when written one after another
    fi
    for m in "${NODES[@]}"; do
      read -r oname ozone oip ocidr <<<"$m"
      [ "$oname" = "$name" ] && continue
      local q=2
      [ "$ozone" = "$zone" ] && q=1
      for dst in "$oip" "$ocidr"; do
        ip netns exec "$ns" iptables -t mangle -A NBLAB-DELAY -d "$dst" -j NFQUEUE --queue-num $q --queue-bypass
      done
      if has_ipv6; then
        for dst in "$(ip6_of "$oip")" "$(cidr6_of "$ocidr")"; do
          ip netns exec "$ns" ip6tables -t mangle -A NBLAB-DELAY -d "$dst" -j NFQUEUE --queue-num $q --queue-bypass
        done
      fi
    done
    start "delay-$name" "$ns" "$BIN/delay" "1=$q1" "2=$q2"
  done
  if [ "$same" = off ]; then log "zone delay off"; else log "zone delay on: same zone $same, cross zone $cross one way"; fi
}

# A slow node: everything it sends to other nodes waits EXTRA longer, on top of the zone delay
# (its pods' round trips with every other node grow by EXTRA); "off" ends it.
cmd_slow_node() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local node=${1:-} extra=${2:-}
  [ -n "$extra" ] || die "usage: lab.sh slow-node NODE EXTRA (one-way, e.g. lab-b1 1ms) | slow-node NODE off"
  node_ns "$node" >/dev/null
  mkdir -p "$RUN"
  if [ "$extra" = off ]; then
    rm -f "$RUN/slow-$node"
  else
    [[ "$extra" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || die "slow-node $extra: want a duration such as 500us or 2ms"
    echo "$extra" >"$RUN/slow-$node"
  fi
  # shellcheck disable=SC2046
  cmd_delay $(cat "$RUN/delay.state" 2>/dev/null || echo off)
  if [ "$extra" = off ]; then log "$node: no longer slow"; else log "$node: $extra slower one way to every other node"; fi
}

# Loss: the node drops a share of the UDP it forwards to and from its pods (DNS, port 53, is
# spared so the pods keep resolving), with iptables' statistic match in the node's namespace.
cmd_udp_loss() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local node=${1:-} pct=${2:-}
  [ -n "$pct" ] || die "usage: lab.sh udp-loss NODE PERCENT (e.g. lab-b1 20) | udp-loss NODE off"
  local ns; ns=$(node_ns "$node")
  ipt "$ns" -N NBLAB-LOSS 2>/dev/null || true
  ipt "$ns" -F NBLAB-LOSS
  ipt_ensure "$ns" filter "-I FORWARD" -j NBLAB-LOSS
  if [ "$pct" = off ]; then
    ipt "$ns" -D FORWARD -j NBLAB-LOSS
    ipt "$ns" -X NBLAB-LOSS
    log "$node: UDP loss off"
    return
  fi
  if ! [[ "$pct" =~ ^[0-9]+$ ]] || [ "$pct" -gt 100 ]; then die "udp-loss $pct: want a whole percentage 0-100"; fi
  local p; p=$(awk -v p="$pct" 'BEGIN { printf "%.4f", p / 100 }')
  ipt "$ns" -A NBLAB-LOSS -p udp -m multiport ! --ports 53 -m statistic --mode random --probability "$p" -j DROP
  log "$node: drops $pct % of the UDP it forwards (each direction, port 53 spared)"
}

# MTU: the pod side of a node gets a smaller MTU, as a pool behind a narrower link would: its
# pods' eth0 and their veth peers on the node's cni0 bridge (which then routes at that MTU and
# answers larger don't-fragment packets with ICMP "fragmentation needed"). "off" puts 1500 back.
# Pods started later keep the CNI's 1500.
cmd_mtu() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local node=${1:-} mtu=${2:-} ns
  [ -n "$mtu" ] || die "usage: lab.sh mtu NODE BYTES (e.g. lab-b1 1400) | mtu NODE off"
  ns=$(node_ns "$node")
  [ "$mtu" = off ] && mtu=1500
  if ! [[ "$mtu" =~ ^[0-9]+$ ]] || [ "$mtu" -lt 576 ] || [ "$mtu" -gt 9000 ]; then die "mtu $mtu: want 576-9000 bytes"; fi
  # Below 1280 the kernel takes IPv6 off the interfaces for good (its addresses with it).
  if has_ipv6 && [ "$mtu" -lt 1280 ]; then die "mtu $mtu: IPv6 needs at least 1280 bytes (this lab has IPv6; LAB_IP_FAMILY=4 for smaller)"; fi
  local n=0 f v
  for f in "$RUN/$node"/containerd/io.containerd.grpc.v1.cri/netns/*; do
    [ -e "$f" ] || continue
    nsenter --net="$f" ip link set eth0 mtu "$mtu" 2>/dev/null && n=$((n + 1))
  done
  for v in $(ip -n "$ns" -o link show master cni0 | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
    ip -n "$ns" link set "$v" mtu "$mtu"
  done
  log "$node: MTU $mtu on the pod side ($n pod(s) and their veth peers; cni0 follows)"
}

# node_ns prints a lab node's network namespace, or dies naming the nodes.
node_ns() {
  local n
  for n in "${NODES[@]}"; do
    read -r name _ <<<"$n"
    if [ "$name" = "$1" ]; then echo "nblab-${name#lab-}"; return; fi
  done
  die "node ${1:-(none)}: want one of lab-a1 lab-a2 lab-b1 lab-b2"
}

# Bottleneck: what the node forwards out of its uplink (its pods' traffic to other nodes) leaves
# at RATE at most, held meanwhile in a queue of DEPTH bytes run by DISCIPLINE: "fifo" (tail
# drop: a saturating transfer fills it, and every other packet leaving the node waits behind it
# for up to DEPTH ÷ RATE: bufferbloat) or "fq_codel" (a queue per flow served in turn, each kept
# near 5 ms by CoDel: a sparse flow waits for little more than the packet on the wire). This
# kernel has neither netem nor fq_codel: the lab's delay program runs the queue in user space, on
# NFQUEUE 3 from mangle FORWARD (before the zone delay's, which it adds to). "off" removes it.
cmd_bottleneck() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local node=${1:-} rate=${2:-} disc=${3:-} depth=${4:-} ns
  [ -n "$rate" ] || die "usage: lab.sh bottleneck NODE RATE fifo|fq_codel DEPTH (e.g. lab-a1 50mbit fifo 1000000) | bottleneck NODE off"
  ns=$(node_ns "$node")
  local f pid; f=$(pidfile "bottleneck-$node")
  if [ -f "$f" ]; then
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    # The new queue's program can bind queue 3 only once the old one has let it go.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$f"
  fi
  ipt "$ns" -t mangle -N NBLAB-BOTTLENECK 2>/dev/null || true
  ipt "$ns" -t mangle -F NBLAB-BOTTLENECK
  if [ "$rate" = off ]; then
    ipt "$ns" -t mangle -D FORWARD -o eth0 -j NBLAB-BOTTLENECK 2>/dev/null || true
    ipt "$ns" -t mangle -X NBLAB-BOTTLENECK
    log "$node: no bottleneck"
    return
  fi
  [[ "$rate" =~ ^[0-9]+(k|m|g)bit$ ]] || die "bottleneck rate $rate: want e.g. 50mbit"
  case "$disc" in fifo | fq_codel) ;; *) die "bottleneck discipline ${disc:-(none)}: want fifo or fq_codel" ;; esac
  { [[ "$depth" =~ ^[0-9]+$ ]] && [ "$depth" -ge 3000 ]; } || die "bottleneck depth ${depth:-(none)}: want bytes, 3000 at least"
  start "bottleneck-$node" "$ns" "$BIN/delay" "3=$rate/$disc/$depth"
  sleep 0.3
  running "bottleneck-$node" || die "$node: the bottleneck did not start: $(tail -2 "$STATE/logs/bottleneck-$node.log")"
  ipt "$ns" -t mangle -A NBLAB-BOTTLENECK -j NFQUEUE --queue-num 3 --queue-bypass
  ipt_ensure "$ns" mangle "-A FORWARD" -o eth0 -j NBLAB-BOTTLENECK
  log "$node: uplink at $rate through $disc, $depth bytes deep"
}
