#!/usr/bin/env bash
# The lab: a real Kubernetes cluster with four worker nodes in two zones, on this machine.
#
#   hack/lab/lab.sh up | down | status | kubeconfig | ca | check-clean | delay SAME CROSS | delay off
#                   udp-loss NODE PERCENT|off | mtu NODE BYTES|off | slow-node NODE EXTRA|off
#                   proxy-mode iptables|nftables|ipvs | outside | wan-delay ONEWAY|off | …
#
# Settings of `up`: LAB_NETWORK_POLICY=1 (default; 0 turns it off) runs kube-network-policies on
# every node, so NetworkPolicies are enforced; LAB_PROXY_MODE=iptables (default), nftables or ipvs
# is kube-proxy's mode (proxy-mode switches a running lab); LAB_IP_FAMILY=4,6 (default) makes a
# dual-stack cluster with IPv4 primary, 6,4 one with IPv6 primary, 4 an IPv4-only one;
# LAB_WAN_DELAY=2ms starts with the outside host's WAN delay on (wan-delay switches it).
#
# This file holds the settings and dispatches; lib/ holds the steps, templates/ the configs
# (rendered with @KEY@ placeholders).
#
# Every node is a network namespace with its own IP on a lab bridge, its own containerd, kubelet
# and kube-proxy. The control plane (etcd, kube-apiserver, controller-manager, scheduler) and
# the lab's upstream DNS run on the bridge's host address; a router on the bridge leads to the
# outside host (lib/outside.sh). Nothing leaves the machine.
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
# IPv6 (LAB_IP_FAMILY 4,6 or 6,4): each node's address and pod range follow its IPv4 ones
# (lib/common.sh ip6_of, cidr6_of: 10.77.0.11 is fd77::11, 10.244.1.0/24 is fd00:10:244:1::/64).
HOST_IP6=fd77::1
SERVICE_CIDR6=fd00:10:96::/112
CLUSTER_DNS6=fd00:10:96::a
CLUSTER_CIDR6=fd00:10:244::/56
REGION=lab-region-1
# name zone node-ip pod-cidr
NODES=(
  "lab-a1 zone-a 10.77.0.11 10.244.1.0/24"
  "lab-a2 zone-a 10.77.0.12 10.244.2.0/24"
  "lab-b1 zone-b 10.77.0.13 10.244.3.0/24"
  "lab-b2 zone-b 10.77.0.14 10.244.4.0/24"
)
# This node's runtime leaves its pods' net.ipv4.ping_group_range at the kernel's "1 0"
# (containerd's enable_unprivileged_icmp off, its default before 2.0): without CAP_NET_RAW, no
# process in a pod there may ping unless the pod asks for the sysctl itself.
NO_PING_NODE=lab-b2
# LAB_FOURTH_SEARCH=1 adds a 4th search domain to every pod, as EKS's <region>.compute.internal.
LAB_FOURTH_SEARCH=${LAB_FOURTH_SEARCH:-0}
# Names the lab's upstream DNS answers; everything else is NXDOMAIN.
UPSTREAM_NAMES=${LAB_UPSTREAM_NAMES:-"example.com www.example.com api.example.com netbench.example.org big.example.com"}
UPSTREAM_ADDR=10.77.0.250 # the address those names resolve to (nothing listens there)
# The outside host (lib/outside.sh): a host beyond the nodes, behind a router on the bridge that
# the nodes route it through, SNATing their pods to their own address as a cloud node does. All
# addresses are documentation prefixes and stay on this machine; its name is in the upstream DNS.
ROUTER_IP=10.77.0.254          # nblab-rt on the bridge (fd77::fe with IPv6)
ROUTER_IP6=fd77::fe
WAN_CIDR=198.51.100.0/24       # between nblab-rt (.1) and nblab-out (.10)
WAN_CIDR6=2001:db8:5100::/64
ROUTER_WAN_IP=198.51.100.1
ROUTER_WAN_IP6=2001:db8:5100::1
OUTSIDE_IP=198.51.100.10
OUTSIDE_IP6=2001:db8:5100::10
OUTSIDE_NAME=outside.lab
# LoadBalancer addresses (hack/lab/lb, run by lib/outside.sh): the router forwards each to the
# nodes a cloud load balancer would; this machine and the outside host reach them through it.
# Within the lab's own 10.77.0.0/16: the documentation prefixes 192.0.2.0/24 and
# 203.0.113.0/24 may be this machine's own network or its package proxy's.
LB_POOL=10.77.64.0/24
LB_POOL6=2001:db8:5300::/112
# Where the nodes' containerd finds the lab's private registry (plain HTTP; the e2e tests serve
# one there with basic auth, for --image-pull-secret).
REGISTRY=$HOST_IP:5000

START=$(date +%s)

# shellcheck source=hack/lab/lib/common.sh
source "$LAB/lib/common.sh"
# shellcheck source=hack/lab/lib/build.sh
source "$LAB/lib/build.sh"
# shellcheck source=hack/lab/lib/certs.sh
source "$LAB/lib/certs.sh"
# shellcheck source=hack/lab/lib/network.sh
source "$LAB/lib/network.sh"
# shellcheck source=hack/lab/lib/outside.sh
source "$LAB/lib/outside.sh"
# shellcheck source=hack/lab/lib/control-plane.sh
source "$LAB/lib/control-plane.sh"
# shellcheck source=hack/lab/lib/node.sh
source "$LAB/lib/node.sh"
# shellcheck source=hack/lab/lib/lifecycle.sh
source "$LAB/lib/lifecycle.sh"

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kubeconfig) echo "$KUBECONFIG_PATH" ;;
  ca) echo "$STATE/pki/ca.crt" ;;
  check-clean) cmd_check_clean ;;
  delay) shift; cmd_delay "$@" ;;
  images) cmd_images ;;
  import) shift; cmd_import "$@" ;;
  search4) shift; cmd_search4 "$@" ;;
  udp-loss) shift; cmd_udp_loss "$@" ;;
  mtu) shift; cmd_mtu "$@" ;;
  slow-node) shift; cmd_slow_node "$@" ;;
  bottleneck) shift; cmd_bottleneck "$@" ;;
  dns-autopath) shift; cmd_dns_autopath "$@" ;;
  nodelocaldns) shift; cmd_nodelocaldns "$@" ;;
  dns-race) shift; cmd_dns_race "$@" ;;
  dns-pin) shift; cmd_dns_pin "$@" ;;
  proxy-mode) shift; cmd_proxy_mode "$@" ;;
  outside) cmd_outside ;;
  wan-delay) shift; cmd_wan_delay "$@" ;;
  *) echo "usage: $0 up|down|status|kubeconfig|ca|check-clean|delay SAME CROSS|delay off|images|import TAR...|search4 on|off|udp-loss NODE PCT|off|mtu NODE BYTES|off|slow-node NODE EXTRA|off|bottleneck NODE RATE fifo|fq_codel DEPTH|off|dns-autopath on|off|nodelocaldns on|off|dns-race PCT [NODE]|off|dns-pin NODE...|off|proxy-mode iptables|nftables|ipvs|outside|wan-delay ONEWAY|off" >&2; exit 2 ;;
esac
