package report

import (
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Figures of the spread probe, in µs of TCP handshake (p50s).
const (
	// FigureDataplane is what the Service's translation adds: per endpoint, the p50 through the
	// Service minus the p50 straight to the same endpoint agent, weighted by the connections it
	// answered. Where connections land does not enter it.
	FigureDataplane = "svc.dataplane-tcp-rtt.p50"
	// FigureRouting is what the Service's choice of endpoints gives against DST: the straight
	// p50 of the endpoints the connections landed on, weighted the same way, minus the straight
	// p50 to DST. Negative: the Service sent connections to nearer endpoints than DST.
	FigureRouting = "svc.routing-tcp-rtt.p50"
)

// SpreadCosts computes the two figures from one spread result; ok is false where the
// handshakes to compare are missing: no straight handshake to DST (routing), or endpoints
// without straight handshakes answered more than a tenth of the connections (both: the
// figures would describe only some of the endpoints).
func SpreadCosts(s *v1alpha1.SpreadResult) (dataplane, routing float64, okD, okR bool) {
	if s == nil {
		return 0, 0, false, false
	}
	var n, answered, cost, landed float64
	for _, e := range s.Endpoints {
		answered += float64(e.Service.Count)
		if e.Service.Count == 0 || e.Direct.Count == 0 {
			continue
		}
		w := float64(e.Service.Count)
		n += w
		cost += w * (e.Service.P50Micros - e.Direct.P50Micros)
		landed += w * e.Direct.P50Micros
	}
	if n == 0 || n < 0.9*answered {
		return 0, 0, false, false
	}
	dataplane, okD = Round1(cost/n), true
	if s.DST != nil && s.DST.Count > 0 {
		routing, okR = Round1(landed/n-s.DST.P50Micros), true
	}
	return dataplane, routing, okD, okR
}

// SpreadProbe names the spread probe; a dual-stack Service's second ClusterIP has its own,
// named with that family's suffix (svc-spread-v6).
const SpreadProbe = "svc-spread"

// SpreadFigureName is the figure name (FigureDataplane or FigureRouting) of the spread probe
// named probe: svc-spread-v6's are svc-v6.dataplane-tcp-rtt.p50 and so on.
func SpreadFigureName(figure, probe string) string {
	suffix, ok := strings.CutPrefix(probe, SpreadProbe)
	if !ok {
		suffix = ""
	}
	return strings.Replace(figure, "svc.", "svc"+suffix+".", 1)
}

// spreadFigures are the dataplane and routing figures of the spread probe named probe, if its
// result has them.
func spreadFigures(probe string, s *v1alpha1.SpreadResult) []FigureValue {
	d, r, okD, okR := SpreadCosts(s)
	var out []FigureValue
	add := func(figure string, v float64) {
		name := SpreadFigureName(figure, probe)
		p, stat, _ := strings.Cut(name, ".")
		out = append(out, FigureValue{Name: name, Unit: UnitMicros, Value: v, Probe: p, Stat: stat})
	}
	if okD {
		add(FigureDataplane, d)
	}
	if okR {
		add(FigureRouting, r)
	}
	return out
}
