package report

import (
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// A matrix names each zone cell's validity (0 when a CPU limit decided any of its pairs' probes)
// and the whole matrix's, which --fail-if 'valid == 0' gates; without the agents' accounting,
// neither.
func TestMatrixValidFigures(t *testing.T) {
	pair := func(from, to string, valid bool) MatrixPair {
		return MatrixPair{FromZone: from, ToZone: to, Results: []*v1alpha1.ProbeResult{{Name: "icmp", Validity: &v1alpha1.Validity{Valid: valid}}}}
	}
	r := &MatrixReport{
		Zones: []MatrixCell{{From: "zone-a", To: "zone-a"}, {From: "zone-a", To: "zone-b"}},
		Pairs: []MatrixPair{pair("zone-a", "zone-a", true), pair("zone-a", "zone-b", true), pair("zone-a", "zone-b", false)},
	}
	figs := Figures(r.FigureValues())
	for name, want := range map[string]float64{"zone-a:zone-a.valid": 1, "zone-a:zone-b.valid": 0, "valid": 0} {
		if got, ok := figs[name]; !ok || got.Value != want {
			t.Errorf("%s = %+v (found %v), want %v", name, got, ok, want)
		}
	}
	planned := MatrixPlannedFigures([][2]string{{"zone-a", "zone-b"}}, MatrixMeasures{})
	for _, name := range []string{"valid", "zone-a:zone-b.valid"} {
		if _, ok := planned[name]; !ok {
			t.Errorf("%s not planned: %v", name, planned)
		}
	}
	r.Pairs[2].Results[0].Validity.Valid = true
	if got := Figures(r.FigureValues())["valid"]; got.Value != 1 {
		t.Errorf("every pair valid: valid = %+v", got)
	}
	for i := range r.Pairs {
		r.Pairs[i].Results[0].Validity = nil
	}
	if _, ok := Figures(r.FigureValues())["valid"]; ok {
		t.Error("valid without any accounting")
	}
}
