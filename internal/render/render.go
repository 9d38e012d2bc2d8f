package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Write renders v as "json", "yaml", or, for "", the human report.
func Write(w io.Writer, format string, v *report.PathReport) error {
	switch format {
	case "":
		return Human(w, v)
	case FormatOpenMetrics:
		return WritePathMetrics(w, v)
	case FormatJUnit:
		return WriteJUnit(w, "path "+v.Source.Namespace+"/"+v.Source.Pod+" → "+v.Destination.Namespace+"/"+v.Destination.Pod, "netbench.path", v.StartTime, v.Timing, v.Checks)
	}
	return writeMachineOrText(w, format, v, func(w io.Writer) error { return Human(w, v) })
}

// Output formats beyond json and yaml.
const (
	FormatOpenMetrics = "openmetrics"
	FormatJUnit       = "junit"
)

// Bits formats a rate in bits per second.
func Bits(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2f Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.1f Mbit/s", bps/1e6)
	default:
		return fmt.Sprintf("%.0f kbit/s", bps/1e3)
	}
}

// Human writes the report as tables with units, sample counts and resolutions.
func Human(w io.Writer, r *report.PathReport) error {
	fmt.Fprintf(w, "kubectl netbench path: %s → %s\n", report.EndpointName(r.Source), report.EndpointName(r.Destination))
	mode := "ephemeral containers in both pods"
	switch {
	case r.WayIn != nil:
		mode = "the client on this machine, an ephemeral container in DST's pod"
	case r.Destination.External != "" && r.Mode == "pod":
		mode = fmt.Sprintf("a temporary pod (%s) on SRC's node", r.Source.AgentPod)
	case r.Destination.External != "":
		mode = "an ephemeral container in SRC's pod"
	case r.Mode == "pod":
		mode = fmt.Sprintf("temporary pods (%s → %s)", r.Source.AgentPod, r.Destination.AgentPod)
	}
	class := r.Path.Class
	if r.Path.Reason != "" {
		class += " (" + r.Path.Reason + ")"
	}
	fmt.Fprintf(w, "path: %s   agents: %s   profile: %s\n", class, mode, r.Profile)
	if r.Path.Dataplane != nil {
		fmt.Fprintf(w, "dataplane: %s\n", r.Path.Dataplane)
	}
	if r.IPFamily != "" {
		fmt.Fprintf(w, "IP family: %s\n", r.IPFamily)
	}
	if wi := r.WayIn; wi != nil {
		fmt.Fprintf(w, "way in: %s (temporary Service %s, %s, externalTrafficPolicy %s); this machine %s, the pod saw %s (%s)\n",
			wi.Address, wi.Service, wi.Via, wi.ExternalTrafficPolicy, wi.Client, wi.Seen, strings.TrimSpace(wi.SeenIs+" "+wi.SeenNode))
	}
	writeProbes(w, "agent to agent", r.Probes)
	if len(r.AppPort) > 0 {
		writeProbes(w, "to the destination app's port", r.AppPort)
	}
	writeRounds(w, r)
	writeFamilies(w, r)
	if r.Cost != nil {
		c := r.Cost
		fmt.Fprintf(w, "\nCross-zone cost (estimate): this run moved %s across the zone boundary = $%.4f at $%.3f/GB × 2 sides; 1 Gbit/s sustained for 30 days = $%.0f.\n",
			report.BytesText(c.BytesCrossedZone), c.RunCostUSD, c.PricePerGBUSD, c.MonthlyUSDPerGbps)
	}
	if c := r.EgressCost; c != nil {
		fmt.Fprintf(w, "\nEgress cost (estimate): through a NAT or egress gateway at $%.3f/GB (--egress-price-per-gb), 1 Gbit/s sustained for 30 days = $%.0f; the destination's own Internet egress price comes on top.\n",
			c.PricePerGBUSD, c.MonthlyUSDPerGbps)
	}
	writePolicy(w, r.Policy)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
	switch {
	case len(r.Skipped) == 0 && r.WayIn != nil:
		fmt.Fprintln(w, "skipped: none (the server agent ran as non-root without capabilities; the client is this process, as its user; ICMP is not measured: it ends at the address entered)")
	case len(r.Skipped) == 0:
		fmt.Fprintln(w, "skipped: none (the agents ran as non-root without capabilities)")
	}
	writeValidity(w, pathValidity(r)...)
	writeFootprint(w, r.AgentFootprint, append(append([]*v1alpha1.ProbeResult(nil), r.Probes...), r.AppPort...))
	writeChecks(w, r.Checks)
	writeFooter(w, r.Warnings, r.Timing)
	return nil
}

