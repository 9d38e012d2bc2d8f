package render

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// A capacity ramp's figures reach OpenMetrics and the gates: the nameserver's knee in queries per
// second and what it allows in lookups per second (a real lab run's report).
func TestDNSCapacityFigures(t *testing.T) {
	data, err := os.ReadFile("testdata/dns-load-limited.json")
	if err != nil {
		t.Fatal(err)
	}
	var r report.DNSReport
	mustDecode(t, data, &r)
	c := r.Capacity
	if c == nil || c.SustainedQPS == 0 {
		t.Fatalf("no capacity in the run's report")
	}
	want := map[string]float64{"dns.capacity.qps": c.SustainedQPS, "dns.capacity.lookups": c.Now.LookupsPerSecond}
	for _, f := range r.FigureValues() {
		if v, ok := want[f.Name]; ok {
			if f.Value != v || f.Unit != report.UnitReqPerS {
				t.Errorf("%s = %g %s, want %g %s", f.Name, f.Value, f.Unit, v, report.UnitReqPerS)
			}
			delete(want, f.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("figures missing: %v", want)
	}
	if p := report.DNSPlannedFigures([]string{"x"}, false, true); p["dns.capacity.qps"] != report.UnitReqPerS || p["dns.capacity.lookups"] != report.UnitReqPerS {
		t.Errorf("planned figures %v: want the capacity's", p)
	}
	var out bytes.Buffer
	if err := WriteDNS(&out, FormatOpenMetrics, &r); err != nil {
		t.Fatal(err)
	}
	fams, err := DecodeOpenMetrics(&out)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, mf := range fams {
		for _, m := range mf.Metric {
			if mf.GetName() == "netbench_dns_sustained_queries_per_second" && math.Abs(m.GetGauge().GetValue()-c.SustainedQPS) < 1e-6*c.SustainedQPS {
				found++
			}
		}
	}
	if found == 0 {
		t.Errorf("no dns-load sample of %g in the OpenMetrics", c.SustainedQPS)
	}
}
