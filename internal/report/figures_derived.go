package report

import (
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// derived are the figures computed from others: what a new connection adds to the keep-alive
// p50, the Service's path minus the path to DST's pod IP (routing and dataplane together), and
// rtt.* (ICMP where measured, else TCP). fams are the probes' address families, where known.
func derived(fs []FigureValue, fams map[string]string) []FigureValue {
	v := byName(fs)
	var out []FigureValue
	if x, y, ok := pairOf(v, "http-new-conn.p50", "http.p50"); ok {
		out = append(out, FigureValue{Name: "http-new-conn.extra-p50", Unit: UnitMicros, Value: x.Value - y.Value, Probe: "http-new-conn", Stat: "extra-p50"})
	}
	out = append(out, vsDST(v, fams)...)
	return append(append(out, rttAliases(v)...), allValid(fs)...)
}

func pairOf(v map[string]FigureValue, a, b string) (FigureValue, FigureValue, bool) {
	x, ok1 := v[a]
	y, ok2 := v[b]
	return x, y, ok1 && ok2
}

// vsDST is the Service's path minus the path to DST's pod IP of the same address family:
// svc.vs-dst-* through the primary ClusterIP, svc-v6.vs-dst-* (svc-v4.…) through a dual-stack
// Service's second. Where the results say no family, the twins pair by name (svc-X with app-X,
// svc-X-v6 with app-X-v6).
func vsDST(v map[string]FigureValue, fams map[string]string) []FigureValue {
	var out []FigureValue
	for _, f := range vsDSTFigures {
		base, stat, _ := strings.Cut(f, ".")
		for _, sfx := range []string{"", v1alpha1.IPv6ProbeSuffix, v1alpha1.IPv4ProbeSuffix} {
			svc := "svc-" + base + sfx
			app := "app-" + base + sfx
			if fam := fams[svc]; fam != "" {
				app = ""
				for _, a := range []string{"app-" + base, "app-" + base + v1alpha1.IPv6ProbeSuffix} {
					if fams[a] == fam {
						app = a
					}
				}
			}
			if x, y, ok := pairOf(v, svc+"."+stat, app+"."+stat); ok {
				probe := "svc" + sfx
				out = append(out, FigureValue{Name: probe + ".vs-dst-" + f, Unit: UnitMicros, Value: x.Value - y.Value, Probe: probe, Stat: "vs-dst-" + f})
			}
		}
	}
	return out
}

// vsDSTFigures are the figures svc.vs-dst-* sets the Service's against DST's.
var vsDSTFigures = []string{"tcp-rtt.p50", "http.p50", "http.p99"}

// plannedVsDST names the vs-dst figures a run may report before the families are known: each
// Service probe's (primary ClusterIP, or the second's -v6/-v4) where DST has a figure of that
// base in some family.
func plannedVsDST(v map[string]FigureValue) []string {
	var out []string
	for _, f := range vsDSTFigures {
		base, stat, _ := strings.Cut(f, ".")
		_, app4 := v["app-"+base+"."+stat]
		_, app6 := v["app-"+base+v1alpha1.IPv6ProbeSuffix+"."+stat]
		for _, sfx := range []string{"", v1alpha1.IPv6ProbeSuffix, v1alpha1.IPv4ProbeSuffix} {
			if _, ok := v["svc-"+base+sfx+"."+stat]; ok && (app4 || app6) {
				out = append(out, "svc"+sfx+".vs-dst-"+f)
			}
		}
	}
	return out
}
