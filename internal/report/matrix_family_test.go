package report

import (
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// An --ip-family both matrix's pairs carry both families' results in one job; the report's
// cells are IPv4's, its IPv6 twin's cells IPv6's, and every figure of both families is named
// (v6.*, probe icmp-v6) and was planned, so gates on it are accepted before the run.
func TestMatrixBothFamilies(t *testing.T) {
	rtt := func(name string, p50 float64) *v1alpha1.ProbeResult {
		return &v1alpha1.ProbeResult{Name: name, Kind: v1alpha1.ProbeICMP, RTT: &v1alpha1.RTTResult{Received: 10, RTT: v1alpha1.Latency{Count: 10, P50Micros: p50, P99Micros: 2 * p50}}}
	}
	pair := func(from, to, fz, tz string, v4, v6 float64) MatrixPair {
		return MatrixPair{From: from, To: to, FromZone: fz, ToZone: tz, Results: []*v1alpha1.ProbeResult{rtt("icmp", v4), rtt("icmp-v6", v6)}}
	}
	r := &MatrixReport{Scope: "zones", Pairs: []MatrixPair{
		pair("a1", "a2", "zone-a", "zone-a", 100, 110),
		pair("a1", "b1", "zone-a", "zone-b", 4000, 4100),
		pair("a2", "b2", "zone-a", "zone-b", 4200, 4300),
	}}
	r.BuildMatrix(2, 1.5)
	v6 := r.V6()
	if v6 == nil || r.IPFamily != "IPv4" || v6.IPFamily != "IPv6" {
		t.Fatalf("families %q and %+v", r.IPFamily, v6)
	}
	for i, p := range r.Pairs {
		if len(p.Results) != 1 || p.Results[0].Name != "icmp" || len(v6.Pairs[i].Results) != 1 || v6.Pairs[i].Results[0].Name != "icmp-v6" {
			t.Errorf("pair %d: IPv4 results %v, IPv6 results %v", i, p.Results, v6.Pairs[i].Results)
		}
	}
	figs := Figures(r.FigureValues())
	for name, want := range map[string]float64{
		"zone-a:zone-b.rtt.p50": 4100, "v6.zone-a:zone-b.rtt.p50": 4200,
		"zone-a:zone-a.rtt.p50": 100, "v6.zone-a:zone-a.rtt.p50": 110, "v6.cross-zone.rtt.p50": 4200,
	} {
		if got, ok := figs[name]; !ok || got.Value != want {
			t.Errorf("%s = %+v (found %v), want %v", name, got, ok, want)
		}
	}
	for _, f := range r.FigureValues() {
		if f.Name == "v6.zone-a:zone-b.rtt.p50" && f.Probe != "icmp-v6" {
			t.Errorf("IPv6 cell's probe %q, want icmp-v6", f.Probe)
		}
	}
	planned := MatrixPlannedFigures([][2]string{{"zone-a", "zone-a"}, {"zone-a", "zone-b"}}, MatrixMeasures{BothFamilies: true})
	for _, f := range r.FigureValues() {
		if _, ok := planned[f.Name]; !ok {
			t.Errorf("%s is reported but not planned", f.Name)
		}
	}
	// Built again (a report read back): the same figures.
	r.BuildMatrix(2, 1.5)
	if got := Figures(r.FigureValues())["v6.zone-a:zone-b.rtt.p50"]; got.Value != 4200 {
		t.Errorf("rebuilt: %+v", got)
	}
}

// The Service's path is set against the path to DST's pod IP of its own family: with an
// IPv6-primary Service beside IPv4-primary pods, svc.vs-dst-* subtracts the pods' IPv6 figure
// and svc-v4.vs-dst-* the IPv4 one; without families, twins pair by name.
func TestServiceVsDSTPerFamily(t *testing.T) {
	rtt := func(name, fam string, p50 float64) *v1alpha1.ProbeResult {
		return &v1alpha1.ProbeResult{Name: name, Kind: v1alpha1.ProbeTCPRTT, IPFamily: fam, RTT: &v1alpha1.RTTResult{Received: 10, RTT: v1alpha1.Latency{Count: 10, P50Micros: p50}}}
	}
	results := []*v1alpha1.ProbeResult{
		rtt("svc-tcp-rtt", "IPv6", 500), rtt("svc-tcp-rtt-v4", "IPv4", 400),
		rtt("app-tcp-rtt", "IPv4", 300), rtt("app-tcp-rtt-v6", "IPv6", 350),
	}
	figs := Figures(ProbeFigures(results))
	for name, want := range map[string]float64{"svc.vs-dst-tcp-rtt.p50": 150, "svc-v4.vs-dst-tcp-rtt.p50": 100} {
		if got, ok := figs[name]; !ok || got.Value != want {
			t.Errorf("%s = %+v (found %v), want %v", name, got, ok, want)
		}
	}
	for _, r := range results {
		r.IPFamily = ""
	}
	figs = Figures(ProbeFigures(results))
	if got := figs["svc.vs-dst-tcp-rtt.p50"]; got.Value != 200 {
		t.Errorf("without families: svc.vs-dst-tcp-rtt.p50 = %+v, want svc-tcp-rtt − app-tcp-rtt = 200", got)
	}
	if _, ok := figs["svc-v4.vs-dst-tcp-rtt.p50"]; ok {
		t.Error("without families: svc-v4.vs-dst-tcp-rtt.p50 has no twin to pair with")
	}
}

// A pair whose IPv6 twins failed keeps its IPv4 cell; IPv6 without ICMP (not permitted) puts
// both families on the TCP handshake, so the difference is the family's, not the probe's; ICMP
// sent and never answered is that pair's loss, and the probe stays ICMP.
func TestMatrixBothFamiliesPartial(t *testing.T) {
	rtt := func(name, kind string, p50 float64) *v1alpha1.ProbeResult {
		return &v1alpha1.ProbeResult{Name: name, Kind: kind, RTT: &v1alpha1.RTTResult{Received: 10, RTT: v1alpha1.Latency{Count: 10, P50Micros: p50, P99Micros: p50}}}
	}
	r := &MatrixReport{Scope: "zones", Pairs: []MatrixPair{
		{From: "a1", To: "b1", FromZone: "zone-a", ToZone: "zone-b", IPv6Error: "tcp-rtt-v6: connection refused",
			Results: []*v1alpha1.ProbeResult{rtt("icmp", v1alpha1.ProbeICMP, 4000), rtt("tcp-rtt", v1alpha1.ProbeTCPRTT, 4100)}},
		{From: "b1", To: "a1", FromZone: "zone-b", ToZone: "zone-a", Results: []*v1alpha1.ProbeResult{
			rtt("icmp", v1alpha1.ProbeICMP, 4000), rtt("tcp-rtt", v1alpha1.ProbeTCPRTT, 4200),
			{Name: "icmp-v6", Kind: v1alpha1.ProbeICMP, Skipped: "ICMP not permitted"}, rtt("tcp-rtt-v6", v1alpha1.ProbeTCPRTT, 4300)}},
	}}
	r.BuildMatrix(2, 1.5)
	v6 := r.V6()
	if v6 == nil || len(r.Zones) != 2 || len(v6.Zones) != 1 || v6.Pairs[0].Error != "tcp-rtt-v6: connection refused" {
		t.Fatalf("IPv4 cells %+v, IPv6 part %+v", r.Zones, v6)
	}
	if r.Probe != v1alpha1.ProbeTCPRTT || v6.Probe != v1alpha1.ProbeTCPRTT || v6.Zones[0].P50Micros != 4300 {
		t.Errorf("probes %s / %s, IPv6 cell %+v: want both from tcp-rtt", r.Probe, v6.Probe, v6.Zones[0])
	}
	if v6.Nodes != nil && v6.Nodes[0].IP != "" {
		t.Errorf("the IPv6 part's nodes carry the IPv4 addresses: %+v", v6.Nodes)
	}

	lost := &MatrixReport{Scope: "zones", Pairs: []MatrixPair{
		{From: "a1", To: "b1", FromZone: "zone-a", ToZone: "zone-b", Results: []*v1alpha1.ProbeResult{rtt("icmp", v1alpha1.ProbeICMP, 4000), rtt("icmp-v6", v1alpha1.ProbeICMP, 4100)}},
		{From: "b1", To: "a1", FromZone: "zone-b", ToZone: "zone-a", Results: []*v1alpha1.ProbeResult{rtt("icmp", v1alpha1.ProbeICMP, 4000),
			{Name: "icmp-v6", Kind: v1alpha1.ProbeICMP, RTT: &v1alpha1.RTTResult{Sent: 50}}}},
	}}
	lost.BuildMatrix(2, 1.5)
	if lost.Probe != v1alpha1.ProbeICMP || lost.V6().Probe != v1alpha1.ProbeICMP || lost.V6().Pairs[1].Error != "icmp: none of 50 round trips answered (100 % loss)" || len(lost.V6().Zones) != 1 {
		t.Errorf("an unanswered IPv6 pair: probes %s / %s, its error %q", lost.Probe, lost.V6().Probe, lost.V6().Pairs[1].Error)
	}
}

// Before the families are known, every vs-dst figure a Service of either primary family can give
// is planned: a gate on svc-v4.vs-dst-* is accepted.
func TestPlannedVsDST(t *testing.T) {
	specs := []agent.ProbeSpec{{Kind: v1alpha1.ProbeTCPRTT, Name: "svc-tcp-rtt"}, {Kind: v1alpha1.ProbeTCPRTT, Name: "svc-tcp-rtt-v4"}, {Kind: v1alpha1.ProbeTCPRTT, Name: "app-tcp-rtt"}}
	planned := PlannedFigures(specs)
	for _, name := range []string{"svc.vs-dst-tcp-rtt.p50", "svc-v4.vs-dst-tcp-rtt.p50"} {
		if _, ok := planned[name]; !ok {
			t.Errorf("%s not planned", name)
		}
	}
}
