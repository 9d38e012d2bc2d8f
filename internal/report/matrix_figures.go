package report

import (
	"slices"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// MatrixV6Prefix starts the names of an --ip-family both matrix's IPv6 figures
// (v6.zone-a:zone-b.rtt.p50, v6.worst.rtt.p50); the plain names are IPv4's.
const MatrixV6Prefix = "v6."

// CellKey names a zone cell in figure names: FROM:TO, "none" for nodes without a zone label.
func CellKey(from, to string) string { return zoneKey(from) + ":" + zoneKey(to) }

func zoneKey(z string) string {
	if z == "" || strings.HasPrefix(z, "(") {
		return "none"
	}
	return z
}

// matrixStats are each zone cell's figures.
var matrixStats = []struct{ name, unit string }{{"rtt.p50", UnitMicros}, {"rtt.p99", UnitMicros}}

// MatrixRateKinds are the rate probes a matrix with --rates runs on every pair, in this order.
var MatrixRateKinds = []string{v1alpha1.ProbeTCPRR, v1alpha1.ProbeUDPRR, v1alpha1.ProbeTCPCRR}

// MatrixMeasures says what a matrix measures beyond RTT: throughput (--throughput), the rate
// probes (--rates), each over both families (--ip-family both).
type MatrixMeasures struct{ Throughput, Rates, BothFamilies bool }

// MatrixPlannedFigures names the figures a matrix over these zone pairs reports: per cell
// FROM:TO.rtt.p50|p99 (and .tcp.gbps with throughput, .tcp-rr.rate … with rates) and
// FROM:TO.valid, the worst same-zone, cross-zone and overall cells' (same-zone.rtt.p50 …; a
// rate's worst is its lowest), outliers.count and valid; with both families, each again for
// IPv6 (MatrixV6Prefix).
func MatrixPlannedFigures(cells [][2]string, m MatrixMeasures) map[string]string {
	out := map[string]string{"outliers.count": UnitCount}
	add := func(key string) {
		for _, s := range matrixStats {
			out[key+"."+s.name] = s.unit
		}
		if m.Throughput {
			out[key+".tcp.gbps"] = UnitGbps
		}
		for _, kind := range MatrixRateKinds {
			if m.Rates {
				out[key+"."+kind+".rate"] = UnitReqPerS
			}
		}
	}
	out["valid"] = UnitCount
	for _, c := range cells {
		add(CellKey(c[0], c[1]))
		out[CellKey(c[0], c[1])+".valid"] = UnitCount
		add("worst")
		if c[0] == c[1] {
			add("same-zone")
		} else {
			add("cross-zone")
		}
	}
	if m.BothFamilies {
		for k, u := range out {
			out[MatrixV6Prefix+k] = u
		}
	}
	return out
}

// FigureValues lists the matrix's figures for --fail-if, diff and OpenMetrics: each zone cell's,
// then the worst cell of each class and overall (aliases), then the number of outliers; with
// both families, IPv6's after (named with MatrixV6Prefix, their probes with the -v6 suffix).
func (r *MatrixReport) FigureValues() []FigureValue {
	out := r.familyFigures()
	if r.IPv6 != nil {
		for _, f := range r.V6().familyFigures() {
			f.Name, f.Probe = MatrixV6Prefix+f.Name, f.Probe+v1alpha1.IPv6ProbeSuffix
			out = append(out, f)
		}
	}
	return out
}

// familyFigures are one family's figures (see FigureValues).
func (r *MatrixReport) familyFigures() []FigureValue {
	var out []FigureValue
	worst := newWorstFigures()
	for _, c := range r.Zones {
		fs := []FigureValue{
			{Name: "rtt.p50", Unit: UnitMicros, Value: c.P50Micros, Probe: r.Probe, Stat: "p50", Spread: cellRange(c.MinP50, c.MaxP50)},
			{Name: "rtt.p99", Unit: UnitMicros, Value: c.P99Micros, Probe: r.Probe, Stat: "p99"},
		}
		if c.Gbps != nil {
			fs = append(fs, FigureValue{Name: "tcp.gbps", Unit: UnitGbps, Value: *c.Gbps, Probe: "tcp", Stat: "gbps"})
		}
		for _, kind := range MatrixRateKinds {
			if v, ok := c.PerSecond[kind]; ok {
				fs = append(fs, FigureValue{Name: kind + ".rate", Unit: UnitReqPerS, Value: v, Probe: kind, Stat: "rate"})
			}
		}
		class := "cross-zone"
		if c.From == c.To {
			class = "same-zone"
		}
		for _, f := range fs {
			name := f.Name
			f.Name = CellKey(c.From, c.To) + "." + name
			out = append(out, f)
			for _, key := range []string{class, "worst"} {
				worst.offer(key+"."+name, f)
			}
		}
	}
	out = append(out, r.withoutUnmeasuredRates(worst.list())...)
	out = append(out, FigureValue{Name: "outliers.count", Unit: UnitCount, Value: float64(len(r.Outliers)), Probe: "outliers", Stat: "count"})
	return append(out, r.validFigures()...)
}

// withoutUnmeasuredRates drops a rate's worst-cell aliases (same-zone.tcp-crr.rate,
// worst.tcp-crr.rate) where a measured pair of their class has no such rate while others
// measured it (the probe failed or was skipped): the worst of that class is then unknown, and
// a gate on it must not pass (it cannot, without the figure) on the pairs that did measure it.
// A pair not measured at all (its agent not ready) is named in the report and weighs on no
// alias, RTT's or the rates'.
func (r *MatrixReport) withoutUnmeasuredRates(aliases []FigureValue) []FigureValue {
	unknown := map[string]bool{}
	for _, kind := range MatrixRateKinds {
		if !slices.ContainsFunc(r.Pairs, func(p MatrixPair) bool { _, ok := p.PerSecond[kind]; return ok }) {
			continue // not measured anywhere: no alias either
		}
		for _, p := range r.Pairs {
			if _, ok := p.PerSecond[kind]; !ok && Measured(p) {
				class := "cross-zone"
				if p.FromZone == p.ToZone {
					class = "same-zone"
				}
				unknown[class+"."+kind+".rate"], unknown["worst."+kind+".rate"] = true, true
			}
		}
	}
	return slices.DeleteFunc(aliases, func(f FigureValue) bool { return unknown[f.Name] })
}

// validFigures are FROM:TO.valid for each zone cell whose pairs' probes carry the agents'
// accounting (0 when a CPU limit decided any of them) and valid for the whole matrix (zone or
// node scope).
func (r *MatrixReport) validFigures() []FigureValue {
	accounted, invalid := map[string]bool{}, map[string]bool{}
	all := true
	for _, p := range r.Pairs {
		key := CellKey(p.FromZone, p.ToZone)
		for _, res := range p.Results {
			if res != nil && res.Validity != nil {
				accounted[key] = true
				invalid[key] = invalid[key] || !res.Validity.Valid
				all = all && res.Validity.Valid
			}
		}
	}
	if len(accounted) == 0 {
		return nil
	}
	var out []FigureValue
	for _, c := range r.Zones {
		if key := CellKey(c.From, c.To); accounted[key] {
			out = append(out, FigureValue{Name: key + ".valid", Unit: UnitCount, Value: b2f(!invalid[key]), Probe: key, Stat: "valid"})
		}
	}
	return append(out, FigureValue{Name: "valid", Unit: UnitCount, Value: b2f(all), Probe: "valid", Stat: "valid", Alias: true})
}

func cellRange(lo, hi float64) *Range {
	if lo == hi {
		return nil
	}
	return &Range{Low: lo, High: &hi}
}
