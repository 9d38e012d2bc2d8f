#!/usr/bin/env bash
# The udp probe beside ICMP on the lab's cross-zone pod path (demo: shop-client → shop-api), N
# rounds (default 5), alternating in the same two pods: our udp probe (1000 datagrams, 1 ms
# apart) and icmp probe (20 echoes, 50 ms apart) from one `path` run, and iputils ping from the
# client pod's network namespace at both rates. Prints a Markdown table of medians and ranges.
#   hack/bench-udp.sh [N]     (root, lab up: make lab-up)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
# shellcheck source=hack/lab-demo.sh
source hack/lab-demo.sh
cli_ip=$($K -n demo get pod -l app=shop-client -o jsonpath='{.items[0].status.podIP}')
cli_node=$($K -n demo get pod -l app=shop-client -o jsonpath='{.items[0].spec.nodeName}')
api_ip=$($K -n demo get pod -l app=shop-api -o jsonpath='{.items[0].status.podIP}')
netns=
for f in /run/netbench-lab/"$cli_node"/containerd/io.containerd.grpc.v1.cri/netns/*; do
  if nsenter --net="$f" ip -o -4 addr show | grep -q " $cli_ip/"; then netns=$f; fi
done
[ -n "$netns" ] || { echo "no network namespace holds $cli_ip" >&2; exit 1; }
# ping_p50 COUNT INTERVAL: iputils ping's RTT median in µs (from its per-reply lines).
ping_p50() {
  nsenter --net="$netns" ping -n -c "$1" -i "$2" "$api_ip" | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' |
    sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)] * 1000}'
}
rows=()
for i in $(seq "$n"); do
  read -r udp icmp jitter dwell <<<"$(bin/kubectl-netbench path -n demo deploy/shop-client deploy/shop-api --probes rtt,udp -o json |
    jq -r '[(.probes[] | select(.name == "udp") | .rtt.rtt.p50Micros), (.probes[] | select(.name == "icmp") | .rtt.rtt.p50Micros),
      (.probes[] | select(.name == "udp") | .rtt.jitterMicros), (.probes[] | select(.name == "udp") | .rtt.serverDwell.p50Micros)] | @tsv')"
  p1=$(ping_p50 1000 0.001)
  p50=$(ping_p50 20 0.05)
  echo "round $i: udp p50 $udp µs (jitter $jitter, server dwell $dwell taken off) | ping 1 ms $p1 µs | icmp probe 50 ms $icmp µs | ping 50 ms $p50 µs" >&2
  rows+=("$udp $p1 $icmp $p50 $dwell $(awk -v u="$udp" -v d="$dwell" 'BEGIN {print u + d}')")
done
# stat COLUMN: "median min max" of one column of the rounds.
stat() {
  printf '%s\n' "${rows[@]}" | awk -v c="$1" '{print $c}' | sort -g |
    awk '{a[NR] = $1} END {m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f", m, a[1], a[NR]}'
}
names=("netbench udp (1000 × 1 ms; the agent's dwell taken off)" "iputils ping (1000 × 1 ms, kernel echo)" "netbench icmp (20 × 50 ms, kernel echo)" "iputils ping (20 × 50 ms, kernel echo)"
  "the server agent's dwell per datagram (kernel receive → answer sent)" "netbench udp with the dwell left in (what an application's UDP server sees)")
echo "| RTT p50, µs ($n rounds, $(nproc) cores) | median | range |"
echo "|---|---|---|"
meds=()
for c in 1 2 3 4 5 6; do
  read -r m a b <<<"$(stat "$c")"
  meds+=("$m")
  echo "| ${names[$((c - 1))]} | $m | $a–$b |"
done
echo
awk -v u="${meds[0]}" -v p="${meds[1]}" 'BEGIN {printf "udp − ping at the same rate: %+.1f µs (medians); udp ÷ ping: %.2f\n", u - p, u / p}'
