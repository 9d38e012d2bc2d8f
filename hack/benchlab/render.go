package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
)

// imageGoalBytes is the most the agent image may weigh unpacked.
const imageGoalBytes = 15e6

// rowSpec is one line of a path's table.
type rowSpec struct {
	key, label, ref string
	goal            benchinfo.Goal
}

var iperfN = fmt.Sprintf("iperf3 -P %d", pluginStreams)

var rowSpecs = []rowSpec{
	{"tcp-1 gbps", "TCP 1 stream, Gbit/s received", "iperf3 -P 1", benchinfo.AtLeast(1)},
	{"tcp-1 cpu/gbps", "TCP 1 stream, client CPU % per Gbit/s", "iperf3 -P 1", benchinfo.AtMost(1)},
	{"tcp-1 server cpu/gbps", "TCP 1 stream, server CPU % per Gbit/s", "iperf3 -P 1", benchinfo.Info},
	{tcpN + " gbps", fmt.Sprintf("TCP %d streams, Gbit/s received", pluginStreams), iperfN, benchinfo.AtLeast(1)},
	{tcpN + " cpu/gbps", fmt.Sprintf("TCP %d streams, client CPU %% per Gbit/s", pluginStreams), iperfN, benchinfo.AtMost(1)},
	{tcpN + " server cpu/gbps", fmt.Sprintf("TCP %d streams, server CPU %% per Gbit/s", pluginStreams), iperfN, benchinfo.Info},
	{"icmp p50", "ICMP RTT p50, µs", "iputils ping", benchinfo.WithinMicros(10)},
	{"http p50", "HTTP keep-alive to the app, p50 µs", "fortio runner", benchinfo.WithinPct(3)},
	{"http p99", "HTTP keep-alive to the app, p99 µs", "fortio runner", benchinfo.WithinPct(3)},
	{"max qps", "HTTP closed loop, requests/s", "fortio runner", benchinfo.WithinPct(3)},
	{"max p50", "HTTP closed loop, p50 µs", "fortio runner", benchinfo.Info},
	{"new-conn p50", "HTTP on a new connection, p50 µs", "Go net/http client, same pace: dial to first byte", benchinfo.WithinPct(5)},
	{"new-conn curl", "HTTP on a new connection, p50 µs", "curl back to back: time to first byte", benchinfo.Info},
	{"tcp-rr tps", "tcp-rr, 1 connection, transactions/s", "sockperf ping-pong --tcp", benchinfo.AtLeast(1)},
	{"tcp-rr p50", "tcp-rr, round trip p50 µs", "sockperf ping-pong --tcp --full-rtt", benchinfo.WithinMicros(5)},
	{"udp-rr tps", "udp-rr, 1 socket, transactions/s", "sockperf ping-pong (UDP)", benchinfo.AtLeast(1)},
	{"udp-rr p50", "udp-rr, round trip p50 µs", "sockperf ping-pong (UDP) --full-rtt", benchinfo.WithinMicros(5)},
	{"tcp-rr idle", "tcp-rr, the machine's CPU idle entries per thousand transactions", "sockperf ping-pong --tcp, per thousand answers", benchinfo.Info},
	{"udp-rr idle", "udp-rr, the machine's CPU idle entries per thousand transactions", "sockperf ping-pong (UDP), per thousand answers", benchinfo.Info},
	{"tcp-crr cps", "tcp-crr, connections/s", "fortio runner, keep-alive off, to the app (HTTP)", benchinfo.AtLeast(1)},
	{"tcp-crr p50", "tcp-crr, connection p50 µs", "fortio runner, keep-alive off, to the app (HTTP)", benchinfo.Info},
	{"udp p50", "udp probe RTT p50 µs (server dwell taken off)", "irtt (server processing taken off)", benchinfo.WithinMicros(10)},
}

// eventRows count rare events (none at all, held): their rounds' spread is not the machine's
// drift, and the drift's line leaves them out.
var eventRows = map[string]bool{"tcp-rr idle": true, "udp-rr idle": true}

// env is what the run learned about itself and the machine; render prints it as it is.
type env struct {
	command  string
	via      string // how it was started, if by make
	loadEnd  string // the load average when the run ended
	date     time.Time
	took     time.Duration // from creating the pods to the last measurement
	machine  benchinfo.Machine
	nodes    int
	versions []string
	image    image
	held     string // how the CPUs idle, when HoldCPUs held them; "" when not held
}

