# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# The lab bridge, one network namespace per node, routes, and the zone delay.

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
