package report

import (
	"sort"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// HigherIsWorse says which way a figure gets worse: latencies, counts and loss up; rates,
// throughput, sizes and validity (IsValidity) down.
func HigherIsWorse(f FigureValue) bool {
	if IsValidity(f.Name) {
		return false
	}
	switch f.Unit {
	case UnitGbps, UnitReqPerS, UnitBytes:
		return false
	}
	return true
}

// FigureValues lists the path report's figures (agent-to-agent and app-port probes); with
// rounds, each figure's median over them with their range (valid: the worst round).
func (r *PathReport) FigureValues() []FigureValue {
	if len(r.Figures) == 0 {
		return ProbeFigures(append(append([]*v1alpha1.ProbeResult{}, r.Probes...), r.AppPort...))
	}
	order := map[string]int{}
	for i, name := range r.FigureOrder {
		order[name] = i
	}
	fs := summaryFigureValues(r.Figures, order)
	for i := range fs {
		fs[i].Probe, fs[i].Stat = SplitFigure(fs[i].Name)
	}
	return append(append(fs, rttAliases(byName(fs))...), allValid(fs)...)
}

// SplitFigure splits a figure's name into its probe and statistic: svc.vs-dst-http.p50 is svc's
// vs-dst-http.p50, icmp.p99.9 icmp's p99.9, tcp-1.gbps tcp-1's gbps.
func SplitFigure(name string) (probe, stat string) {
	if probe, rest, ok := strings.Cut(name, "."); ok && (probe == "svc" || strings.HasPrefix(probe, "svc-")) {
		return probe, rest // svc-v6.dataplane-tcp-rtt.p50: a dual-stack Service's second ClusterIP
	}
	if strings.HasSuffix(name, ".p99.9") {
		return strings.TrimSuffix(name, ".p99.9"), "p99.9"
	}
	i := strings.LastIndex(name, ".")
	if i < 0 {
		return name, ""
	}
	return name[:i], name[i+1:]
}

// Summarize fills Figures and FigureOrder from RoundResults, when there were rounds.
func (r *PathReport) Summarize() {
	r.Figures, r.FigureOrder = nil, nil
	if len(r.RoundResults) > 1 {
		r.Figures = roundFigures(r.RoundResults, &r.FigureOrder, map[string]bool{})
	}
}

// DnsStats are the figures of each name: the queries one lookup sends as configured, the
// NXDOMAIN answers among them, and the warm latency of a whole lookup.
var DnsStats = []struct{ stat, unit string }{{"queries", UnitCount}, {"nxdomains", UnitCount}, {"p50", UnitMicros}, {"p99", UnitMicros}}

// raceStats are the race check's figures: lookups that waited out a timeout, as a count and a
// share of the lookups, and queries lost.
var raceStats = []struct{ stat, unit string }{{"slow", UnitCount}, {"slow_percent", UnitPercent}, {"lost", UnitCount}}

// capacityStats are the capacity ramp's figures: the nameserver's sustained queries per second,
// and the lookups per second they allow at the pod's amplification now.
var capacityStats = []struct{ stat, unit string }{{"qps", UnitReqPerS}, {"lookups", UnitReqPerS}}

// DNSPlannedFigures names the figures a dns run for these names reports: dns.<name>.<stat>,
// dns.race.<stat> with the race check, and valid (0 when the pod's CPU limit decided the
// latencies).
func DNSPlannedFigures(names []string, race, load bool) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		for _, s := range DnsStats {
			out["dns."+n+"."+s.stat] = s.unit
		}
	}
	for _, s := range raceStats {
		if race {
			out["dns.race."+s.stat] = s.unit
		}
	}
	if load {
		for _, s := range capacityStats {
			out["dns.capacity."+s.stat] = s.unit
		}
	}
	out["valid"] = UnitCount
	return out
}