// image is the agent image's size as read from its tarball.
type image struct {
	path                 string
	compressed, unpacked int64 // bytes of its layers, as pulled and as unpacked
	err                  error // why it was not measured
}

// readImage reads the layers of a `docker save`-style tarball (what hack/agent-image.sh
// writes): their size as stored, and unpacked.
func readImage(path string) image {
	im := image{path: path}
	f, err := os.Open(path)
	if err != nil {
		im.err = err
		return im
	}
	defer f.Close()
	var layers map[string]bool
	blobs := map[string][2]int64{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			im.err = fmt.Errorf("%s: %w", path, err)
			return im
		}
		switch {
		case h.Name == "manifest.json":
			var m []struct{ Layers []string }
			if err := json.NewDecoder(tr).Decode(&m); err != nil {
				im.err = fmt.Errorf("%s: manifest.json: %w", path, err)
				return im
			}
			layers = map[string]bool{}
			for _, e := range m {
				for _, l := range e.Layers {
					layers[l] = true
				}
			}
		case strings.HasSuffix(h.Name, ".tar.gz"):
			zr, err := gzip.NewReader(tr)
			if err != nil {
				im.err = fmt.Errorf("%s: %s: %w", path, h.Name, err)
				return im
			}
			n, err := io.Copy(io.Discard, zr)
			if err != nil {
				im.err = fmt.Errorf("%s: %s: %w", path, h.Name, err)
				return im
			}
			blobs[h.Name] = [2]int64{h.Size, n}
		}
	}
	if len(layers) == 0 {
		im.err = fmt.Errorf("%s: no manifest.json listing layers", path)
		return im
	}
	for l := range layers {
		b, ok := blobs[l]
		if !ok {
			im.err = fmt.Errorf("%s: layer %s is not a gzip blob in the tarball", path, l)
			return im
		}
		im.compressed, im.unpacked = im.compressed+b[0], im.unpacked+b[1]
	}
	return im
}

func render(c config, e env, m measured) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# kubectl-netbench on the lab's pod paths, beside reference tools in the same pods\n\n")
	fmt.Fprintf(&b, "Written by `%s`%s on %s. From creating the pods to the last measurement it took %s (building and importing the images before, and deleting the pods after, not counted).\n\n",
		e.command, e.via, benchinfo.Stamp(e.date), e.took.Round(time.Second))
	fmt.Fprintf(&b, "- Machine: %d cores (%s), kernel %s; the whole lab (API server, its %d nodes' kubelets, containerd, kube-proxy) shares those cores; load average %s when the run started, %s when it ended\n",
		e.machine.Cores, e.machine.CPU, e.machine.Kernel, e.nodes, e.machine.Load, e.loadEnd)
	fmt.Fprintf(&b, "- Versions: %s\n", strings.Join(e.versions, "; "))
	fmt.Fprintf(&b, "- Pods: a server pod (the lab's sample app, port %d) on %s; one client pod per path; restricted Pod Security, no resource limits\n", appPort, serverNode)
	fmt.Fprintf(&b, "- netbench: `kubectl netbench %s` — agents as ephemeral containers in the two pods\n", strings.Join(pluginArgs(c, "CLIENT"), " "))
	fmt.Fprintf(&b, "- References, run in the same two pods' network namespaces (nsenter) and cgroups (they join the pod's container's cgroups first, so they get the pod's CPU share, as the agents do): iperf3 (-P 1 and -P %d, %gs each, server in the server pod); iputils ping with the probe's count and interval; fortio's runner (GOMAXPROCS=%s and -uniform, as the agent) at the probe's rate and connections against the app's port, and closed loop against an agent server of ours started in the server pod; against that agent server too, a new-connection client built on Go's net/http (not fortio's), paced as the http-new-conn probe (its rate over its connections), and curl, %d requests back to back, each a new process and connection\n",
		pluginStreams, c.seconds, refProcs, c.newConns)
	fmt.Fprintf(&b, "- Rates, also in the same pods: sockperf ping-pong over TCP and UDP (one socket, one message of %d bytes outstanding, --mps=max, round trips timed whole with --full-rtt; its servers in the server pod) beside tcp-rr and udp-rr with --request-size and --response-size %d; fortio's runner with keep-alive off (a connection per request), closed loop with as many clients as tcp-crr, against the app's port, beside tcp-crr — its requests and answers are HTTP's, larger than tcp-crr's; irtt (its server in the server pod, no minimum interval) at the udp probe's interval and %d-byte datagrams for as long as the probe's count takes (irtt's timer sends fewer when it falls behind), beside the udp probe: both take the server's time off, irtt from the server's user-space clock readings, and irtt's client times its answers in user space, after its own wake-up, where the probe reads the kernel's receive stamp\n",
		rrBytes, rrBytes, path.UDPSize)
	fmt.Fprintf(&b, "- %d rounds per path; who goes first alternates, the plugin in the first round; each cell is the median of the rounds with the range (min–max); ratio = netbench median ÷ reference median\n", c.rounds)
	if e.held != "" {
		fmt.Fprintf(&b, "- CPUs: held out of idle while tcp-rr and udp-rr (`kubectl netbench %s`, each round after the plugin's run above) and sockperf run, by one thread per CPU, pinned to it, spinning at SCHED_IDLE (any other task's wake-up preempts it at once); every other row free to idle, as found. This machine's %s. The last table runs tcp-rr, udp-rr and sockperf again with the CPUs free to idle. The idle entries rows count, over the whole machine (/sys/devices/system/cpu/cpu*/cpuidle, polling left out), how often a CPU entered idle per thousand transactions: for tcp-rr and udp-rr as their client agent counted them over the probe, for sockperf from before its process started to after it ended (its start, connection and report included), per answer of its whole run (warm-up included); the drift's line below leaves these rows out\n",
			strings.Join(rrArgs(c, "CLIENT"), " "), e.held)
	} else {
		b.WriteString("- CPUs: free to idle (-hold-cpus=false)\n")
	}
	b.WriteString("\n")
	for _, r := range m.paths {
		renderPath(&b, r, rowSpecs, "")
	}
	renderFaults(&b, c, m.faults)
	renderDNS(&b, c, m.dns)
	renderAsFound(&b, c, m.idle)
	renderNotes(&b, c, e, m)
	return b.String()
}

