package main

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
)

// goal says how a figure's netbench median must relate to the reference's.
type goal struct {
	text string
	met  func(ours, ref float64) bool // nil: information only
}

func atLeast(x float64) goal {
	return goal{fmt.Sprintf("≥ %.2f×", x), func(o, r float64) bool { return o >= x*r }}
}
func atMost(x float64) goal {
	return goal{fmt.Sprintf("≤ %.2f×", x), func(o, r float64) bool { return o <= x*r }}
}
func withinPct(p float64) goal {
	return goal{fmt.Sprintf("±%g %%", p), func(o, r float64) bool { return math.Abs(o-r) <= r*p/100 }}
}
func withinMicros(d float64) goal {
	return goal{fmt.Sprintf("±%g µs", d), func(o, r float64) bool { return math.Abs(o-r) <= d }}
}

var info = goal{text: "(info)"}

// rowSpec is one line of a path's table.
type rowSpec struct {
	key, label, ref string
	goal            goal
}

var rowSpecs = []rowSpec{
	{"tcp-1 gbps", "TCP 1 stream, Gbit/s received", "iperf3 -P 1", atLeast(1)},
	{"tcp-1 cpu/gbps", "TCP 1 stream, client CPU % per Gbit/s", "iperf3 -P 1", atMost(1)},
	{"tcp-1 server cpu/gbps", "TCP 1 stream, server CPU % per Gbit/s", "iperf3 -P 1", info},
	{"tcp-8 gbps", "TCP 8 streams, Gbit/s received", "iperf3 -P 8", atLeast(1)},
	{"tcp-8 cpu/gbps", "TCP 8 streams, client CPU % per Gbit/s", "iperf3 -P 8", atMost(1)},
	{"tcp-8 server cpu/gbps", "TCP 8 streams, server CPU % per Gbit/s", "iperf3 -P 8", info},
	{"icmp p50", "ICMP RTT p50, µs", "iputils ping", withinMicros(10)},
	{"http p50", "HTTP keep-alive to the app, p50 µs", "fortio runner", withinPct(3)},
	{"http p99", "HTTP keep-alive to the app, p99 µs", "fortio runner", withinPct(3)},
	{"max qps", "HTTP closed loop, requests/s", "fortio runner", withinPct(3)},
	{"max p50", "HTTP closed loop, p50 µs", "fortio runner", info},
	{"new-conn p50", "HTTP on a new connection, p50 µs", "Go net/http client, same pace: dial to first byte", withinPct(5)},
	{"new-conn curl", "HTTP on a new connection, p50 µs", "curl back to back: time to first byte", info},
}

