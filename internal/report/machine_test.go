package report

import (
	"bytes"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
)

// render writes a testdata report in format, with a passing and a failing check added.
func render(t *testing.T, in, format string) ([]byte, []FigureValue) {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	checks := []gate.Result{{Condition: `rtt.p99 > 2ms`, Message: `rtt.p99 = 180 µs`}, {Condition: `x "quoted" < 1`, Violated: true, Message: "x = 3 <&>"}}
	var out bytes.Buffer
	var figs []FigureValue
	name := filepath.Base(in)
	switch {
	case strings.HasPrefix(name, "path"):
		var r PathReport
		mustDecode(t, data, &r)
		r.Checks, figs = checks, r.FigureValues()
		err = Write(&out, format, &r)
	case strings.HasPrefix(name, "ladder"):
		var r LadderReport
		mustDecode(t, data, &r)
		r.Checks, figs = checks, r.FigureValues()
		err = WriteLadder(&out, format, &r)
	case strings.HasPrefix(name, "matrix"):
		var r MatrixReport
		mustDecode(t, data, &r)
		r.Checks, figs = checks, r.FigureValues()
		err = WriteMatrix(&out, format, &r, false)
	default:
		var r DNSReport
		mustDecode(t, data, &r)
		r.Checks, figs = checks, r.FigureValues()
		err = WriteDNS(&out, format, &r)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), figs
}

// Every report, as OpenMetrics, is accepted by the Prometheus project's own OpenMetrics 1.0
// parser, ends with # EOF, carries a UNIT for each family with one, and holds every figure.
func TestOpenMetricsParsesWithPrometheus(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.json")
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			text, figs := render(t, in, FormatOpenMetrics)
			if !bytes.HasSuffix(text, []byte("# EOF\n")) {
				t.Fatalf("no final # EOF:\n%s", text)
			}
			fams, err := DecodeOpenMetrics(bytes.NewReader(text))
			if err != nil {
				t.Fatalf("Prometheus' parser refused it: %v\n%s", err, text)
			}
			samples := 0
			for _, mf := range fams {
				samples += len(mf.GetMetric())
			}
			if fams["netbench_check_violated"] == nil || len(fams["netbench_check_violated"].Metric) != 2 {
				t.Errorf("checks missing: %v", fams["netbench_check_violated"])
			}
			if lat := fams["netbench_latency_seconds"]; lat != nil && lat.GetUnit() != "seconds" {
				t.Errorf("latency unit %q", lat.GetUnit())
			}
			want := 2
			for _, f := range figs {
				if fam, _ := metricOf(f); fam.name != "" && f.Probe != "rtt" {
					want++
				}
			}
			// A ladder writes per rung and a matrix per cell and per pair, not per figure.
			if base := filepath.Base(in); !strings.HasPrefix(base, "ladder") && !strings.HasPrefix(base, "matrix") && samples != want {
				t.Errorf("%d samples, want %d (one per figure, two checks)\n%s", samples, want, text)
			}
			if samples < 3 {
				t.Errorf("only %d samples", samples)
			}
		})
	}
}

// A latency sample's value is the figure in seconds.
func TestOpenMetricsValuesAreBaseUnits(t *testing.T) {
	text, figs := render(t, "testdata/path-cross-zone-app-port.json", FormatOpenMetrics)
	var p50 float64
	for _, f := range figs {
		if f.Name == "http.p50" {
			p50 = f.Value
		}
	}
	dec := expfmt.NewDecoder(bytes.NewReader(text), expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			t.Fatalf("no netbench_latency_seconds{probe=http,quantile=0.5}: %v", err)
		}
		if mf.GetName() != "netbench_latency_seconds" {
			continue
		}
		for _, m := range mf.Metric {
			l := map[string]string{}
			for _, lp := range m.Label {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["probe"] == "http" && l["quantile"] == "0.5" {
				if got := m.GetGauge().GetValue(); math.Abs(got-p50/1e6) > 1e-12 || l["path_class"] == "" || l["source_pod"] == "" {
					t.Errorf("got %g %v, want %g s", got, l, p50/1e6)
				}
				return
			}
		}
	}
}

// JUnit output is well-formed XML with one test case per check and the failure on the held one.
func TestJUnitWellFormed(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.json")
	for _, in := range inputs {
		text, _ := render(t, in, FormatJUnit)
		var got junitSuites
		if err := xml.Unmarshal(text, &got); err != nil {
			t.Fatalf("%s: %v\n%s", in, err, text)
		}
		if got.Tests != 2 || got.Failures != 1 || len(got.Suites) != 1 || len(got.Suites[0].Cases) != 2 ||
			got.Suites[0].Cases[0].Failure != nil || got.Suites[0].Cases[1].Failure == nil ||
			got.Suites[0].Cases[1].Name != `x "quoted" < 1` || !strings.Contains(got.Suites[0].Cases[1].Failure.Message, "x = 3 <&>") {
			t.Errorf("%s: %+v", in, got)
		}
	}
}

// Every figure a report holds was planned from its probes (so --fail-if can check names before
// a run), and planned figures carry the same units as measured ones.
func TestPlannedFiguresCoverMeasured(t *testing.T) {
	var r PathReport
	data, _ := os.ReadFile("testdata/path-cross-zone-app-port.json")
	mustDecode(t, data, &r)
	var specs []specLike
	for _, p := range append(r.Probes, r.AppPort...) {
		specs = append(specs, specLike{p.Name, p.Kind})
	}
	planned := PlannedFigures(toSpecs(specs))
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
	var r LadderReport
	data, _ := os.ReadFile("testdata/ladder-zone-delay-two-rounds.json")
	mustDecode(t, data, &r)
	figs := Figures(r.FigureValues())
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
	planned := LadderPlannedFigures(r.Rungs, nil)
	if len(planned) != 0 {
		t.Errorf("no probes, yet planned %v", planned)
	}
}

type specLike struct{ name, kind string }

type agentSpec = agent.ProbeSpec

func toSpecs(s []specLike) []agentSpec {
	var out []agentSpec
	for _, x := range s {
		out = append(out, agentSpec{Name: x.name, Kind: x.kind})
	}
	return out
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

// sortedNames lists a figure map's names in order.
func sortedNames(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
