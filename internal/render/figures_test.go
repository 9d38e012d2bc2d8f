package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// Every figure a report holds was planned from its probes (so --fail-if can check names before
// a run), and planned figures carry the same units as measured ones.
func TestPlannedFiguresCoverMeasured(t *testing.T) {
	var r report.PathReport
	data, _ := os.ReadFile("testdata/path-cross-zone-app-port.json")
	mustDecode(t, data, &r)
	var specs []specLike
	for _, p := range append(r.Probes, r.AppPort...) {
		specs = append(specs, specLike{p.Name, p.Kind})
	}
	planned := report.PlannedFigures(toSpecs(specs))
	figs := r.FigureValues()
	if len(figs) < 10 {
		t.Fatalf("only %d figures", len(figs))
	}
	for _, f := range figs {
		if u, ok := planned[f.Name]; !ok || u != f.Unit {
			t.Errorf("%s (%s) measured but planned as %q", f.Name, f.Unit, u)
		}
	}
	for _, want := range []string{"rtt.p50", "icmp.p99", "http.p99.9", "http-new-conn.extra-p50", "tcp-1.gbps", "tcp-1.mss", "app-http.p50"} {
		if _, ok := planned[want]; !ok {
			t.Errorf("%s not planned; planned: %v", want, sortedNames(planned))
		}
	}
}

// The ladder names each rung's figures and the worst rung of each class.
func TestLadderFigureNames(t *testing.T) {
	var r report.LadderReport
	data, _ := os.ReadFile("testdata/ladder-zone-delay-two-rounds.json")
	mustDecode(t, data, &r)
	figs := report.Figures(r.FigureValues())
	for _, n := range []string{"same-node.icmp.p50", "same-zone.rtt.p50", "cross-zone.rtt.p50", "crosszone.rtt.p50", "samezone.http.p50"} {
		if _, ok := figs[n]; !ok {
			t.Errorf("no %s among %d figures", n, len(figs))
		}
	}
	var worst float64
	for name, f := range figs {
		if strings.HasPrefix(name, "cross-zone:") && strings.HasSuffix(name, ".rtt.p50") && f.Value > worst {
			worst = f.Value
		}
	}
	if worst == 0 || figs["cross-zone.rtt.p50"].Value != worst {
		t.Errorf("cross-zone.rtt.p50 = %v, want the worst cross-zone rung's %v", figs["cross-zone.rtt.p50"], worst)
	}
	planned := report.LadderPlannedFigures(r.Rungs, nil)
	if len(planned) != 0 {
		t.Errorf("no probes, yet planned %v", planned)
	}
}

// A figure's interval always holds the figure.
func TestIntervalsHoldTheirFigure(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.json")
	for _, in := range inputs {
		_, figs := render(t, in, "json")
		for _, f := range figs {
			if f.Spread != nil && !f.Spread.Holds(f.Value) {
				t.Errorf("%s %s: %v outside %+v", in, f.Name, f.Value, f.Spread)
			}
		}
	}
}
