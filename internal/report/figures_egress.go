package report

import "github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"

// egressStats are an egress probe's figures: each phase's p50 and p99 (dns, connect, tls,
// ttfb-new: the first byte on a new connection from the request's start, ttfb-reused), and with
// a download its rate (download.gbps).
func egressStats() []stat {
	phase := func(get func(e *v1alpha1.EgressResult) *v1alpha1.Latency) func(r *v1alpha1.ProbeResult) *v1alpha1.Latency {
		return func(r *v1alpha1.ProbeResult) *v1alpha1.Latency {
			if r.Egress == nil {
				return nil
			}
			return get(r.Egress)
		}
	}
	var out []stat
	for _, p := range []struct {
		name string
		get  func(e *v1alpha1.EgressResult) *v1alpha1.Latency
	}{
		{"dns.", func(e *v1alpha1.EgressResult) *v1alpha1.Latency { return e.DNS }},
		{"icmp.", func(e *v1alpha1.EgressResult) *v1alpha1.Latency {
			if e.ICMP == nil {
				return nil
			}
			return &e.ICMP.RTT
		}},
		{"connect.", func(e *v1alpha1.EgressResult) *v1alpha1.Latency { return &e.Connect }},
		{"tls.", func(e *v1alpha1.EgressResult) *v1alpha1.Latency {
			if e.TLS == nil {
				return nil
			}
			return &e.TLS.Latency
		}},
		{"ttfb-new.", func(e *v1alpha1.EgressResult) *v1alpha1.Latency { return e.FirstByteNew }},
		{"ttfb-reused.", func(e *v1alpha1.EgressResult) *v1alpha1.Latency { return e.FirstByteReused }},
	} {
		out = append(out, latencyStatsNamed(p.name, phase(p.get), "p50", "p99")...)
	}
	return append(out, value(UnitGbps, "download.gbps", func(r *v1alpha1.ProbeResult) (float64, bool) {
		if r.Egress == nil || r.Egress.Download == nil || r.Egress.Download.BitsPerSecond == 0 {
			return 0, false
		}
		return r.Egress.Download.BitsPerSecond / 1e9, true
	}))
}