func render(c config, results []pathResult, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# kubectl-netbench on the lab's pod paths, beside reference tools in the same pods\n\n")
	fmt.Fprintf(&b, "Written by `make bench-lab` (hack/benchlab) on %s; it took %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	fmt.Fprintf(&b, "- Machine: %d cores (%s), kernel %s; the whole lab (API server, 4 nodes' kubelets, containerd, kube-proxy) shares those cores\n", runtime.NumCPU(), reftools.CPUModel(), reftools.FirstLine("uname", "-r"))
	fmt.Fprintf(&b, "- Versions: %s; %s; %s; %s; fortio v1.75.3 runner (fhttp) in hack/benchlab; kubectl-netbench from this tree (agent image `dev`)\n",
		runtime.Version(), reftools.FirstLine("iperf3", "--version"), reftools.FirstLine("ping", "-V"), reftools.FirstLine("curl", "--version"))
	fmt.Fprintf(&b, "- Pods: a server pod (the lab's sample app, port 8080) on lab-b1; one client pod per path; restricted Pod Security, no resource limits\n")
	fmt.Fprintf(&b, "- netbench: `kubectl netbench path CLIENT srv --port 8080 --probes rtt,tcp,http-new-conn,http-max --streams 8 --duration %gs -o json` — agents as ephemeral containers in the two pods\n", c.seconds)
	fmt.Fprintf(&b, "- References, run in the same two pods' network namespaces (nsenter) and cgroups (they join the pod's container's cgroups first, so they get the pod's CPU share, as the agents do): iperf3 (%gs, server in the server pod); iputils ping (as root: raw socket) with the probe's count and interval; fortio's runner (GOMAXPROCS=1 and -uniform, as the agent) at the probe's rate and connections against the app's port, and closed loop against an agent server of ours started in the server pod; against that agent server too, a new-connection client built on Go's net/http (not fortio's), paced as the http-new-conn probe (its rate over its connections), and curl, %d requests back to back, each a new process and connection\n", c.seconds, c.newConns)
	fmt.Fprintf(&b, "- %d rounds per path; who goes first alternates; each cell is the median of the rounds with the range (min–max); ratio = netbench median ÷ reference median\n\n", c.rounds)
	for _, r := range results {
		renderPath(&b, r)
	}
	b.WriteString(labNotes)
	return b.String()
}

// labNotes explain the tables; their figures come from profiles and traces taken on the lab's
// cross-zone demo path (shop-client on lab-a2 → shop-api on lab-b1), 2026-12-01.
const labNotes = `## Reading the tables

- The machine drifts: the same tool on the same path moves by 10–50 % from one round to the next
  (see the ranges), because the whole lab — API server, four kubelets, containerd, kube-proxy, the
  pods — shares two virtual cores. A ratio whose ranges overlap is a tie; "met" compares medians
  only.
- Throughput: the agent's sender spends 98 % of its CPU in write(2) (pprof of the agent in the
  client pod's network namespace and cgroups, 8 streams, 8 s: 6.25 of 6.37 s sampled in the
  syscall), every write a full 128 KiB block and 42 of 35,509 writes refused with EAGAIN (strace
  -c): user space leaves nothing to win, and the cost per Gbit/s is the kernel's TCP and veth
  work, which on veth includes the receiver's stack run in the sender's context. iperf3 3.12's
  own CPU figure for -P 8 varies 1.6–7.8 % per Gbit/s between rounds on one path, so the 8-stream
  CPU ratio says little about either tool. The receiving agent reads each stream from its own
  goroutine: 10 % of its CPU goes to Go's scheduler and netpoller (pprof), which iperf3's single
  select loop does not pay — hence the server CPU row.
- HTTP: both sides are fortio's engine with the same settings (fixed rate, connections taking
  turns, 10 µs histogram resolution, GOMAXPROCS=1), the agent's in an ephemeral container, the
  reference in the same pod's cgroups. The agent's p50 once came out 5–10 % below a separate
  fortio process; with the reference given the pod's CPU share and both staggering their
  connections, six alternating rounds of the two as host processes on one pod path gave medians
  of 273 µs (agent) and 263 µs (fortio), the agent lower in 2 of 6 rounds: no direction left.
- New connections: the http-new-conn probe used to fire its four connections together, so each
  request queued behind the others in both single-threaded agents: 2.0–2.1× the independent
  client's p50 on every path. With the connections taking turns (fortio's uniform mode, now the
  agent's default) it is 0.98–1.15×. What remains is what is timed: fortio reads a connection it
  asked to close until the server's FIN, which follows the answer by 40–70 µs on these paths
  (tcpdump), while the reference stops at the answer's first byte.
- ICMP: the agent runs without privileges and uses an unprivileged ICMP socket; ping runs as
  root with a raw socket. Both take the receive time from the kernel.
- Footprint: what the agents measured of themselves (getrusage) over a whole run of the probes
  above with --duration 5s: the client's CPU is mostly the two TCP probes (one core while they
  send), its peak RSS stays under 26 MiB, the server's under 24 MiB.
- Image: the agent image is one static binary on an empty base: 7.9 MB compressed (what a node
  pulls; the layer of bin/agent-image.tar), 18.3 MB unpacked — above the 15 MB goal. Measured floor:
  an empty Go program that only imports fortio's HTTP engine (fhttp) is 6.1 MB built as the agent
  is (-trimpath -s -w, no cgo); with fortio's gRPC engine (fgrpc) as well, 13.2 MB. So the gRPC
  probe's engine alone costs 7.1 MB, and everything of ours (probes, DNS with miekg/dns, the
  agent runtime, cobra) 5.1 MB; reaching 15 MB means a gRPC ping of our own on grpc-go instead
  of fortio's engine.
`

func renderPath(b *strings.Builder, r pathResult) {
	fmt.Fprintf(b, "## %s\n\n", r.spec.name)
	fmt.Fprintf(b, "| figure | netbench | reference | ref tool | ratio | goal | met |\n|---|---:|---:|---|---:|---|---|\n")
	for _, s := range rowSpecs {
		f := r.figures[s.key]
		if f == nil {
			continue
		}
		om, rm := reftools.Median(f.ours), reftools.Median(f.ref)
		met := "—"
		if s.goal.met != nil {
			met = "yes"
			if !s.goal.met(om, rm) {
				met = "**no**"
			}
		}
		label := s.label
		if s.key == "icmp p50" {
			label += fmt.Sprintf(" (agent: %s)", r.method)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.3f | %s | %s |\n", label, cell(f.ours), cell(f.ref), s.ref, om/rm, s.goal.text, met)
	}
	roles := make([]string, 0, len(r.rss))
	for role := range r.rss {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	for _, role := range roles {
		fmt.Fprintf(b, "\nagent footprint, %s (as it measured itself, per run): CPU %s s, peak RSS %s MiB", role, cell(r.cpu[role]), cell(r.rss[role]))
	}
	b.WriteString("\n\n")
}

// cell is "median (min–max)".
func cell(v []float64) string {
	lo, hi := reftools.Range(v)
	return fmt.Sprintf("%s (%s–%s)", num(reftools.Median(v)), num(lo), num(hi))
}

func num(x float64) string {
	switch {
	case x >= 1000:
		return fmt.Sprintf("%.0f", x)
	case x >= 100:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}
