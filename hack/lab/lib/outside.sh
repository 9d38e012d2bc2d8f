# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# The outside host: a router (netns nblab-rt) on the bridge and, beyond it, a host (nblab-out)
# serving test/apps/outside; every node routes the outside's prefix through the router and
# SNATs its pods to its own address on the way, as a cloud node does for destinations outside
# the cluster; the WAN delay holds what the router forwards.
#
#   node eth0 ── nblab0 ── eth0 10.77.0.254 [nblab-rt] wan0 198.51.100.1 ── eth0 198.51.100.10 [nblab-out]
#                              fd77::fe                   2001:db8:5100::1       2001:db8:5100::10

RT_NS=nblab-rt
OUT_NS=nblab-out

# setup_outside builds what is missing of the router, the outside host and the nodes' routes
# and SNAT, and starts the outside's servers and (if its state says so) the WAN delay. Like
# setup_network it can run again on a running lab; it never takes anything down that works.
setup_outside() {
  gen_server_cert outside "$OUTSIDE_NAME"
  setup_router
  setup_outside_host
  setup_host_route
  local n name cidr
  for n in "${NODES[@]}"; do
    read -r name _ _ cidr <<<"$n"
    setup_node_egress "nblab-${name#lab-}" "$cidr"
  done
  # A server still running a binary since rebuilt gives way to the new one.
  if running outside && [[ "$(readlink "/proc/$(cat "$(pidfile outside)")/exe")" == *" (deleted)" ]]; then
    stop outside
  fi
  start outside "$OUT_NS" "$BIN/outside" -cert "$STATE/pki/outside.crt" -key "$STATE/pki/outside.key"
  wait_for 10 "the outside host's servers" nsenter --net="/run/netns/$OUT_NS" curl -sf "http://$OUTSIDE_IP/"
  start_lb
  if [ "$(wan_delay_state)" = off ] || ! running wan-delay; then apply_wan_delay; fi
}

# setup_router: nblab-rt, its leg on the bridge (host end nbl-rt) and its WAN veth wan0 whose
# other end is the outside host's eth0. It routes only between those two networks.
setup_router() {
  [ -e "/run/netns/$RT_NS" ] || ip netns add "$RT_NS"
  [ -e "/run/netns/$OUT_NS" ] || ip netns add "$OUT_NS"
  ip link show nbl-rt >/dev/null 2>&1 || ip link add nbl-rt type veth peer name eth0 netns "$RT_NS"
  ip link set nbl-rt master "$BRIDGE" up
  ip -n "$RT_NS" link show wan0 >/dev/null 2>&1 || ip -n "$RT_NS" link add wan0 type veth peer name eth0 netns "$OUT_NS"
  ip -n "$RT_NS" addr replace "$ROUTER_IP/24" dev eth0
  ip -n "$RT_NS" addr replace "$ROUTER_WAN_IP/${WAN_CIDR#*/}" dev wan0
  ip netns exec "$RT_NS" sysctl -qw net.ipv4.ip_forward=1
  ip -n "$RT_NS" route replace unreachable default
  # The load balancer's addresses: connections spread over the nodes by addresses and ports,
  # and no redirect tells this machine (on the same bridge) to skip the router.
  ip netns exec "$RT_NS" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
  ip netns exec "$RT_NS" sysctl -qw net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.default.send_redirects=0
  ip netns exec "$RT_NS" sysctl -qw net.ipv4.conf.eth0.send_redirects=0
  if has_ipv6; then
    ip netns exec "$RT_NS" sysctl -qw net.ipv6.conf.all.forwarding=1
    ip netns exec "$RT_NS" sysctl -qw net.ipv6.fib_multipath_hash_policy=1
    ip netns exec "$RT_NS" ip6tables -C OUTPUT -p icmpv6 --icmpv6-type redirect -j DROP 2>/dev/null ||
      ip netns exec "$RT_NS" ip6tables -A OUTPUT -p icmpv6 --icmpv6-type redirect -j DROP
    ip -n "$RT_NS" addr replace "$ROUTER_IP6/64" dev eth0 nodad
    ip -n "$RT_NS" addr replace "$ROUTER_WAN_IP6/${WAN_CIDR6#*/}" dev wan0 nodad
    ip -n "$RT_NS" -6 route replace unreachable default
  fi
  local l
  for l in lo eth0 wan0; do ip -n "$RT_NS" link set "$l" up; done
}

