package report

import (
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The dataplane figure compares each endpoint with itself, weighted by its connections; the
// routing figure compares where connections landed with DST. An endpoint without straight
// handshakes stays out; without DST's there is no routing figure.
func TestSpreadCosts(t *testing.T) {
	hs := func(n int, p50 float64) v1alpha1.Handshakes { return v1alpha1.Handshakes{Count: n, P50Micros: p50} }
	s := &v1alpha1.SpreadResult{Endpoints: []v1alpha1.SpreadEndpoint{
		{Pod: "near", Service: hs(150, 230), Direct: hs(50, 200)},
		{Pod: "far", Service: hs(50, 4290), Direct: hs(50, 4250)},
		{Pod: "unreached", Service: hs(0, 0), Direct: hs(50, 900)},
		{Pod: "no-direct", Service: hs(10, 5000), Direct: hs(0, 0)}, // 10 of 210: left out
	}, DST: &v1alpha1.Handshakes{Count: 50, P50Micros: 4250}}
	d, r, okD, okR := SpreadCosts(s)
	// dataplane (150·30 + 50·40) / 200 = 32.5; routing (150·200 + 50·4250) / 200 − 4250 = −3037.5
	if !okD || !okR || d != 32.5 || r != -3037.5 {
		t.Errorf("dataplane %v (%v), routing %v (%v): want 32.5 and −3037.5", d, okD, r, okR)
	}
	s.DST = nil
	if _, _, okD, okR := SpreadCosts(s); !okD || okR {
		t.Errorf("without DST's handshakes: dataplane %v, routing %v; want only the dataplane", okD, okR)
	}
	s.Endpoints[3].Service.Count = 30 // 30 of 230 answered by an endpoint never reached straight
	if _, _, okD, _ := SpreadCosts(s); okD {
		t.Error("a figure over endpoints that answered less than 90 % of the connections")
	}
}
