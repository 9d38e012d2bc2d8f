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
	return b.String()
}

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
