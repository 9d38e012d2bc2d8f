# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# Logging, process bookkeeping and templates.

log() { printf '[lab %5ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
die() { echo "lab: $*" >&2; exit 1; }

kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

pidfile() { echo "$RUN/pids/$1.pid"; }
running() { local f; f=$(pidfile "$1"); [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

# render TEMPLATE KEY=VALUE...: the file hack/lab/templates/TEMPLATE with every @KEY@ replaced;
# a placeholder left unfilled is an error.
render() {
  local name=$1 text kv; shift
  text=$(<"$LAB/templates/$name")
  for kv in "$@"; do text=${text//"@${kv%%=*}@"/"${kv#*=}"}; done
  if [[ $text =~ @[A-Z_]+@ ]]; then die "template $name: ${BASH_REMATCH[0]} not filled"; fi
  printf '%s\n' "$text"
}

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

# stop NAME: ends the process start recorded as NAME (SIGTERM, SIGKILL after 5 s) and forgets
# it; nothing if none is recorded. An exited process counts as gone before it is reaped (this
# machine's init may take a second or more to reap the daemons it inherits).
stop() {
  local f pid st
  f=$(pidfile "$1")
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    st=$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null || true)
    if [ -z "$st" ] || [ "$st" = Z ]; then break; fi
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

wait_for() { # wait_for SECONDS DESCRIPTION CMD...
  local t=$1 what=$2; shift 2
  local end=$(( $(date +%s) + t ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "timed out after ${t}s waiting for $what (logs: $STATE/logs)"
    sleep 0.2
  done
}

# lab_setting NAME: a setting chosen at `lab.sh up` (LAB_NETWORK_POLICY, LAB_PROXY_MODE, LAB_IP_FAMILY), as
# recorded in $STATE/settings.env for later commands; before that, the environment's or the default.
lab_setting() {
  local v=""
  if [ -f "$STATE/settings.env" ]; then
    v=$(sed -n "s/^$1=//p" "$STATE/settings.env")
    # A lab brought up before the families were a setting is IPv4 only.
    if [ -z "$v" ] && [ "$1" = LAB_IP_FAMILY ]; then v=4; fi
  fi
  if [ -z "$v" ]; then
    case "$1" in
      LAB_NETWORK_POLICY) v=${LAB_NETWORK_POLICY:-1} ;;
      LAB_PROXY_MODE) v=${LAB_PROXY_MODE:-iptables} ;;
      LAB_IP_FAMILY) v=${LAB_IP_FAMILY:-4,6} ;;
    esac
  fi
  echo "$v"
}

# The lab's IPv6 addresses follow its IPv4 ones: node 10.77.0.11 is fd77::11, and its pod range
# 10.244.1.0/24 is fd00:10:244:1::/64.
ip6_of() { echo "fd77::${1##*.}"; }
# host_prefix ADDR: the address as a host route's prefix (/32, or /128 for IPv6).
host_prefix() { case $1 in *:*) echo "$1/128" ;; *) echo "$1/32" ;; esac; }
cidr6_of() { local c=${1%.0/24}; echo "fd00:10:244:${c##*.}::/64"; }

# by_family V4 V6: the lab's values of both families in its order, comma-separated: V4,V6 on a
# dual-stack lab with IPv4 primary (LAB_IP_FAMILY=4,6, the default), V6,V4 with IPv6 primary
# (6,4), V4 alone on an IPv4-only lab (4).
by_family() {
  case "$(lab_setting LAB_IP_FAMILY)" in
    4) echo "$1" ;;
    6,4) echo "$2,$1" ;;
    *) echo "$1,$2" ;;
  esac
}
primary_of() { local v; v=$(by_family "$1" "$2"); echo "${v%%,*}"; }
has_ipv6() { [ "$(lab_setting LAB_IP_FAMILY)" != 4 ]; }

# ipt NETNS ARGS...: iptables in the node's namespace NETNS, and ip6tables too on a lab with IPv6
# (for rules that name no address); both always run, and the status is non-zero if either failed.
ipt() {
  local ns=$1 rc=0; shift
  ip netns exec "$ns" iptables "$@" || rc=$?
  if has_ipv6; then ip netns exec "$ns" ip6tables "$@" || rc=$?; fi
  return "$rc"
}

# ipt_ensure NETNS TABLE "-A CHAIN"|"-I CHAIN [POS]" RULE...: adds the rule in each family whose
# table lacks it (checked with -C), so that a rule one family already has is not added twice.
ipt_ensure() {
  local ns=$1 table=$2 add=$3 bin; shift 3
  local chain; chain=$(awk '{print $2}' <<<"$add")
  for bin in iptables ip6tables; do
    if [ "$bin" = ip6tables ] && ! has_ipv6; then continue; fi
    # shellcheck disable=SC2086 # $add is an operation and its chain (and position): split on purpose
    ip netns exec "$ns" "$bin" -t "$table" -C "$chain" "$@" 2>/dev/null ||
      ip netns exec "$ns" "$bin" -t "$table" $add "$@"
  done
}
