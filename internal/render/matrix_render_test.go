package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
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
	planned := report.MatrixPlannedFigures([][2]string{{"zone-a", "zone-b"}, {"zone-a", "zone-a"}}, false)
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
