package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

func rttResult(kind string, p50, p99 float64) *agent.ProbeResult {
	return &agent.ProbeResult{Name: kind, Kind: kind, RTT: &probes.RTTResult{Sent: 200, Received: 200, RTT: probes.Latency{Count: 200, P50Micros: p50, P99Micros: p99}}}
}

// A 4-node, 2-zone matrix (every pair) in which b1 adds 1 ms to every path it is on.
func slowNodeMatrix() *MatrixReport {
	zone := map[string]string{"a1": "zone-a", "a2": "zone-a", "b1": "zone-b", "b2": "zone-b"}
	r := &MatrixReport{Kind: "MatrixReport", Scope: "nodes", Namespace: "nb"}
	for _, n := range []string{"a1", "a2", "b1", "b2"} {
		r.Nodes = append(r.Nodes, MatrixNode{Name: n, Zone: zone[n]})
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
			r.Pairs = append(r.Pairs, MatrixPair{From: from, To: to, FromZone: zone[from], ToZone: zone[to],
				Results: []*agent.ProbeResult{rttResult(agent.ProbeICMP, rtt, 1.2*rtt), rttResult(agent.ProbeTCPRTT, rtt+20, 1.3*rtt)}})
		}
	}
	r.Pairs = append(r.Pairs, MatrixPair{From: "a1", To: "x9", FromZone: "zone-a", ToZone: "zone-c", Error: "the agent on x9 is not ready: ErrImagePull"})
	return r
}

func TestBuildMatrix(t *testing.T) {
	r := slowNodeMatrix()
	r.BuildMatrix(1.5, 1.2)
	if r.Probe != agent.ProbeICMP {
		t.Errorf("probe %s", r.Probe)
	}
	wantZones := []MatrixCell{
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

func TestMatrixFiguresAndRender(t *testing.T) {
	r := slowNodeMatrix()
	r.BuildMatrix(1.5, 1.2)
	figs := Figures(r.FigureValues())
	for name, want := range map[string]float64{"zone-a:zone-b.rtt.p50": 4900, "same-zone.rtt.p50": 1900, "cross-zone.rtt.p99": 5880, "worst.rtt.p50": 4900, "outliers.count": 1} {
		if got, ok := figs[name]; !ok || got.Value != want {
			t.Errorf("%s = %+v, want %v", name, got, want)
		}
	}
	planned := MatrixPlannedFigures([][2]string{{"zone-a", "zone-b"}, {"zone-a", "zone-a"}}, false)
	for name := range figs {
		if _, ok := planned[name]; !ok && !strings.HasPrefix(name, "zone-b:") && name != "zone-b:zone-b.rtt.p50" {
			t.Errorf("figure %s reported but not planned", name)
		}
	}
	var plain, colour bytes.Buffer
	if err := WriteMatrix(&plain, "", r, false); err != nil {
		t.Fatal(err)
	}
	_ = WriteMatrix(&colour, "", r, true)
	for _, want := range []string{"RTT p50 / p99 by node", "from \\ to  a1", "b1 is slow", "not measured a1 → x9: the agent on x9 is not ready"} {
		if !strings.Contains(plain.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, plain.String())
		}
	}
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(colour.String(), ansiRed+"b1 is slow") {
		t.Errorf("colour only when asked")
	}
	var html bytes.Buffer
	if err := WriteMatrixHTML(&html, r); err != nil || !strings.Contains(html.String(), "hsl(") || strings.Contains(html.String(), "<script") {
		t.Errorf("html: %v", err)
	}
}

// OpenMetrics: a p50 and a p99 sample per zone cell and per measured pair, labelled with the
// zones (and nodes), in seconds; Prometheus' parser takes it.
func TestMatrixOpenMetrics(t *testing.T) {
	r := slowNodeMatrix()
	r.BuildMatrix(1.5, 1.2)
	var out bytes.Buffer
	if err := WriteMatrix(&out, FormatOpenMetrics, r, false); err != nil {
		t.Fatal(err)
	}
	fams, err := DecodeOpenMetrics(&out)
	if err != nil {
		t.Fatal(err)
	}
	lat := fams["netbench_latency_seconds"]
	if lat == nil || len(lat.Metric) != 2*4+2*12 {
		t.Fatalf("latency samples: %v, want 2 per zone cell (4) and per measured pair (12)", lat)
	}
	for _, m := range lat.Metric {
		l := map[string]string{}
		for _, lp := range m.Label {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["cell"] == "pair" && l["source_node"] == "b1" && l["destination_node"] == "a1" && l["quantile"] == "0.5" && m.GetGauge().GetValue() != 5400e-6 {
			t.Errorf("b1 → a1 p50 %v s, want 5.4 ms", m.GetGauge().GetValue())
		}
	}
}