// writeFootprint says what the agents cost, client then server, and the client's CPU per probe.
func writeFootprint(w io.Writer, fp map[string]v1alpha1.Footprint, results []*v1alpha1.ProbeResult) {
	var parts []string
	for _, role := range []string{"client", "server"} {
		if f, ok := fp[role]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f CPU s, peak RSS %.1f MiB", role, f.CPUSeconds, float64(f.PeakRSSBytes)/(1<<20)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "agents (as they measured themselves): %s\n", strings.Join(parts, "; "))
	}
	var perProbe []string
	for _, r := range results {
		if r != nil && r.CPUSeconds > 0 {
			perProbe = append(perProbe, fmt.Sprintf("%s %.2f", r.Name, r.CPUSeconds))
		}
	}
	if len(perProbe) > 0 {
		fmt.Fprintf(w, "client agent CPU s per probe: %s\n", strings.Join(perProbe, ", "))
	}
}

// writeChecks prints each --fail-if condition and how it came out.
func writeChecks(w io.Writer, checks []v1alpha1.CheckResult) {
	if len(checks) == 0 {
		return
	}
	fmt.Fprintln(w, "\nchecks (--fail-if: the run fails when a condition holds)")
	for _, c := range checks {
		verdict := "ok    "
		if c.Violated {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "  %s %s   (%s)\n", verdict, c.Condition, c.Message)
	}
}

// writeFooter prints a report's warnings and where its wall time went.
func writeFooter(w io.Writer, warnings []string, t report.Timing) {
	for _, s := range warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	var phases []string
	for _, p := range t.Phases {
		phases = append(phases, fmt.Sprintf("%s %.1f s", p.Name, p.Seconds))
	}
	fmt.Fprintf(w, "\nwall %.1f s = measuring %.1f s + overhead %.1f s (%s)\n", t.WallSeconds, t.MeasuringSeconds, t.OverheadSeconds, strings.Join(phases, ", "))
}

// writeProbes writes the sections of a list of probe results: RTT, request latency, TCP
// throughput and path MTU, each where a result has it.
func writeProbes(w io.Writer, title string, results []*v1alpha1.ProbeResult) {
	var rtt, http, grpc, rates, tput, mtu, loaded, out []*v1alpha1.ProbeResult
	for _, r := range results {
		switch {
		case r.Egress != nil:
			out = append(out, r)
		case r.Loaded != nil:
			loaded = append(loaded, r)
		case r.Rate != nil:
			rates = append(rates, r)
		case r.PMTU != nil:
			mtu = append(mtu, r)
		case r.RTT != nil:
			rtt = append(rtt, r)
		case r.HTTP != nil:
			http = append(http, r)
		case r.GRPC != nil:
			grpc = append(grpc, r)
		case r.Throughput != nil:
			tput = append(tput, r)
		}
	}
	if len(rtt) > 0 {
		writeRTT(w, title, rtt)
	}
	if len(http) > 0 || len(grpc) > 0 {
		writeRequests(w, title, http, grpc)
	}
	if len(rates) > 0 {
		writeRates(w, title, rates)
	}
	if len(tput) > 0 {
		writeThroughput(w, title, tput)
	}
	for _, r := range mtu {
		writePMTU(w, title, r)
	}
	for _, r := range loaded {
		writeLoaded(w, title, r)
	}
	for _, r := range out {
		writeEgress(w, r)
	}
}

// writeRTT writes the RTT table of the results with an RTT block, and the UDP probes' jitter and
// server dwell.
func writeRTT(w io.Writer, title string, rtt []*v1alpha1.ProbeResult) {
	fmt.Fprintf(w, "\nRTT, %s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "probe\tmethod\treplies\tloss\tmin\tp50\tavg\tp99\tmax\tmdev\ttimestamps\t")
	for _, r := range rtt {
		x := r.RTT
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%.1f %%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", report.Marked(r), x.Method, x.Received, x.Sent, x.LossPercent,
			report.Micros(x.RTT.MinMicros), report.Micros(x.RTT.P50Micros), report.Micros(x.RTT.AvgMicros), report.Micros(x.RTT.P99Micros), report.Micros(x.RTT.MaxMicros), report.Micros(x.MdevMicros), x.Timestamps)
	}
	tw.Flush()
	fmt.Fprintln(w, "  percentiles exact (nearest rank over every reply)")
	for _, r := range rtt {
		if r.Kind == v1alpha1.ProbeUDP {
			fmt.Fprintf(w, "  %s: jitter %s (RFC 3550 estimator over successive round trips), %d datagrams at %.3g ms intervals\n",
				r.Name, report.Micros(r.RTT.JitterMicros), r.RTT.Sent, r.RTT.IntervalMillis)
			if d := r.RTT.ServerDwell; d != nil && d.Count > 0 {
				fmt.Fprintf(w, "  %s: the server agent held each datagram %s (p50; p99 %s) from the kernel's receive to its answer's transmit: taken off each round trip\n",
					r.Name, report.Micros(d.P50Micros), report.Micros(d.P99Micros))
			}
		}
	}
}