# setup_outside_host: nblab-out's address and its one way out, the router.
setup_outside_host() {
  ip -n "$OUT_NS" addr replace "$OUTSIDE_IP/${WAN_CIDR#*/}" dev eth0
  ip -n "$OUT_NS" link set lo up
  ip -n "$OUT_NS" link set eth0 up
  ip -n "$OUT_NS" route replace default via "$ROUTER_WAN_IP" dev eth0
  if has_ipv6; then
    ip -n "$OUT_NS" addr replace "$OUTSIDE_IP6/${WAN_CIDR6#*/}" dev eth0 nodad
    ip -n "$OUT_NS" -6 route replace default via "$ROUTER_WAN_IP6" dev eth0
  fi
}

# setup_host_route: the lab's host (the API server, the registry) answers the outside host
# through the router, as a cluster's API endpoint answers a machine outside it: a kubectl run
# from nblab-out (ip netns exec) is a client outside the cluster, entering by NodePorts.
setup_host_route() {
  ip route replace "$WAN_CIDR" via "$ROUTER_IP" dev "$BRIDGE"
  ip route replace "$LB_POOL" via "$ROUTER_IP" dev "$BRIDGE"
  if has_ipv6; then
    ip -6 route replace "$WAN_CIDR6" via "$ROUTER_IP6" dev "$BRIDGE"
    ip -6 route replace "$LB_POOL6" via "$ROUTER_IP6" dev "$BRIDGE"
  fi
}

# start_lb: the lab's LoadBalancer controller (hack/lab/lb) on this machine, setting the
# router's routes of the addresses it gives; it waits for the API server itself.
start_lb() {
  if running lb && [[ "$(readlink "/proc/$(cat "$(pidfile lb)")/exe")" == *" (deleted)" ]]; then
    stop lb
  fi
  local pool6=()
  if has_ipv6; then pool6=(-pool6 "$LB_POOL6"); fi
  start lb - "$BIN/lb" -kubeconfig "$KUBECONFIG_PATH" -netns "$RT_NS" -pool4 "$LB_POOL" "${pool6[@]}"
}

# setup_node_egress NETNS POD-CIDR: the node routes the outside's prefix through the router,
# and masquerades what its pods send there to its eth0 address (nat POSTROUTING, chain
# NBLAB-OUTSIDE, after kube-proxy's own jump), in each of the lab's families. The rules are
# added where missing, never flushed: a running pod's traffic keeps its translation.
setup_node_egress() {
  local ns=$1 cidr=$2
  ip -n "$ns" route replace "$WAN_CIDR" via "$ROUTER_IP" dev eth0
  if has_ipv6; then ip -n "$ns" -6 route replace "$WAN_CIDR6" via "$ROUTER_IP6" dev eth0; fi
  # A router made anew has a new MAC address: the node forgets the old one at once rather than
  # black-holing the outside until its neighbour entry goes stale.
  ip -n "$ns" neigh flush to "$ROUTER_IP" 2>/dev/null || true
  if has_ipv6; then ip -n "$ns" -6 neigh flush to "$ROUTER_IP6" 2>/dev/null || true; fi
  ipt "$ns" -t nat -N NBLAB-OUTSIDE 2>/dev/null || true
  ipt_ensure "$ns" nat "-A POSTROUTING" -j NBLAB-OUTSIDE
  local rule=(-s "$cidr" -d "$WAN_CIDR" -m comment --comment "netbench-lab: pods to the outside as the node" -j MASQUERADE)
  ip netns exec "$ns" iptables -t nat -C NBLAB-OUTSIDE "${rule[@]}" 2>/dev/null ||
    ip netns exec "$ns" iptables -t nat -A NBLAB-OUTSIDE "${rule[@]}"
  if has_ipv6; then
    rule=(-s "$(cidr6_of "$cidr")" -d "$WAN_CIDR6" -m comment --comment "netbench-lab: pods to the outside as the node" -j MASQUERADE)
    ip netns exec "$ns" ip6tables -t nat -C NBLAB-OUTSIDE "${rule[@]}" 2>/dev/null ||
      ip netns exec "$ns" ip6tables -t nat -A NBLAB-OUTSIDE "${rule[@]}"
  fi
}

