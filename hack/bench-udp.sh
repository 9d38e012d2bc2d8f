#!/usr/bin/env bash
# The udp probe beside ICMP on the lab's cross-zone pod path (demo: shop-client → shop-api), N
# rounds (default 5). Each round runs one `path --probes rtt,udp` (agents in ephemeral containers
# of the two pods), then iputils ping from the client pod's network namespace with the udp
# probe's count and interval, then with the icmp probe's (both read from that round's report).
# Writes OUT (default benchmarks/UDP.md) — the table of medians and ranges, the machine, the
# versions, the date and this command line — and prints it. Every number in it is measured or
# read from the run.
#   hack/bench-udp.sh [N [OUT]]     (root, lab up: make lab-up)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
out=${2:-benchmarks/UDP.md}
cmdline="hack/bench-udp.sh${*:+ $*}" via=""
[ -n "${MAKELEVEL:-}" ] && via=" (by \`make bench-udp\`)"
load0=$(cut -d' ' -f1 /proc/loadavg) # other work shares the cores: said in the file
# shellcheck source=hack/lab-demo.sh
source hack/lab-demo.sh
pod() { $K -n demo get pod -l "app=$1" -o jsonpath="{.items[0].$2}"; }
cli_ip=$(pod shop-client status.podIP)
cli_node=$(pod shop-client spec.nodeName)
api_ip=$(pod shop-api status.podIP)
api_node=$(pod shop-api spec.nodeName)
zone() { $K get node "$1" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}'; }
netns=
for f in /run/netbench-lab/"$cli_node"/containerd/io.containerd.grpc.v1.cri/netns/*; do
  if nsenter --net="$f" ip -o -4 addr show | grep -q " $cli_ip/"; then netns=$f; fi
done
[ -n "$netns" ] || { echo "no network namespace holds $cli_ip" >&2; exit 1; }
# ping_p50 COUNT INTERVAL_MS: iputils ping's RTT median in µs (from its per-reply lines).
ping_p50() {
  nsenter --net="$netns" ping -n -c "$1" -i "$(awk -v ms="$2" 'BEGIN {print ms / 1000}')" "$api_ip" |
    sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)] * 1000}'
}
rows=()
for i in $(seq "$n"); do
  read -r udp icmp jitter dwell ucount uint icount iint <<<"$(bin/kubectl-netbench path -n demo deploy/shop-client deploy/shop-api --probes rtt,udp -o json |
    jq -r '(.probes[] | select(.name == "udp") | .rtt) as $u | (.probes[] | select(.name == "icmp") | .rtt) as $i |
      [$u.rtt.p50Micros, $i.rtt.p50Micros, $u.jitterMicros, $u.serverDwell.p50Micros, $u.requestedCount, $u.intervalMillis, $i.requestedCount, $i.intervalMillis] | @tsv')"
  p1=$(ping_p50 "$ucount" "$uint")
  p2=$(ping_p50 "$icount" "$iint")
  echo "round $i: udp p50 $udp µs (jitter $jitter, server dwell $dwell taken off) | ping ${ucount} × ${uint} ms $p1 µs | icmp probe ${icount} × ${iint} ms $icmp µs | ping ${icount} × ${iint} ms $p2 µs" >&2
  rows+=("$udp $p1 $icmp $p2 $dwell $(awk -v u="$udp" -v d="$dwell" 'BEGIN {print u + d}')")
done
# stat COLUMN: "median min max" of one column of the rounds.
stat() {
  printf '%s\n' "${rows[@]}" | awk -v c="$1" '{print $c}' | sort -g |
    awk '{a[NR] = $1} END {m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f", m, a[1], a[NR]}'
}
# The last round's counts and intervals name the rows (the plugin's profile sets them; every
# round's are in the lines above).
u="$ucount × $uint ms" c="$icount × $iint ms"
names=("netbench udp ($u; the agent's dwell taken off)" "iputils ping ($u, kernel echo)" "netbench icmp ($c, kernel echo)" "iputils ping ($c, kernel echo)"
  "the server agent's dwell per datagram (kernel receive → answer sent)" "netbench udp with the dwell left in (what an application's UDP server sees)")
load1=$(cut -d' ' -f1 /proc/loadavg)
{
  echo "# The udp probe beside ICMP, on the lab's pod path"
  echo
  echo "Written by \`$cmdline\`$via on $(date -u '+%Y-%m-%d %H:%M UTC')."
  echo
  echo "- Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r); the whole lab shares those cores; load average $load0 when the run started, $load1 when it ended"
  echo "- Versions: $(bin/kubectl-netbench version | paste -sd';' | sed 's/;/; /g'); $(ping -V | head -1)"
  echo "- Path: demo \`shop-client\` ($cli_node, $(zone "$cli_node")) → \`shop-api\` ($api_node, $(zone "$api_node")); the lab's zone delay, loss and MTU settings as they were (this script does not read or change them)"
  echo "- Each round: \`kubectl netbench path -n demo deploy/shop-client deploy/shop-api --probes rtt,udp -o json\`, then iputils ping from the client pod's network namespace (nsenter, as root) at the udp probe's count and interval, then at the icmp probe's; always in that order. Each cell is the median of the rounds' p50s, with the range."
  echo
  echo "| RTT p50, µs ($n rounds) | median | range |"
  echo "|---|---|---|"
  meds=()
  for col in 1 2 3 4 5 6; do
    read -r m a b <<<"$(stat "$col")"
    meds+=("$m")
    echo "| ${names[$((col - 1))]} | $m | $a–$b |"
  done
  echo
  awk -v u="${meds[0]}" -v p="${meds[1]}" 'BEGIN {printf "udp − ping at the same rate: %+.1f µs (medians); udp ÷ ping: %.2f\n", u - p, u / p}'
  echo
  echo "How the dwell is measured and what was tried before, measured once by hand: benchmarks/notes/2026-11-30-udp-dwell.md (not rewritten by this script)."
} >"$out"
cat "$out"
