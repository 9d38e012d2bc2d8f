package render

import (
	"bytes"
	"encoding/xml"
	"maps"
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
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// render writes a testdata report in format, with a passing and a failing check added.
func render(t *testing.T, in, format string) ([]byte, []report.FigureValue) {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	checks := []gate.Result{{Condition: `rtt.p99 > 2ms`, Message: `rtt.p99 = 180 µs`}, {Condition: `x "quoted" < 1`, Violated: true, Message: "x = 3 <&>"}}
	var out bytes.Buffer
	var figs []report.FigureValue
	name := filepath.Base(in)
	switch {
	case strings.HasPrefix(name, "path"):
		var r report.PathReport
		mustDecode(t, data, &r)
		r.Checks, figs = checks, r.FigureValues()
		err = Write(&out, format, &r)
	case strings.HasPrefix(name, "ladder"):
		var r report.LadderReport
		mustDecode(t, data, &r)
		r.Checks, figs = checks, r.FigureValues()
		err = WriteLadder(&out, format, &r)
	case strings.HasPrefix(name, "matrix"):
		var r report.MatrixReport
		mustDecode(t, data, &r)
		r.Checks, figs = checks, r.FigureValues()
		err = WriteMatrix(&out, format, &r, false)
	default:
		var r report.DNSReport
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
				if fam, _ := metricOf(f); fam.name != "" && !f.Alias {
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
			l := MetricLabels(m)
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

type specLike struct{ name, kind string }

type agentSpec = agent.ProbeSpec

func toSpecs(s []specLike) []agentSpec {
	var out []agentSpec
	for _, x := range s {
		out = append(out, agentSpec{Name: x.name, Kind: x.kind})
	}
	return out
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

// An --ip-family both run's twins share the probe label and differ in ip_family; a run of one
// family labels every sample with it.
func TestOpenMetricsIPFamilyLabel(t *testing.T) {
	data, err := os.ReadFile("testdata/path-pod-mode-rtt-tcp.json")
	if err != nil {
		t.Fatal(err)
	}
	var r report.PathReport
	mustDecode(t, data, &r)
	r.IPFamily = "IPv4 and IPv6 (probes named *-v6 over IPv6)"
	var twins []*v1alpha1.ProbeResult
	for _, p := range r.Probes {
		p.IPFamily = "IPv4"
		twin := *p
		twin.Name, twin.IPFamily = p.Name+"-v6", "IPv6"
		twins = append(twins, &twin)
	}
	r.Probes = append(r.Probes, twins...)
	families := func(r *report.PathReport) map[string][]string {
		var out bytes.Buffer
		if err := WritePathMetrics(&out, r); err != nil {
			t.Fatal(err)
		}
		fams, err := DecodeOpenMetrics(&out)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, m := range fams["netbench_latency_seconds"].GetMetric() {
			l := MetricLabels(m)
			if l["quantile"] == "0.5" {
				got[l["probe"]] = append(got[l["probe"]], l["ip_family"])
			}
		}
		return got
	}
	both := families(&r)
	if len(both) == 0 {
		t.Fatal("no latency samples")
	}
	for probe, fams := range both {
		sort.Strings(fams)
		if strings.HasSuffix(probe, "-v6") || strings.Join(fams, ",") != "IPv4,IPv6" {
			t.Errorf("probe %q: ip_family %v, want one sample of each family under the same probe label", probe, fams)
		}
	}
	r.IPFamily, r.Probes = "IPv6", r.Probes[:len(twins)]
	for _, p := range r.Probes {
		p.IPFamily = ""
	}
	for probe, fams := range families(&r) {
		if strings.Join(fams, ",") != "IPv6" {
			t.Errorf("an IPv6 run's probe %q: ip_family %v", probe, fams)
		}
	}
}

// A ladder over both families of a dual-stack Service (a real lab run): each probe's samples
// under one probe label per family, the Service's through each ClusterIP labelled with its own.
func TestOpenMetricsIPFamilyLabelLadder(t *testing.T) {
	text, _ := render(t, "testdata/ladder-service-both-families.json", FormatOpenMetrics)
	fams, err := DecodeOpenMetrics(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{"netbench_latency_seconds", "netbench_added_latency_seconds"} {
		for _, m := range fams[name].GetMetric() {
			l := MetricLabels(m)
			if l["rung"] == "same-node" && (l["quantile"] == "0.5" || l["figure"] != "") {
				got[l["probe"]+l["figure"]+" "+l["ip_family"]] = "ok"
			}
		}
	}
	for _, want := range []string{"icmp IPv4", "icmp IPv6", "svc-http IPv4", "svc-http IPv6",
		"svc.dataplane-tcp-rtt.p50 IPv4", "svc-v6.dataplane-tcp-rtt.p50 IPv6"} {
		if got[want] == "" {
			t.Errorf("no sample %q among %v", want, got)
		}
	}
}

// A ladder over the pods' primary family (IPv4) through a Service whose primary ClusterIP is
// IPv6: its plain svc-* figures are IPv6 (what the results say), its -v4 twins IPv4, never two
// samples with the same labels.
func TestOpenMetricsIPFamilyServiceOfTheOtherPrimary(t *testing.T) {
	res := func(name, fam string) *v1alpha1.ProbeResult {
		return &v1alpha1.ProbeResult{Name: name, Kind: v1alpha1.ProbeTCPRTT, IPFamily: fam}
	}
	fig := v1alpha1.Figure{Unit: report.UnitMicros, Median: 100}
	r := report.LadderReport{IPFamily: "IPv4", Figures: []string{"tcp-rtt.p50", "svc-tcp-rtt.p50", "svc-tcp-rtt-v4.p50"},
		Service: &v1alpha1.LadderService{ClusterIPs: []string{"fd00:10:96::1", "10.96.0.1"}},
		Rungs: []v1alpha1.LadderRung{{Name: "same-node",
			Results: []v1alpha1.LadderRound{{Probes: []*v1alpha1.ProbeResult{res("tcp-rtt", "IPv4"), res("svc-tcp-rtt", "IPv6"), res("svc-tcp-rtt-v4", "IPv4")}}},
			Figures: map[string]v1alpha1.Figure{"tcp-rtt.p50": fig, "svc-tcp-rtt.p50": fig, "svc-tcp-rtt-v4.p50": fig}}}}
	var out bytes.Buffer
	if err := WriteLadderMetrics(&out, &r); err != nil {
		t.Fatal(err)
	}
	fams, err := DecodeOpenMetrics(&out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, m := range fams["netbench_latency_seconds"].GetMetric() {
		l := MetricLabels(m)
		got[l["probe"]+" "+l["ip_family"]]++
	}
	if want := map[string]int{"tcp-rtt IPv4": 1, "svc-tcp-rtt IPv6": 1, "svc-tcp-rtt IPv4": 1}; !maps.Equal(got, want) {
		t.Errorf("samples %v, want %v", got, want)
	}
}

// A DNS report's samples say what one lookup asks with --lookup-family 4 or 6: query_types A or
// AAAA; asking both (the default), no label (the series stay as they were).
func TestDNSMetricsSayTheQueryTypes(t *testing.T) {
	data, err := os.ReadFile("testdata/dns-glibc.json")
	if err != nil {
		t.Fatal(err)
	}
	for family, want := range map[string]string{"": "", "6": "AAAA", "4": "A"} {
		var r report.DNSReport
		mustDecode(t, data, &r)
		r.Result.Config.LookupFamily = family
		var out bytes.Buffer
		if err := WriteDNS(&out, FormatOpenMetrics, &r); err != nil {
			t.Fatal(err)
		}
		fams, err := DecodeOpenMetrics(&out)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range fams {
			for _, m := range mf.Metric {
				if l := MetricLabels(m); mf.GetName() != "netbench_check_violated" && l["query_types"] != want {
					t.Errorf("lookup family %q: %s %v, want query_types %q", family, mf.GetName(), l, want)
				}
				n++
			}
		}
		if n == 0 {
			t.Errorf("lookup family %q: no samples", family)
		}
	}
}