// renderNotes explains the tables with this run's own figures and the code's parameters only;
// what needs a profiler or a trace is in notesFile, written by hand, which is linked, not quoted.
func renderNotes(b *strings.Builder, c config, e env, m measured) {
	results := m.paths
	b.WriteString("## Reading the tables\n\n")
	var spreads []float64
	ties, ratios := 0, 0
	for _, t := range allTables(m) {
		r := t.result
		for _, s := range t.rows {
			f := r.figures[s.key]
			if f == nil {
				continue
			}
			ratios++
			if reftools.Overlap(f.ours, f.ref) {
				ties++
			}
			if eventRows[s.key] {
				continue
			}
			spreads = append(spreads, reftools.Spread(f.ours))
			if lo, hi := reftools.Range(f.ref); lo != hi { // a reference that never varies is a setting
				spreads = append(spreads, reftools.Spread(f.ref))
			}
		}
	}
	lo, hi := reftools.Range(spreads)
	fmt.Fprintf(b, "- The machine drifts: in this run the rounds of one cell span %.0f–%.0f %% of its median ((max − min) ÷ median; %.0f %% for the median cell), because the whole lab shares the machine's %d cores. A ratio whose two ranges overlap is a tie — %d of the %d ratios above — and \"met\" compares medians only.\n",
		lo, hi, reftools.Median(spreads), e.machine.Cores, ties, ratios)
	fmt.Fprintf(b, "- Throughput: CPU %% per Gbit/s is each tool's own figure of its CPU time in %% of one core, divided by the Gbit/s received. On veth the receiver's stack can run in the sender's context and be charged to it, so the client and server CPU rows are indicative.\n")
	var lower []string
	for _, r := range results {
		if f := r.figures["http p50"]; f != nil {
			n := 0
			for i := range f.ours {
				if f.ours[i] < f.ref[i] {
					n++
				}
			}
			lower = append(lower, fmt.Sprintf("%d of %d rounds (%s)", n, len(f.ours), r.spec.name))
		}
	}
	fmt.Fprintf(b, "- HTTP: both sides are fortio's engine with the same settings (fixed rate, connections taking turns, every request's latency kept, GOMAXPROCS=%s), the agent's in an ephemeral container, the reference in the same pod's cgroups. The agent's keep-alive p50 came out below the reference's in %s.\n",
		refProcs, strings.Join(lower, ", "))
	b.WriteString("- New connections: the probe is fortio's engine, which reads a connection it asked to close until the server's FIN; the Go client and curl stop at the answer's first byte, so the probe's figure includes that wait.\n")
	b.WriteString("- ICMP: the agent runs without privileges (its ICMP method is in the row's label); ping runs as root and chooses its socket itself. Both take the receive time from the kernel.\n")
	renderIdleNote(b, m)
	roles := map[string][2]float64{} // role → highest CPU s, highest peak RSS MiB over every path and round
	for _, r := range results {
		for role, v := range r.cpu {
			_, c := reftools.Range(v)
			_, m := reftools.Range(r.rss[role])
			roles[role] = [2]float64{max(roles[role][0], c), max(roles[role][1], m)}
		}
	}
	var fp []string
	for _, role := range sortedKeys(roles) {
		fp = append(fp, fmt.Sprintf("the %s's at most %s CPU s and %s MiB peak RSS", role, num(roles[role][0]), num(roles[role][1])))
	}
	if len(fp) > 0 {
		fmt.Fprintf(b, "- Footprint: what the agents measured of themselves (getrusage) over a whole `path` run with --duration %gs, on every path and round: %s.\n", c.seconds, strings.Join(fp, "; "))
	}
	if im := e.image; im.err != nil {
		fmt.Fprintf(b, "- Image: not measured (%v).\n", im.err)
	} else {
		met := "met"
		if float64(im.unpacked) > imageGoalBytes {
			met = "not met"
		}
		fmt.Fprintf(b, "- Image: `%s`, the agent image the lab ran: its layers %.1f MB as pulled (compressed), %.1f MB unpacked; goal ≤ %.0f MB unpacked: %s.\n",
			im.path, float64(im.compressed)/1e6, float64(im.unpacked)/1e6, imageGoalBytes/1e6, met)
	}
	fmt.Fprintf(b, "\nProfiles and traces of these probes on the lab, and how the image's size divides, were taken once by hand and are in %s (not rewritten by this command).\n", notesFile)
}

