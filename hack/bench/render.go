package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
)

// env is what the run learned about itself and the machine; render prints it as it is.
type env struct {
	command  string
	via      string // how it was started, if by make
	loadEnd  string // the load average when the run ended
	date     time.Time
	took     time.Duration
	machine  benchinfo.Machine
	versions []string
}

func render(c config, e env, rows []row) string {
	var b strings.Builder
	first := "the reference"
	if oursFirst(0) {
		first = "netbench"
	}
	ms := rttInterval.Milliseconds()
	fmt.Fprintf(&b, "# kubectl-netbench engines vs reference tools\n\n")
	fmt.Fprintf(&b, "Written by `%s`%s on %s; it took %s.\n\n", e.command, e.via, benchinfo.Stamp(e.date), e.took.Round(time.Second))
	fmt.Fprintf(&b, "- Machine: %d cores (%s), kernel %s; load average %s when the run started, %s when it ended\n",
		e.machine.Cores, e.machine.CPU, e.machine.Kernel, e.machine.Load, e.loadEnd)
	fmt.Fprintf(&b, "- Path: two network namespaces joined by a veth pair on this machine; client in one, servers in the other\n")
	fmt.Fprintf(&b, "- Versions: %s\n", strings.Join(e.versions, "; "))
	fmt.Fprintf(&b, "- Throughput (%s streams): %gs per run, %d rounds; who goes first alternates, %s in the first round; each cell is the median of the rounds with the range (min–max)\n",
		joinInts(streamCounts), c.tputSecs, c.rounds, first)
	fmt.Fprintf(&b, "- HTTP keep-alive (%d qps over %d connections, against the same agent server): %gs per run, %d rounds; who goes first alternates, %s in the first round, between netbench and fortio's runner, run twice in a row (GOMAXPROCS=%s, then Go's default); each cell is the median of the rounds with the range (min–max)\n",
		httpQPS, httpConns, c.httpSecs, c.httpRounds, first, oneThread)
	fmt.Fprintf(&b, "- RTT: one run of each, no rounds — iputils ping first (%d echoes, %d ms apart), then netbench's icmp and tcp-rtt probes in one job, one after the other (%d each, %d ms apart); each cell is that run's figure\n\n",
		c.rttCount, ms, c.rttCount, ms)
	fmt.Fprintf(&b, "| measurement | metric | netbench | reference | ref tool | ratio | goal | met |\n")
	fmt.Fprintf(&b, "|---|---|---:|---:|---|---:|---|---|\n")
	for _, r := range rows {
		om, rm := reftools.Median(r.ours), reftools.Median(r.ref)
		ratio := "n/a"
		if rm != 0 {
			ratio = fmt.Sprintf("%.3f", om/rm)
		}
		met := "—"
		if r.goal.Met != nil {
			met = "yes"
			if !r.goal.Met(om, rm) {
				met = "**no**"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.what, r.metric, cell(r.ours), cell(r.ref), r.refTool, ratio, r.goal.Text, met)
	}
	renderNotes(&b, rows)
	return b.String()
}

// renderNotes explains the table with this run's own figures and the code's parameters only;
// what needed a profiler or another library is in notesFile, written by hand, which is linked.
func renderNotes(b *strings.Builder, rows []row) {
	b.WriteString("\n## Reading the table\n\n")
	var spreads []float64
	ties, ratios := 0, 0
	for _, r := range rows {
		if len(r.ours) < 2 {
			continue
		}
		spreads = append(spreads, reftools.Spread(r.ours), reftools.Spread(r.ref))
		ratios++
		if reftools.Overlap(r.ours, r.ref) {
			ties++
		}
	}
	if len(spreads) > 0 {
		lo, hi := reftools.Range(spreads)
		fmt.Fprintf(b, "- The machine drifts: in this run the rounds of one cell span %.0f–%.0f %% of its median ((max − min) ÷ median). A ratio whose two ranges overlap is a tie — %d of the %d ratios with rounds. The RTT cells are one run each and show no range.\n",
			lo, hi, ties, ratios)
	}
	b.WriteString("- Throughput: the agent's sender writes every stream from one OS thread without blocking, and the agent runs on one OS thread at a time unless GOMAXPROCS says otherwise (agent.LimitProcs). \"CPU % per Gbps\" is each tool's own figure of its user+system time in % of one core, divided by the Gbps received; on veth the receiver's softirq work is charged to whichever process happens to run it, so this column is indicative.\n")
	for _, r := range rows {
		if r.refTool != oneThreadTool || r.goal.Met == nil {
			continue
		}
		below := 0
		for i := range r.ours {
			if i < len(r.ref) && r.ours[i] < r.ref[i] {
				below++
			}
		}
		fmt.Fprintf(b, "- HTTP: both columns are fortio's engine (fhttp, every request's latency kept) against the same agent server; the agent wraps it. In this run netbench's p50 was below that of fortio's runner with GOMAXPROCS=%s in %d of %d rounds.\n",
			oneThread, below, len(r.ours))
	}
	b.WriteString("- ICMP: the agent stamps the send time just before sendto(2) and takes the receive time from the kernel (SO_TIMESTAMPNS); ping also takes the receive time from the kernel, and stamps its send time before building and checksumming the packet.\n")
	b.WriteString("- TCP-connect RTT is the kernel's own handshake RTT sample (TCP_INFO right after connect); the time connect(2) took as the process saw it is reported beside it (connectLatency).\n")
	fmt.Fprintf(b, "\nCPU profiles of both tools and an earlier ICMP library's figures on this path were taken once by hand and are in %s (not rewritten by this command).\n", notesFile)
}

// cell is "median (min–max)", or the one figure of a single run.
func cell(v []float64) string {
	if len(v) == 1 {
		return fmt.Sprintf("%.2f", v[0])
	}
	lo, hi := reftools.Range(v)
	return fmt.Sprintf("%.2f (%.2f–%.2f)", reftools.Median(v), lo, hi)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, " and ")
}
