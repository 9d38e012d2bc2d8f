package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func TestMatrixFiguresAndRender(t *testing.T) {
	r := slowNodeMatrix()
	r.BuildMatrix(1.5, 1.2)
	figs := report.Figures(r.FigureValues())
	for name, want := range map[string]float64{"zone-a:zone-b.rtt.p50": 4900, "same-zone.rtt.p50": 1900, "cross-zone.rtt.p99": 5880, "worst.rtt.p50": 4900, "outliers.count": 1} {
		if got, ok := figs[name]; !ok || got.Value != want {
			t.Errorf("%s = %+v, want %v", name, got, want)
		}
	}
	planned := report.MatrixPlannedFigures([][2]string{{"zone-a", "zone-b"}, {"zone-a", "zone-a"}}, report.MatrixMeasures{})
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
		l := MetricLabels(m)
		if l["cell"] == "pair" && l["source_node"] == "b1" && l["destination_node"] == "a1" && l["quantile"] == "0.5" && m.GetGauge().GetValue() != 5400e-6 {
			t.Errorf("b1 → a1 p50 %v s, want 5.4 ms", m.GetGauge().GetValue())
		}
	}
}

// An --ip-family both matrix: the human report sets each zone cell's IPv4 and IPv6 figures side
// by side with their difference, OpenMetrics labels every cell and pair with its family (the
// IPv6 samples' probe without the suffix), and the page has a heatmap per family.
func TestMatrixBothFamiliesRender(t *testing.T) {
	r := bothFamiliesMatrix()
	r.BuildMatrix(1.5, 1.2)
	var text bytes.Buffer
	if err := WriteMatrix(&text, "", r, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"IP families: IPv4 and IPv6", "IPv4 and IPv6 side by side, by zone",
		"zone-a → zone-b  RTT p50  4.00 ms  4.30 ms  +300 µs (+7.5 %)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
	var om bytes.Buffer
	if err := WriteMatrix(&om, FormatOpenMetrics, r, false); err != nil {
		t.Fatal(err)
	}
	fams, err := DecodeOpenMetrics(&om)
	if err != nil {
		t.Fatal(err)
	}
	byFamily := map[string]float64{}
	for _, m := range fams["netbench_latency_seconds"].Metric {
		l := MetricLabels(m)
		if l["probe"] != "icmp" {
			t.Errorf("probe label %q, want icmp for both families", l["probe"])
		}
		if l["cell"] == "zone" && l["source_zone"] == "zone-a" && l["destination_zone"] == "zone-b" && l["quantile"] == "0.5" {
			byFamily[l["ip_family"]] = m.GetGauge().GetValue()
		}
	}
	if byFamily["IPv4"] != 4000e-6 || byFamily["IPv6"] != 4300e-6 || len(byFamily) != 2 {
		t.Errorf("zone-a → zone-b p50 by family: %v", byFamily)
	}
	var html bytes.Buffer
	if err := WriteMatrixHTML(&html, r); err != nil || !strings.Contains(html.String(), "RTT p50 by zone over IPv6") || !strings.Contains(html.String(), "RTT p50 by zone over IPv4") {
		t.Errorf("html: %v, want a heatmap per family", err)
	}
}

func bothFamiliesMatrix() *report.MatrixReport {
	rtt := func(name string, p50 float64) *v1alpha1.ProbeResult {
		return &v1alpha1.ProbeResult{Name: name, Kind: v1alpha1.ProbeICMP, RTT: &v1alpha1.RTTResult{Received: 50, RTT: v1alpha1.Latency{Count: 50, P50Micros: p50, P99Micros: p50 + 100}}}
	}
	pair := func(from, to, fz, tz string, v4, v6 float64) report.MatrixPair {
		return report.MatrixPair{From: from, To: to, FromZone: fz, ToZone: tz, Results: []*v1alpha1.ProbeResult{rtt("icmp", v4), rtt("icmp-v6", v6)}}
	}
	return &report.MatrixReport{Scope: "zones", Namespace: "netbench", Plan: report.MatrixPlan{PairsPerCell: 1}, Pairs: []report.MatrixPair{
		pair("a1", "a2", "zone-a", "zone-a", 600, 650),
		pair("a1", "b1", "zone-a", "zone-b", 4000, 4300),
		pair("b1", "a1", "zone-b", "zone-a", 4100, 4200),
		pair("b1", "b2", "zone-b", "zone-b", 620, 610),
	}}
}