// renderIdleNote compares the same-node path's request/response medians held and free to idle.
func renderIdleNote(b *strings.Builder, m measured) {
	if len(m.idle.figures) == 0 || len(m.paths) == 0 {
		return
	}
	var parts []string
	for _, key := range []string{"tcp-rr tps", "tcp-rr p50", "tcp-rr idle", "udp-rr tps", "udp-rr p50", "udp-rr idle"} {
		held, free := m.paths[0].figures[key], m.idle.figures[key]
		if held == nil || free == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: netbench %s held, %s free; sockperf %s held, %s free", key,
			num(reftools.Median(held.ours)), num(reftools.Median(free.ours)), num(reftools.Median(held.ref)), num(reftools.Median(free.ref))))
	}
	fmt.Fprintf(b, "- Idle CPUs: the same-node medians with the CPUs held and free to idle — %s.\n", strings.Join(parts, "; "))
}

// table is one rendered table: a result and its rows.
type table struct {
	result pathResult
	rows   []rowSpec
}

// allTables lists every table the file renders: the paths', the faults', DNS's, and the
// same-node request/response rows with the CPUs free to idle.
func allTables(m measured) []table {
	var ts []table
	for _, r := range m.paths {
		ts = append(ts, table{r, rowSpecs})
	}
	return append(ts, table{m.faults, faultRows}, table{m.dns, dnsRows}, table{m.idle, asFoundRows})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// renderFaults prints the faulted path's table and how it was measured.
func renderFaults(b *strings.Builder, c config, r pathResult) {
	if len(r.figures) == 0 {
		return // not measured (-only)
	}
	intro := fmt.Sprintf("The lab's faults, one after the other, on the cross-zone path (%d rounds each): `hack/lab/lab.sh udp-loss %s %d` (%d %% of the UDP that node forwards dropped, each way), then the udp probe (`kubectl netbench %s`) and irtt alternate as above; then `hack/lab/lab.sh bottleneck %s %s fifo %s` (a rate limit with a FIFO of that many bytes on the node's uplink), and loaded-rtt (`kubectl netbench %s`) runs while iputils ping, in the client pod, sends an echo every %s; ping's replies time-stamped within the probe's sampling window (its report's sampledFrom–sampledUntil) are the reference. The jitter row is shown, not judged: irtt's is the mean |IPDV| over pairs of adjacent sequence numbers both answered, from its user-space time stamps; the probe's is RFC 3550's running estimate (gain 1/16) over successive answers, across lost datagrams, from the kernel's — alike only in expectation.\n\n",
		c.rounds, faultPath.node, lossPercent, lossPercent, strings.Join(faultArgs("CLIENT", "udp"), " "), faultPath.node, bottleneckRate, bottleneckDepth, strings.Join(faultArgs("CLIENT", "loaded-rtt"), " "), pingAlongside)
	renderPath(b, r, faultRows, intro)
}

// renderDNS prints the DNS capacity table and how it was measured.
func renderDNS(b *strings.Builder, c config, r pathResult) {
	if len(r.figures) == 0 {
		return // not measured (-only)
	}
	intro := fmt.Sprintf("%s. %d rounds, who goes first alternating: `kubectl netbench %s` (the Service alone: the budget is under two of the ramp's shares; the pod's own query mix, as its resolver expands the name) and dnsperf in the same pod's network namespace, against the same Service address, with the query mix of the plugin's latest run, %d sockets, open loop at each step's rate; dnsperf is ramped by the plugin's own search (doubling, then halving the span geometrically to within the ramp's resolution) at the ramp's step length and timeout, each step judged by the report's criteria on dnsperf's own counts and per-query latencies (loss, the p99 budget, and keeping pace — for dnsperf its answers over the step's length, where the ramp counts the answers of the step's second half); a step where dnsperf sent less than the ramp's generator share, or got SERVFAIL or REFUSED, ends the run; each side's knee is the rate sent at its highest step that passed. A CPU-limited server's capacity moves from minute to minute (its throttling): the rounds' ranges say by how much.\n\n",
		r.detail, c.rounds, strings.Join(dnsArgs("CLIENT"), " "), reftools.DNSPerfSockets)
	renderPath(b, r, dnsRows, intro)
}

// renderAsFound prints the request/response rows measured with the CPUs free to idle.
func renderAsFound(b *strings.Builder, c config, r pathResult) {
	if len(r.figures) == 0 {
		return // not measured (-only, or -hold-cpus=false)
	}
	intro := fmt.Sprintf("The CPUs no longer held: %d rounds, who goes first alternating, of `kubectl netbench %s` and sockperf's ping-pong over TCP and UDP as above. A request/response loop waits for each answer asleep; a CPU with nothing else to run enters idle, and the next answer waits for it to wake: the idle entries rows count how often per thousand transactions. How often each tool's waits pay that is the machine's and the tool's runtime's, not the path's: these rows are shown, not judged.\n\n",
		c.rounds, strings.Join(rrArgs(c, "CLIENT"), " "))
	renderPath(b, r, asFoundRows, intro)
}

// renderPath prints a path's heading, intro (if any) and table of rows.
func renderPath(b *strings.Builder, r pathResult, rows []rowSpec, intro string) {
	fmt.Fprintf(b, "## %s\n\n%s", r.spec.name, intro)
	fmt.Fprintf(b, "| figure | netbench | reference | ref tool | ratio | goal | met |\n|---|---:|---:|---|---:|---|---|\n")
	for _, s := range rows {
		f := r.figures[s.key]
		if f == nil {
			continue
		}
		om, rm := reftools.Median(f.ours), reftools.Median(f.ref)
		met := "—"
		if s.goal.Met != nil {
			met = "yes"
			if !s.goal.Met(om, rm) {
				met = "**no**"
			}
		}
		label := s.label
		if s.key == "icmp p50" {
			label += fmt.Sprintf(" (agent: %s)", r.method)
		}
		ratio := "—" // a reference of none: no ratio
		if rm > 0 {
			ratio = fmt.Sprintf("%.3f", om/rm)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", label, cell(f.ours), cell(f.ref), s.ref, ratio, s.goal.Text, met)
	}
	if r.icmpSkipped != "" {
		fmt.Fprintf(b, "\nICMP RTT: not measured by the agent from this client (%s), so not compared with ping.\n", r.icmpSkipped)
	}
	for _, role := range sortedKeys(r.rss) {
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
