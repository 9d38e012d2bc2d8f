package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

func rttResult(kind string, p50, p99 float64) *agent.ProbeResult {
	return &agent.ProbeResult{Name: kind, Kind: kind, RTT: &probes.RTTResult{Sent: 200, Received: 200, RTT: probes.Latency{Count: 200, P50Micros: p50, P99Micros: p99}}}
}

// A 4-node, 2-zone matrix (every pair) in which b1 adds 1 ms to every path it is on.
func slowNodeMatrix() *report.MatrixReport {
	zone := map[string]string{"a1": "zone-a", "a2": "zone-a", "b1": "zone-b", "b2": "zone-b"}
	r := &report.MatrixReport{Kind: "MatrixReport", Scope: "nodes", Namespace: "nb"}
	for _, n := range []string{"a1", "a2", "b1", "b2"} {
		r.Nodes = append(r.Nodes, report.MatrixNode{Name: n, Zone: zone[n]})
	}
	for _, from := range []string{"a1", "a2", "b1", "b2"} {
		for _, to := range []string{"a1", "a2", "b1", "b2"} {
			if from == to {
				continue
			}
			rtt := 900.0
			if zone[from] != zone[to] {
				rtt = 4400
			}
			if from == "b1" || to == "b1" {
				rtt += 1000
			}
			r.Pairs = append(r.Pairs, report.MatrixPair{From: from, To: to, FromZone: zone[from], ToZone: zone[to],
				Results: []*agent.ProbeResult{rttResult(agent.ProbeICMP, rtt, 1.2*rtt), rttResult(agent.ProbeTCPRTT, rtt+20, 1.3*rtt)}})
		}
	}
	r.Pairs = append(r.Pairs, report.MatrixPair{From: "a1", To: "x9", FromZone: "zone-a", ToZone: "zone-c", Error: "the agent on x9 is not ready: ErrImagePull"})
	return r
}

func TestBuildMatrix(t *testing.T) {
	r := slowNodeMatrix()
	r.BuildMatrix(1.5, 1.2)
	if r.Probe != agent.ProbeICMP {
		t.Errorf("probe %s", r.Probe)
	}
	wantZones := []report.MatrixCell{
		{From: "zone-a", To: "zone-a", Pairs: 2, P50Micros: 900, P99Micros: 1080, MinP50: 900, MaxP50: 900},
		{From: "zone-a", To: "zone-b", Pairs: 4, P50Micros: 4900, P99Micros: 5880, MinP50: 4400, MaxP50: 5400},
		{From: "zone-b", To: "zone-a", Pairs: 4, P50Micros: 4900, P99Micros: 5880, MinP50: 4400, MaxP50: 5400},
		{From: "zone-b", To: "zone-b", Pairs: 2, P50Micros: 1900, P99Micros: 2280, MinP50: 1900, MaxP50: 1900},
	}
	if d := cmp.Diff(wantZones, r.Zones); d != "" {
		t.Errorf("zone cells (-want +got):\n%s", d)
	}
	if len(r.NodeGrid) != 12 {
		t.Errorf("%d node cells, want 12", len(r.NodeGrid))
	}
	var slow []string
	for _, s := range r.Summary {
		if s.Outlier {
			slow = append(slow, s.Node)
		}
		if s.Node == "b1" && (s.Ratio != 1.227 || s.ExcessMicros != 1000 || s.Compared != 4) {
			t.Errorf("b1 summary %+v: want ratio 5400/4400, +1000 µs over its 4 cross-zone pairs", s)
		}
	}
	if d := cmp.Diff([]string{"b1"}, slow); d != "" {
		t.Errorf("outlying nodes (-want +got):\n%s", d)
	}
	if len(r.Outliers) != 1 || r.Outliers[0].Message != "b1 is slow: the median of its 4 pairs' p50 is 1.23× (+1.00 ms) the same cells' other pairs" {
		t.Errorf("outliers %+v: want b1 only (its pairs are not listed again)", r.Outliers)
	}
	// A pair slow on its own is named with its cell.
	r = slowNodeMatrix()
	r.Pairs[2].Results = []*agent.ProbeResult{rttResult(agent.ProbeICMP, 4400, 20000)}
	r.Pairs[0].Results = []*agent.ProbeResult{rttResult(agent.ProbeICMP, 900, 3000)}
	r.BuildMatrix(1.5, 1.2)
	var pairs []string
	for _, o := range r.Outliers {
		if o.Kind == "pair" {
			pairs = append(pairs, o.Message)
		}
	}
	want := []string{"a1 → a2 (zone-a → zone-a) p99 is 2.8× the cell's other pairs (3.00 ms vs 1.08 ms)", "a1 → b2 (zone-a → zone-b) p99 is 3.1× the cell's other pairs (20.00 ms vs 6.48 ms)"}
	if d := cmp.Diff(want, pairs); d != "" {
		t.Errorf("pair outliers (-want +got):\n%s", d)
	}
	// With fewer round trips a p99 is one of the largest samples: only the p50 counts.
	for _, p := range r.Pairs {
		for _, res := range p.Results {
			if res.RTT != nil {
				res.RTT.Received = 50
			}
		}
	}
	r.BuildMatrix(1.5, 1.2)
	for _, o := range r.Outliers {
		if o.Kind == "pair" {
			t.Errorf("a p99 of 50 round trips called a pair an outlier: %s", o.Message)
		}
	}
}

// Without ICMP on some pair, every cell comes from tcp-rtt (one probe for the whole matrix).
func TestBuildMatrixFallsBackToTCP(t *testing.T) {
	r := slowNodeMatrix()
	r.Pairs[3].Results[0] = &agent.ProbeResult{Name: "icmp", Kind: "icmp", Skipped: "ICMP sockets not permitted"}
	r.BuildMatrix(1.5, 1.2)
	if r.Probe != agent.ProbeTCPRTT || r.Zones[0].P50Micros != 920 {
		t.Errorf("probe %s, zone-a cell p50 %v: want tcp-rtt 920", r.Probe, r.Zones[0].P50Micros)
	}
}
