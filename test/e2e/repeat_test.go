package e2e

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// `path --repeat`: the probes run round after round between the same agents; the report holds
// every round's results and each figure's median with its range over the rounds (in JSON, in the
// human report's rounds table, and for gates). TestPathMarksCPULimitedProbes runs it on a
// throttled pod.
func TestPathRepeat(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)

	r := pathJSON(t, "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt,http", "--duration", "1s", "--repeat", "5")
	if r.Rounds != 5 || len(r.RoundResults) != 5 {
		t.Fatalf("rounds %d, round results %d: want 5 and 5", r.Rounds, len(r.RoundResults))
	}
	for _, fig := range []struct {
		name string
		get  func(*v1alpha1.ProbeResult) float64
	}{
		{"icmp.p50", func(p *v1alpha1.ProbeResult) float64 { return p.RTT.RTT.P50Micros }},
		{"tcp-rtt.p99", func(p *v1alpha1.ProbeResult) float64 { return p.RTT.RTT.P99Micros }},
		{"http.p50", func(p *v1alpha1.ProbeResult) float64 { return p.HTTP.Latency.P50Micros }},
	} {
		var vs []float64
		for _, round := range r.RoundResults {
			p := probeIn(round.Probes, strings.SplitN(fig.name, ".", 2)[0])
			if p == nil {
				t.Fatalf("round %d: no %s result", round.Round, fig.name)
			}
			vs = append(vs, fig.get(p))
		}
		slices.Sort(vs)
		f, ok := r.Figures[fig.name]
		if !ok || f.Samples != 5 || math.Abs(f.Median-vs[2]) > 0.001 || f.Min != vs[0] || f.Max != vs[4] {
			t.Errorf("%s over the rounds %v: figure %+v, want the median %v of 5 with their range", fig.name, vs, f, vs[2])
		}
		t.Logf("%s: median %.0f µs [%.0f–%.0f] over %d rounds", fig.name, f.Median, f.Min, f.Max, f.Samples)
	}
	out, stderr, err := netbench(t, "path", "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt", "--repeat", "3", "--fail-if", "rtt.p50 > 10s")
	t.Logf("human report:\n%s", out)
	if err != nil || !strings.Contains(out, "Over 3 rounds") || !strings.Contains(out, "icmp.p50") {
		t.Errorf("human report with --repeat 3 (%v): want the rounds table\n%s%s", err, out, stderr)
	}

}

// probeIn is the result of the probe named name, or nil.
func probeIn(ps []*v1alpha1.ProbeResult, name string) *v1alpha1.ProbeResult {
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return nil
}