// FigureValues lists the DNS report's figures, per name, as configured.
func (r *DNSReport) FigureValues() []FigureValue {
	if r.Result == nil || r.Result.DNSResult == nil {
		return nil
	}
	var out []FigureValue
	for _, n := range r.Result.Names {
		v := variant(n, "as configured")
		if v == nil {
			continue
		}
		vals := []FigureValue{{Value: float64(v.Queries)}, {Value: float64(v.NXDomains)},
			{Value: v.Warm.P50Micros, Spread: percentileInterval(v.Warm, 0.5)}, {Value: v.Warm.P99Micros, Spread: percentileInterval(v.Warm, 0.99)}}
		for i, s := range DnsStats {
			if s.unit == UnitMicros && v.Warm.Count == 0 {
				continue
			}
			f := vals[i]
			f.Name, f.Unit, f.Probe, f.Stat = "dns."+n.Name+"."+s.stat, s.unit, "dns", s.stat
			out = append(out, f)
		}
	}
	if rc := r.Result.Race; rc != nil && rc.Measured.Lookups > 0 {
		m := rc.Measured
		vals := []float64{float64(m.Slow), 100 * float64(m.Slow) / float64(m.Lookups), float64(m.Lost)}
		for i, s := range raceStats {
			out = append(out, FigureValue{Name: "dns.race." + s.stat, Unit: s.unit, Probe: "dns-race", Stat: s.stat, Value: vals[i]})
		}
	}
	if c := r.Capacity; c != nil {
		for i, v := range []float64{c.SustainedQPS, c.Now.LookupsPerSecond} {
			s := capacityStats[i]
			out = append(out, FigureValue{Name: "dns.capacity." + s.stat, Unit: s.unit, Probe: "dns-load", Stat: s.stat, Value: v})
		}
	}
	if r.Validity != nil {
		out = append(out, FigureValue{Name: "valid", Unit: UnitCount, Probe: "dns", Stat: "valid", Value: b2f(r.Validity.Valid)})
	}
	return out
}

// RungKey is how figures name a rung: its name with spaces as colons (same-node, same-zone,
// cross-zone:zone-b, host-network:zone-b).
func RungKey(name string) string { return strings.ReplaceAll(name, " ", ":") }

// classKeys are the class aliases a ladder figure may start with, each naming the worst rung of
// its class (both spellings: cross-zone and crosszone).
func classKeys(class string) []string {
	return []string{class, strings.ReplaceAll(class, "-", "")}
}

// LadderPlannedFigures names the figures a ladder reports for the rungs it will measure and the
// probes each runs: <rung>.<figure> and <class>.<figure>.
func LadderPlannedFigures(rungs []LadderRung, specs []agent.ProbeSpec) map[string]string {
	per := PlannedFigures(specs)
	out := map[string]string{}
	for _, r := range rungs {
		if r.Skipped != "" {
			continue
		}
		for _, key := range append([]string{RungKey(r.Name)}, classKeys(r.Class)...) {
			for f, unit := range per {
				out[key+"."+f] = unit
			}
		}
	}
	if _, ok := per["valid"]; ok {
		out["valid"] = UnitCount
	}
	return out
}

// FigureValues lists the ladder's figures: each rung's median per figure, and per class the
// worst rung's (highest latency, lowest throughput), each with the rounds' range.
func (r *LadderReport) FigureValues() []FigureValue {
	var out []FigureValue
	worst := newWorstFigures()
	order := map[string]int{}
	for i, name := range r.Figures {
		if _, ok := order[name]; !ok {
			order[name] = i
		}
	}
	for _, rung := range r.Rungs {
		fs := summaryFigureValues(rung.Figures, order)
		for _, fv := range append(fs, rttAliases(byName(fs))...) {
			name := fv.Name
			fv.Name = RungKey(rung.Name) + "." + name
			out = append(out, fv)
			for _, key := range classKeys(rung.Class) {
				worst.offer(key+"."+name, fv)
			}
		}
	}
	return append(append(out, worst.list()...), allValid(out)...)
}

// summaryFigureValues lists summarised figures (a rung's, or a path's rounds) in the report's
// order (order maps each name to its place), each its median with the rounds' range.
func summaryFigureValues(figs map[string]Figure, order map[string]int) []FigureValue {
	names := make([]string, 0, len(figs))
	for name := range figs {
		if _, ok := order[name]; ok {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
	fs := make([]FigureValue, 0, len(names))
	for _, name := range names {
		f := figs[name]
		fv := FigureValue{Name: name, Unit: f.Unit, Value: f.Median, Probe: name, Stat: "median"}
		if f.Samples > 1 {
			hi := f.Max
			fv.Spread = &Range{Low: f.Min, High: &hi}
		}
		fs = append(fs, fv)
	}
	return fs
}

// worstFigures keeps, per alias name, the worst figure offered (highest latency, count or loss;
// lowest rate or size), as an alias, in the order the names were first offered.
type worstFigures struct {
	byName map[string]FigureValue
	order  []string
}

func newWorstFigures() *worstFigures { return &worstFigures{byName: map[string]FigureValue{}} }

func (w *worstFigures) offer(name string, fv FigureValue) {
	cur, seen := w.byName[name]
	if !seen {
		w.order = append(w.order, name)
	}
	if !seen || (HigherIsWorse(fv) && fv.Value > cur.Value) || (!HigherIsWorse(fv) && fv.Value < cur.Value) {
		fv.Name, fv.Alias = name, true
		w.byName[name] = fv
	}
}

func (w *worstFigures) list() []FigureValue {
	out := make([]FigureValue, 0, len(w.order))
	for _, name := range w.order {
		out = append(out, w.byName[name])
	}
	return out
}
