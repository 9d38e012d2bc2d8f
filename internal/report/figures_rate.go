package report

import "github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"

// rateStats are a rate probe's statistics: its rate (transactions, or connections, per second),
// its transactions' latency, and tcp-crr's handshakes, udp-rr's loss.
func rateStats(kind string) []stat {
	out := append([]stat{value(UnitReqPerS, "rate", from(rateBlock, func(b *v1alpha1.RateResult) (float64, bool) { return b.PerSecond, true }))},
		latencyStats(func(r *v1alpha1.ProbeResult) *v1alpha1.Latency {
			if r.Rate == nil {
				return nil
			}
			return &r.Rate.Latency
		}, "p50", "p99")...)
	switch kind {
	case v1alpha1.ProbeTCPCRR:
		out = append(out, latencyStatsNamed("connect-", func(r *v1alpha1.ProbeResult) *v1alpha1.Latency {
			if r.Rate == nil {
				return nil
			}
			return r.Rate.Connect
		}, "p50")...)
	case v1alpha1.ProbeUDPRR:
		out = append(out, value(UnitPercent, "loss", from(rateBlock, func(b *v1alpha1.RateResult) (float64, bool) { return b.LossPercent, true })))
	}
	return out
}

func rateBlock(r *v1alpha1.ProbeResult) *v1alpha1.RateResult { return r.Rate }

// loadedStats are a loaded-rtt probe's statistics: the UDP round trip idle and under load, the
// delay the load added, the responsiveness, and the load's throughput.
func loadedStats() []stat {
	get := func(name, unit string, f func(b *v1alpha1.LoadedResult) (float64, bool)) stat {
		return value(unit, name, from(loadedBlock, f))
	}
	idle := func(b *v1alpha1.LoadedResult) *v1alpha1.RTTResult { return b.Idle }
	loaded := func(b *v1alpha1.LoadedResult) *v1alpha1.RTTResult { return b.Loaded }
	p50 := func(l v1alpha1.Latency) float64 { return l.P50Micros }
	p99 := func(l v1alpha1.Latency) float64 { return l.P99Micros }
	return []stat{
		get("idle-p50", UnitMicros, loadedPct(idle, p50)),
		get("p50", UnitMicros, loadedPct(loaded, p50)),
		get("p99", UnitMicros, loadedPct(loaded, p99)),
		get("added-p50", UnitMicros, func(b *v1alpha1.LoadedResult) (float64, bool) { return b.AddedP50Micros, b.Loaded != nil }),
		get("added-p99", UnitMicros, func(b *v1alpha1.LoadedResult) (float64, bool) { return b.AddedP99Micros, b.Loaded != nil }),
		get("rpm", UnitCount, func(b *v1alpha1.LoadedResult) (float64, bool) { return b.RPM, b.RPM > 0 }),
		get("gbps", UnitGbps, func(b *v1alpha1.LoadedResult) (float64, bool) {
			if b.Throughput == nil {
				return 0, false
			}
			return b.Throughput.BitsPerSecondReceived / 1e9, true
		}),
	}
}

// loadedPct reads a percentile of one of a loaded-rtt probe's round-trip sets; none without
// replies.
func loadedPct(pick func(*v1alpha1.LoadedResult) *v1alpha1.RTTResult, pct func(v1alpha1.Latency) float64) func(*v1alpha1.LoadedResult) (float64, bool) {
	return func(b *v1alpha1.LoadedResult) (float64, bool) {
		r := pick(b)
		if r == nil || r.Received == 0 {
			return 0, false
		}
		return pct(r.RTT), true
	}
}

func loadedBlock(r *v1alpha1.ProbeResult) *v1alpha1.LoadedResult { return r.Loaded }
