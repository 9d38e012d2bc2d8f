package report

import (
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// FigureValue is one figure of one run: <probe>.<stat>, its unit and value, and where the run
// gives one, its spread (nil when there is none).
type FigureValue struct {
	Name, Unit  string
	Value       float64
	Probe, Stat string
	Spread      *Range
	// Alias marks a figure that repeats another under a second name (rtt.*, a class's worst rung).
	Alias bool
}

// stat is one statistic a probe kind reports.
type stat struct {
	name, unit string
	get        func(r *v1alpha1.ProbeResult) (v float64, spread *Range, ok bool)
}

// Quantiles name the latency percentiles figures carry.
var Quantiles = map[string]float64{"p50": 0.5, "p99": 0.99, "p99.9": 0.999}

func latencyStats(l func(r *v1alpha1.ProbeResult) *v1alpha1.Latency, names ...string) []stat {
	return latencyStatsNamed("", l, names...)
}

// latencyStatsNamed is latencyStats with each statistic's name prefixed.
func latencyStatsNamed(prefix string, l func(r *v1alpha1.ProbeResult) *v1alpha1.Latency, names ...string) []stat {
	var out []stat
	for _, name := range names {
		q := Quantiles[name]
		out = append(out, stat{prefix + name, UnitMicros, func(r *v1alpha1.ProbeResult) (float64, *Range, bool) {
			lat := l(r)
			if lat == nil || lat.Count == 0 {
				return 0, nil, false
			}
			return percentileOf(*lat, q), percentileInterval(*lat, q), true
		}})
	}
	return out
}

func value(unit, name string, f func(r *v1alpha1.ProbeResult) (float64, bool)) stat {
	return stat{name, unit, func(r *v1alpha1.ProbeResult) (float64, *Range, bool) {
		v, ok := f(r)
		return v, nil, ok
	}}
}

// kindStats lists the statistics of each probe kind, in display order.
func kindStats(kind string) []stat {
	rttLatency := func(r *v1alpha1.ProbeResult) *v1alpha1.Latency {
		if r.RTT == nil || r.RTT.Received == 0 {
			return nil
		}
		return &r.RTT.RTT
	}
	switch kind {
	case v1alpha1.ProbeICMP, v1alpha1.ProbeTCPRTT:
		return latencyStats(rttLatency, "p50", "p99")
	case v1alpha1.ProbeUDP:
		return append(latencyStats(rttLatency, "p50", "p99"),
			value(UnitPercent, "loss", from(rttBlock, func(b *v1alpha1.RTTResult) (float64, bool) { return b.LossPercent, true })),
			value(UnitMicros, "jitter", from(rttBlock, func(b *v1alpha1.RTTResult) (float64, bool) { return b.JitterMicros, b.Received > 1 })))
	case v1alpha1.ProbeHTTPMax:
		return []stat{
			value(UnitReqPerS, "qps", from(httpBlock, func(b *v1alpha1.HTTPResult) (float64, bool) { return b.AchievedQPS, true })),
			value(UnitReqPerS, "littles-law-qps", from(httpBlock, func(b *v1alpha1.HTTPResult) (float64, bool) { return b.LittleLawQPS, true })),
		}
	case v1alpha1.ProbeHTTP, v1alpha1.ProbeHTTPNewConn:
		return latencyStats(func(r *v1alpha1.ProbeResult) *v1alpha1.Latency {
			if r.HTTP == nil {
				return nil
			}
			return &r.HTTP.Latency
		}, "p50", "p99", "p99.9")
	case v1alpha1.ProbeGRPC:
		return latencyStats(func(r *v1alpha1.ProbeResult) *v1alpha1.Latency {
			if r.GRPC == nil {
				return nil
			}
			return &r.GRPC.Latency
		}, "p50", "p99")
	case v1alpha1.ProbeTCP:
		return []stat{
			value(UnitGbps, "gbps", from(throughputBlock, func(b *v1alpha1.ThroughputResult) (float64, bool) { return b.BitsPerSecondReceived / 1e9, true })),
			value(UnitCount, "retransmits", from(throughputBlock, func(b *v1alpha1.ThroughputResult) (float64, bool) { return float64(b.Retransmits), true })),
			value(UnitBytes, "mss", MinMSS),
		}
	case v1alpha1.ProbeTCPRR, v1alpha1.ProbeTCPCRR, v1alpha1.ProbeUDPRR:
		return rateStats(kind)
	case v1alpha1.ProbeLoadedRTT:
		return loadedStats()
	case v1alpha1.ProbeEgress:
		return egressStats()
	case v1alpha1.ProbePMTU:
		return []stat{value(UnitBytes, "bytes", from(pmtuBlock, func(b *v1alpha1.PMTUResult) (float64, bool) { return float64(b.PathMTU), b.PathMTU > 0 }))}
	}
	return nil
}

// from reads a statistic from a result's block of type B; none when the result lacks the block.
func from[B any](block func(*v1alpha1.ProbeResult) *B, get func(*B) (float64, bool)) func(*v1alpha1.ProbeResult) (float64, bool) {
	return func(r *v1alpha1.ProbeResult) (float64, bool) {
		if b := block(r); b != nil {
			return get(b)
		}
		return 0, false
	}
}

func rttBlock(r *v1alpha1.ProbeResult) *v1alpha1.RTTResult               { return r.RTT }
func httpBlock(r *v1alpha1.ProbeResult) *v1alpha1.HTTPResult             { return r.HTTP }
func throughputBlock(r *v1alpha1.ProbeResult) *v1alpha1.ThroughputResult { return r.Throughput }
func pmtuBlock(r *v1alpha1.ProbeResult) *v1alpha1.PMTUResult             { return r.PMTU }

// MinMSS is the smallest MSS any stream of a throughput probe negotiated.
func MinMSS(r *v1alpha1.ProbeResult) (float64, bool) {
	if r.Throughput == nil {
		return 0, false
	}
	m := int64(0)
	for _, s := range r.Throughput.PerStream {
		if s.MSSBytes > 0 && (m == 0 || s.MSSBytes < m) {
			m = s.MSSBytes
		}
	}
	return float64(m), m > 0
}

// ProbeFigures names the figures of one round's results: <probe>.<statistic>, e.g. icmp.p50,
// http.p99.9, http-new-conn.extra-p50, http-max.qps, tcp-8.gbps; plus rtt.* (the ICMP figures,
// else the TCP handshake's), the Service's path against DST's pod IP and, from the spread
// probe, the Service's dataplane cost and its routing's effect.
func ProbeFigures(results []*v1alpha1.ProbeResult) []FigureValue {
	var out []FigureValue
	for _, r := range results {
		if r == nil || r.Skipped != "" {
			continue
		}
		for _, s := range kindStats(r.Kind) {
			if v, spread, ok := s.get(r); ok {
				out = append(out, FigureValue{Name: r.Name + "." + s.name, Unit: s.unit, Value: v, Probe: r.Name, Stat: s.name, Spread: spread})
			}
		}
		out = append(out, spreadFigures(r.Name, r.Spread)...)
		if r.Validity != nil {
			out = append(out, FigureValue{Name: r.Name + ".valid", Unit: UnitCount, Value: b2f(r.Validity.Valid), Probe: r.Name, Stat: "valid"})
		}
	}
	fams := map[string]string{}
	for _, r := range results {
		if r != nil {
			fams[r.Name] = r.IPFamily
		}
	}
	return append(out, derived(out, fams)...)
}

// IsValidity says whether a figure is a validity figure: 1 when its probes' figures are the
// path's, 0 when a CPU limit of an agent decided them (lower is worse).
func IsValidity(name string) bool { return name == "valid" || strings.HasSuffix(name, ".valid") }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// allValid is the figure valid: 1 when no CPU limit decided any probe's figures, else 0.
func allValid(fs []FigureValue) []FigureValue {
	all, seen := true, false
	for _, f := range fs {
		if IsValidity(f.Name) && !f.Alias {
			seen = true
			all = all && f.Value == 1
		}
	}
	if !seen {
		return nil
	}
	return []FigureValue{{Name: "valid", Unit: UnitCount, Value: b2f(all), Probe: "valid", Stat: "valid", Alias: true}}
}

func byName(fs []FigureValue) map[string]FigureValue {
	v := map[string]FigureValue{}
	for _, f := range fs {
		v[f.Name] = f
	}
	return v
}

// rttAliases are rtt.p50 and rtt.p99: the ICMP figures where measured, else the TCP handshake's.
func rttAliases(v map[string]FigureValue) []FigureValue {
	var out []FigureValue
	for _, s := range []string{"p50", "p99"} {
		src, ok := v["icmp."+s]
		if !ok {
			src, ok = v["tcp-rtt."+s]
		}
		if ok {
			src.Name, src.Probe, src.Alias = "rtt."+s, "rtt", true
			out = append(out, src)
		}
	}
	return out
}

// PlannedFigures names the figures a run of these probes will report (when they succeed), with
// their units: what --fail-if may name before anything is measured.
func PlannedFigures(specs []agent.ProbeSpec) map[string]string {
	var fake []*v1alpha1.ProbeResult
	for _, p := range specs {
		fake = append(fake, fullResult(p.Label(), p.Kind))
	}
	out := map[string]string{}
	fs := ProbeFigures(fake)
	for _, f := range fs {
		out[f.Name] = f.Unit
	}
	for _, name := range plannedVsDST(byName(fs)) {
		out[name] = UnitMicros
	}
	return out
}

// fullResult is a result of the kind with every statistic present, for planning.
func fullResult(name, kind string) *v1alpha1.ProbeResult {
	lat := v1alpha1.Latency{Count: 1, P50Micros: 1}
	r := &v1alpha1.ProbeResult{Name: name, Kind: kind, Validity: &v1alpha1.Validity{Valid: true}}
	switch kind {
	case v1alpha1.ProbeICMP, v1alpha1.ProbeTCPRTT, v1alpha1.ProbeUDP:
		r.RTT = &v1alpha1.RTTResult{Received: 2, RTT: lat}
	case v1alpha1.ProbeHTTP, v1alpha1.ProbeHTTPNewConn, v1alpha1.ProbeHTTPMax:
		r.HTTP = &v1alpha1.HTTPResult{Latency: lat}
	case v1alpha1.ProbeGRPC:
		r.GRPC = &v1alpha1.GRPCResult{Latency: lat}
	case v1alpha1.ProbeTCP:
		r.Throughput = &v1alpha1.ThroughputResult{PerStream: []v1alpha1.StreamResult{{MSSBytes: 1}}}
	case v1alpha1.ProbePMTU:
		r.PMTU = &v1alpha1.PMTUResult{PathMTU: 1}
	case v1alpha1.ProbeTCPRR, v1alpha1.ProbeTCPCRR, v1alpha1.ProbeUDPRR:
		r.Rate = &v1alpha1.RateResult{Latency: lat, Connect: &lat}
	case v1alpha1.ProbeLoadedRTT:
		rtt := &v1alpha1.RTTResult{Received: 1, RTT: lat}
		r.Loaded = &v1alpha1.LoadedResult{Idle: rtt, Loaded: rtt, RPM: 1, Throughput: &v1alpha1.ThroughputResult{}}
	case v1alpha1.ProbeEgress:
		r.Egress = &v1alpha1.EgressResult{DNS: &lat, Connect: lat, TLS: &v1alpha1.TLSHandshake{Latency: lat}, FirstByteNew: &lat, FirstByteReused: &lat,
			Download: &v1alpha1.EgressDownload{BitsPerSecond: 1}, ICMP: &v1alpha1.RTTResult{RTT: lat}}
	case v1alpha1.ProbeSpread:
		hs := v1alpha1.Handshakes{Count: 1, P50Micros: 1}
		r.Spread = &v1alpha1.SpreadResult{Endpoints: []v1alpha1.SpreadEndpoint{{Service: hs, Direct: hs}}, DST: &hs}
	}
	return r
}

// Figures turns figure values into what --fail-if evaluates.
func Figures(fs []FigureValue) gate.Figures {
	out := gate.Figures{}
	for _, f := range fs {
		out[f.Name] = gate.Figure{Value: f.Value, Unit: f.Unit}
	}
	return out
}