// writeRequests writes the request latency table of the HTTP and gRPC results, what their
// percentiles come from, Little's law for closed loops, errors by kind and the first HTTP
// probe's histogram.
func writeRequests(w io.Writer, title string, http, grpc []*v1alpha1.ProbeResult) {
	fmt.Fprintf(w, "\nRequest latency, %s (fortio engine)\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "probe\tconns\tqps asked\tqps done\trequests\terrors\tmin\tp50\tp90\tp99\tp99.9\tmax\t")
	row := func(name string, conns int, asked, done float64, n, errs int64, l v1alpha1.Latency) {
		a := "max"
		if asked > 0 {
			a = fmt.Sprintf("%.0f", asked)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, conns, a, done, n, errs,
			report.Micros(l.MinMicros), report.Micros(l.P50Micros), report.Micros(l.P90Micros), report.Micros(l.P99Micros), report.Micros(l.P999Micros), report.Micros(l.MaxMicros))
	}
	var lats []namedLatency
	for _, r := range http {
		h := r.HTTP
		row(report.Marked(r)+" ("+h.Mode+")", h.Connections, h.RequestedQPS, h.AchievedQPS, h.Requests, h.Errors, h.Latency)
		lats = append(lats, namedLatency{r.Name, h.Latency})
	}
	for _, r := range grpc {
		g := r.GRPC
		row(report.Marked(r)+" (unary ping)", g.Connections, g.RequestedQPS, g.AchievedQPS, g.Requests, g.Errors, g.Latency)
		lats = append(lats, namedLatency{r.Name, g.Latency})
	}
	tw.Flush()
	percentileBasis(w, lats)
	for _, r := range http {
		if r.HTTP.Mode == v1alpha1.HTTPClosedLoop && r.HTTP.LittleLawQPS > 0 {
			fmt.Fprintf(w, "  %s: achieved %.0f qps; Little's law (%d connections ÷ mean %s) expects %.0f qps\n",
				r.Name, r.HTTP.AchievedQPS, r.HTTP.Connections, report.Micros(r.HTTP.Latency.AvgMicros), r.HTTP.LittleLawQPS)
		}
		if len(r.HTTP.ErrorsByKind) > 0 {
			fmt.Fprintf(w, "  %s errors by kind: %v\n", r.Name, r.HTTP.ErrorsByKind)
		}
	}
	if len(http) > 0 {
		fmt.Fprintf(w, "\nLatency histogram, %s (%s, %s)\n", http[0].Name, http[0].HTTP.Mode, histogramCount(http[0].HTTP.Latency))
		Histogram(w, http[0].HTTP.Latency, 40)
	}
}

// writeThroughput writes the TCP throughput table of the throughput results and their
// intervals.
func writeThroughput(w io.Writer, title string, tput []*v1alpha1.ProbeResult) {
	fmt.Fprintf(w, "\nTCP throughput, %s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "probe\tstreams\tseconds\tsent\treceived\tbytes received\tretransmits\tclient CPU\tserver CPU\tmean RTT\tmax cwnd\tMSS\t")
	for _, r := range tput {
		t := r.Throughput
		var rtt float64
		var cwnd int64
		for _, s := range t.PerStream {
			rtt += s.MeanRTTMicros / float64(len(t.PerStream))
			cwnd = max(cwnd, s.MaxCwndBytes)
		}
		srv := "n/a"
		if t.ServerCPUPercent > 0 {
			srv = fmt.Sprintf("%.0f %%", t.ServerCPUPercent)
		}
		mss, _ := report.MinMSS(r)
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%d\t%.0f %%\t%s\t%s\t%s\t%.0f B\t\n", report.Marked(r), t.Streams, t.DurationSeconds,
			Bits(t.BitsPerSecondSent), Bits(t.BitsPerSecondReceived), report.BytesText(t.BytesReceived), t.Retransmits,
			t.ClientCPUPercent, srv, report.Micros(rtt), report.BytesText(cwnd), mss)
	}
	tw.Flush()
	fmt.Fprintln(w, "  received: what the server acknowledged while the client sent (TCP_INFO bytes_acked), per second; bytes received: all the server counted, with what drained after")
	fmt.Fprintln(w, "  CPU in % of one core; mean RTT, max cwnd and MSS (the smallest of the streams') from TCP_INFO, sampled every 100 ms")
	for _, r := range tput {
		for _, iv := range r.Throughput.Intervals {
			fmt.Fprintf(w, "  %s %5.0f–%-5.0f s  %s  retransmits %d\n", r.Name, iv.StartSeconds, iv.EndSeconds, Bits(iv.BitsPerSecond), iv.Retransmits)
		}
	}
}

// writePMTU writes what a path-MTU probe found.
func writePMTU(w io.Writer, title string, r *v1alpha1.ProbeResult) {
	m := r.PMTU
	what := fmt.Sprintf("%d bytes cross to the server with don't-fragment set", m.PathMTU)
	if r.IPFamily == "IPv6" {
		what = fmt.Sprintf("%d bytes cross to the server over IPv6 (routers never fragment it; 1280 at least)", m.PathMTU)
	}
	fmt.Fprintf(w, "\nPath MTU (%s), %s: %s\n", report.Marked(r), title, what)
	how := "larger ones were dropped silently"
	switch {
	case m.FragNeeded && r.IPFamily == "IPv6":
		how = `a hop refused larger ones with ICMPv6 "Packet Too Big"`
	case m.FragNeeded:
		how = `a hop refused larger ones with ICMP "fragmentation needed"`
	}
	if m.PathMTU >= m.LocalMTU {
		how = "as large as the interface allows"
	}
	packets := fmt.Sprintf("%d packets", m.Probes)
	if m.Probes == 1 {
		packets = "1 packet"
	}
	fmt.Fprintf(w, "  interfaces: %d here, %d at the server; kernel's path MTU %d; %s (%s): %s\n", m.LocalMTU, m.RemoteMTU, m.KernelPMTU, packets, m.Method, how)
}

// Histogram draws the latency histogram with bars of at most width characters.
func Histogram(w io.Writer, l v1alpha1.Latency, width int) {
	var top int64
	for _, b := range l.Histogram {
		top = max(top, b.Count)
	}
	if top == 0 {
		return
	}
	for _, b := range l.Histogram {
		n := int(int64(width) * b.Count / top)
		if n == 0 && b.Count > 0 {
			n = 1
		}
		fmt.Fprintf(w, "  %10s – %-10s %s %d\n", report.Micros(b.StartMicros), report.Micros(b.EndMicros), strings.Repeat("█", n), b.Count)
	}
}

type namedLatency struct {
	name string
	l    v1alpha1.Latency
}

// percentileBasis says what the request percentiles were computed from: every request's latency
// (nearest rank), a uniform sample of them in long runs, or, in reports of earlier versions, a
// histogram whose buckets widen with the value.
func percentileBasis(w io.Writer, lats []namedLatency) {
	var sampled, bucketed []string
	exact := false
	for _, n := range lats {
		switch {
		case n.l.ResolutionMicros > 0:
			bucketed = append(bucketed, fmt.Sprintf("%s (finest bucket %s)", n.name, report.Micros(n.l.ResolutionMicros)))
		case n.l.PercentilesFrom > 0:
			sampled = append(sampled, fmt.Sprintf("%s: a uniform sample of %d of its %d requests", n.name, n.l.PercentilesFrom, n.l.Count))
		default:
			exact = true
		}
	}
	if exact {
		fmt.Fprintln(w, "  percentiles: the latency some request had (nearest rank over every request, nanosecond clock)")
	}
	if len(sampled) > 0 {
		fmt.Fprintf(w, "  percentiles from a sample: %s\n", strings.Join(sampled, "; "))
	}
	if len(bucketed) > 0 {
		fmt.Fprintf(w, "  percentiles interpolated in a histogram whose buckets widen with the value: %s\n", strings.Join(bucketed, ", "))
	}
}

// histogramCount says what a latency histogram's bars count: every request, or the sample the
// percentiles came from.
func histogramCount(l v1alpha1.Latency) string {
	if l.PercentilesFrom > 0 {
		return fmt.Sprintf("a uniform sample of %d of %d requests", l.PercentilesFrom, l.Count)
	}
	return fmt.Sprintf("%d requests", l.Count)
}
