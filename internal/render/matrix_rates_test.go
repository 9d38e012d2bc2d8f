package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// rateResult is a rate probe's result at perSecond (tcp-crr on 4 clients, the others on 1).
func rateResult(kind string, perSecond float64) *agent.ProbeResult {
	clients := 1
	if kind == agent.ProbeTCPCRR {
		clients = 4
	}
	return &agent.ProbeResult{Kind: kind, Name: kind, Rate: &v1alpha1.RateResult{Kind: kind, Connections: clients, DurationSeconds: 2,
		Transactions: int64(2 * perSecond), PerSecond: perSecond, Latency: v1alpha1.Latency{P50Micros: float64(clients) * 1e6 / perSecond}}}
}

// A matrix with --rates: each cell's rate is the median of its pairs' (a pair that measured no
// transaction has none), named FROM:TO.tcp-rr.rate, planned as such; the worst cell of a rate
// is its lowest; the text report has a grid per rate probe, OpenMetrics a sample per cell and
// pair.
func TestMatrixRates(t *testing.T) {
	r := slowNodeMatrix()
	for i := range r.Pairs {
		p := &r.Pairs[i]
		base := 10000.0
		if p.FromZone != p.ToZone {
			base = 3000
		}
		if p.From == "b1" || p.To == "b1" {
			base /= 2
		}
		p.Results = append(p.Results, rateResult(agent.ProbeTCPRR, base), rateResult(agent.ProbeUDPRR, base*1.1), rateResult(agent.ProbeTCPCRR, base/4))
		switch {
		case p.From == "a2" && p.To == "a1": // tcp-crr skipped (no ports to spare): no rate, not 0
			p.Results[len(p.Results)-1] = &agent.ProbeResult{Kind: agent.ProbeTCPCRR, Name: "tcp-crr", Skipped: "stopped before the first transaction"}
		case p.From == "b1" && p.To == "a1":
			x := p.Results[len(p.Results)-1].Rate
			x.Capped, x.Cap, x.Transactions = true, 500, 500
		}
	}
	r.BuildMatrix(1.5, 1.2)
	figs := report.Figures(r.FigureValues())
	// zone-a → zone-b: a1→b1 1500, a1→b2 3000, a2→b1 1500, a2→b2 3000: median 2250.
	// zone-a → zone-a tcp-crr: only a1→a2 measured: 2500.
	for name, want := range map[string]float64{"zone-a:zone-b.tcp-rr.rate": 2250, "zone-a:zone-a.tcp-rr.rate": 10000, "zone-a:zone-a.tcp-crr.rate": 2500,
		"zone-b:zone-b.udp-rr.rate": 5500, "cross-zone.tcp-rr.rate": 2250, "worst.tcp-rr.rate": 2250, "same-zone.tcp-rr.rate": 5000} {
		if got, ok := figs[name]; !ok || got.Value != want || got.Unit != report.UnitReqPerS {
			t.Errorf("%s = %+v (found %v), want %v req/s", name, got, ok, want)
		}
	}
	planned := report.MatrixPlannedFigures([][2]string{{"zone-a", "zone-b"}, {"zone-a", "zone-a"}}, report.MatrixMeasures{Rates: true})
	for _, name := range []string{"zone-a:zone-b.tcp-crr.rate", "worst.udp-rr.rate", "same-zone.tcp-rr.rate"} {
		if planned[name] != report.UnitReqPerS {
			t.Errorf("%s not planned in req/s: %q", name, planned[name])
		}
	}
	if _, ok := report.MatrixPlannedFigures([][2]string{{"zone-a", "zone-b"}}, report.MatrixMeasures{})["zone-a:zone-b.tcp-rr.rate"]; ok {
		t.Error("rates planned without --rates")
	}
	var text bytes.Buffer
	if err := WriteMatrix(&text, "", r, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tcp-rr by node, transactions per second", "tcp-crr by node, connections per second (median of the cell's pairs; 4 client(s)",
		"1 pair(s) ended at the cap of 500 before their time", "rates not measured a2 → a1: tcp-crr: stopped before the first transaction"} {
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
	// 4 zone cells and 12 measured pairs, 3 probes each, less a2→a1's tcp-crr.
	if got := fams["netbench_requests_per_second"]; got == nil || len(got.Metric) != 3*(4+12)-1 {
		t.Errorf("OpenMetrics rates: %v", got)
	}
	var html bytes.Buffer
	if err := WriteMatrixHTML(&html, r); err != nil || !strings.Contains(html.String(), "tcp-rr 10000/s") {
		t.Errorf("html lacks the rates (%v)", err)
	}
}

// A cell that measured the other rates but not tcp-crr (every pair of it failed or was skipped)
// leaves the worst tcp-crr of its class and overall unknown: the aliases are left out, so a gate
// on them cannot pass on the other cells.
func TestMatrixRateWorstFailsClosed(t *testing.T) {
	r := slowNodeMatrix()
	for i := range r.Pairs {
		p := &r.Pairs[i]
		p.Results = append(p.Results, rateResult(agent.ProbeTCPRR, 5000))
		if p.FromZone != "zone-b" || p.ToZone != "zone-a" {
			p.Results = append(p.Results, rateResult(agent.ProbeTCPCRR, 1000))
		}
	}
	r.BuildMatrix(1.5, 1.2)
	figs := report.Figures(r.FigureValues())
	for _, name := range []string{"worst.tcp-crr.rate", "cross-zone.tcp-crr.rate"} {
		if f, ok := figs[name]; ok {
			t.Errorf("%s = %v though cell zone-b → zone-a measured no tcp-crr", name, f.Value)
		}
	}
	for _, name := range []string{"same-zone.tcp-crr.rate", "zone-a:zone-b.tcp-crr.rate", "worst.tcp-rr.rate"} {
		if _, ok := figs[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	// One pair of a cell that others measured: its cell's median stands, the class's worst not
	// (the fixture's a1 → x9, not measured at all, weighs on no alias).
	r = slowNodeMatrix()
	for i := range r.Pairs {
		p := &r.Pairs[i]
		p.Results = append(p.Results, rateResult(agent.ProbeTCPRR, 5000))
		if p.From != "a1" || p.To != "a2" {
			p.Results = append(p.Results, rateResult(agent.ProbeTCPCRR, 1000))
		}
	}
	r.BuildMatrix(1.5, 1.2)
	figs = report.Figures(r.FigureValues())
	_, sameZone := figs["same-zone.tcp-crr.rate"]
	_, worst := figs["worst.tcp-crr.rate"]
	_, cell := figs["zone-a:zone-a.tcp-crr.rate"]
	_, cross := figs["cross-zone.tcp-crr.rate"]
	if sameZone || worst || !cell || !cross {
		t.Errorf("a1 → a2 without tcp-crr: same-zone alias %v, worst %v (want neither), its cell %v, cross-zone %v (want both)", sameZone, worst, cell, cross)
	}
}