# teardown_outside: the router and the outside host (their daemons end with the other pids;
# the nodes' routes and rules go with the nodes' namespaces).
teardown_outside() {
  ip netns delete "$RT_NS" 2>/dev/null || true
  ip netns delete "$OUT_NS" 2>/dev/null || true
  ip link delete nbl-rt 2>/dev/null || true
}

wan_delay_state() { cat "$RUN/wan-delay.state" 2>/dev/null || echo off; }

# apply_wan_delay: the router's WAN delay as its state file says: every packet the router
# forwards (both ways, both families: mangle FORWARD, chain NBLAB-WAN) waits in the lab's
# delay program (NFQUEUE 1 in nblab-rt) for the one-way delay; "off": no program, no rule.
apply_wan_delay() {
  local d; d=$(wan_delay_state)
  ipt "$RT_NS" -t mangle -N NBLAB-WAN 2>/dev/null || true
  ipt "$RT_NS" -t mangle -F NBLAB-WAN
  ipt_ensure "$RT_NS" mangle "-A FORWARD" -j NBLAB-WAN
  stop wan-delay
  [ "$d" = off ] && return 0
  start wan-delay "$RT_NS" "$BIN/delay" "1=$d"
  sleep 0.3
  running wan-delay || die "the WAN delay did not start: $(tail -2 "$STATE/logs/wan-delay.log")"
  ipt "$RT_NS" -t mangle -A NBLAB-WAN -j NFQUEUE --queue-num 1 --queue-bypass
}

# wan-delay ONEWAY|off: the router holds every packet it forwards for ONEWAY (a round trip
# through it grows by twice that); kept in $RUN/wan-delay.state like the zone delay's.
cmd_wan_delay() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local d=${1:-}
  [ -n "$d" ] || die "usage: lab.sh wan-delay ONEWAY (e.g. 2ms) | wan-delay off"
  if [ "$d" != off ] && ! [[ "$d" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]]; then
    die "wan-delay $d: want a one-way duration such as 500us or 2ms, or off"
  fi
  [ -e "/run/netns/$RT_NS" ] || die "no router $RT_NS: the lab is not up (or predates it: lab.sh outside)"
  mkdir -p "$RUN"
  echo "$d" >"$RUN/wan-delay.state"
  apply_wan_delay
  if [ "$d" = off ]; then log "WAN delay off"; else log "WAN delay on: $d one way through the router"; fi
}

# outside: (re)applies the outside host to a running lab (built, certified, wired, served,
# named in the upstream DNS), leaving alone what already works.
cmd_outside() {
  [ "$(id -u)" = 0 ] || die "run as root"
  ip link show "$BRIDGE" >/dev/null 2>&1 || die "the lab is not up (no bridge $BRIDGE)"
  build_program outside ./test/apps/outside
  build_program lb ./hack/lab/lb
  setup_outside
  refresh_upstream_dns
  log "outside host $OUTSIDE_NAME: $(by_family "$OUTSIDE_IP" "$OUTSIDE_IP6") (HTTPS :443, HTTP :80, echo :7, gRPC :50051, gRPC over TLS :50443; CA $STATE/pki/ca.crt), router $(by_family "$ROUTER_IP" "$ROUTER_IP6"), WAN delay $(wan_delay_state)"
}
