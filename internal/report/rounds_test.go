package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// A path run with --repeat: each figure is the median of the rounds with their range, a validity
// figure its worst round, rtt.* follow the medians, and gates see the medians.
func TestPathRoundFigures(t *testing.T) {
	round := func(n int, icmpP50 float64, tcpValid bool) v1alpha1.LadderRound {
		return v1alpha1.LadderRound{Round: n, Probes: []*v1alpha1.ProbeResult{
			{Name: "icmp", Kind: v1alpha1.ProbeICMP, RTT: &v1alpha1.RTTResult{Received: 20, RTT: v1alpha1.Latency{Count: 20, P50Micros: icmpP50, P99Micros: 2 * icmpP50}}},
			{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Throughput: &v1alpha1.ThroughputResult{BitsPerSecondReceived: 1e9}, Validity: &v1alpha1.Validity{Valid: tcpValid}},
		}}
	}
	r := &PathReport{Rounds: 3, RoundResults: []v1alpha1.LadderRound{round(1, 300, true), round(2, 100, false), round(3, 200, true)}}
	r.Probes = r.RoundResults[0].Probes
	r.Summarize()
	if got, want := r.Figures["icmp.p50"], (Figure{Unit: UnitMicros, Median: 200, Min: 100, Max: 300, Samples: 3}); got != want {
		t.Errorf("icmp.p50 %+v, want %+v", got, want)
	}
	figs := Figures(r.FigureValues())
	for name, want := range map[string]float64{"icmp.p50": 200, "icmp.p99": 400, "rtt.p50": 200, "tcp-1.valid": 0, "valid": 0} {
		if got, ok := figs[name]; !ok || got.Value != want {
			t.Errorf("%s = %+v (found %v), want %v", name, got, ok, want)
		}
	}
	var p50 FigureValue
	for _, f := range r.FigureValues() {
		if f.Name == "icmp.p50" {
			p50 = f
		}
	}
	hi := 300.0
	if diff := cmp.Diff(FigureValue{Name: "icmp.p50", Unit: UnitMicros, Value: 200, Probe: "icmp", Stat: "p50", Spread: &Range{Low: 100, High: &hi}}, p50); diff != "" {
		t.Errorf("icmp.p50 (-want +got):\n%s", diff)
	}
	c, err := gate.Parse("icmp.p50 > 250us")
	if err != nil {
		t.Fatal(err)
	}
	if res := c.Evaluate(figs); res.Violated {
		t.Errorf("icmp.p50 > 250us holds on rounds whose median is 200 µs: %+v", res)
	}

	single := &PathReport{Probes: round(1, 300, true).Probes}
	single.Summarize()
	if single.Figures != nil || Figures(single.FigureValues())["icmp.p50"].Value != 300 {
		t.Errorf("one round: figures %+v, values %+v", single.Figures, single.FigureValues())
	}
}
