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
