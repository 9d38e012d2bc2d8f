package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// BuildMatrix fills the pairs' figures, the cells, the per-node summary and the outliers from
// the pairs' results. factor is how many times its cell's other pairs a pair must be to be
// called an outlier, nodeFactor the same for the median of a node's pairs (lower: a median
// over many pairs moves less than one pair's figure).
func (r *MatrixReport) BuildMatrix(factor, nodeFactor float64) {
	if r.IPv6 == nil { // a report read back keeps its part
		if v6 := r.splitIPv6(); v6 != nil {
			r.IPv6 = (*v1alpha1.MatrixReport)(v6)
		}
	}
	// Both families' cells come from one probe, so that their difference is the family's.
	probe := rttProbe(r.Pairs)
	if v6 := r.V6(); v6 != nil {
		if rttProbe(v6.Pairs) == v1alpha1.ProbeTCPRTT {
			probe = v1alpha1.ProbeTCPRTT
		}
		v6.build(factor, nodeFactor, probe)
	}
	r.build(factor, nodeFactor, probe)
}

// rttProbe is what the cells' RTT comes from: ICMP, unless a measured pair could not send it
// (not permitted: skipped, or no result), then the TCP handshake for every pair. ICMP that went
// unanswered is that pair's loss, not a reason to change probe.
func rttProbe(pairs []MatrixPair) string {
	for _, p := range pairs {
		if p.Error != "" {
			continue
		}
		i := slices.IndexFunc(p.Results, func(r *v1alpha1.ProbeResult) bool { return r.Kind == v1alpha1.ProbeICMP })
		if i < 0 || p.Results[i].Skipped != "" || p.Results[i].RTT == nil {
			return v1alpha1.ProbeTCPRTT
		}
	}
	return v1alpha1.ProbeICMP
}

// V6 is an --ip-family both run's IPv6 report (nil otherwise).
func (r *MatrixReport) V6() *MatrixReport { return (*MatrixReport)(r.IPv6) }

// splitIPv6 moves an --ip-family both run's IPv6 results (probes named *-v6) out of the pairs
// into a report of their own, the same pairs over IPv6; nil when the pairs have none.
func (r *MatrixReport) splitIPv6() *MatrixReport {
	v6 := &MatrixReport{Scope: r.Scope, IPFamily: "IPv6", Plan: r.Plan, Pairs: make([]MatrixPair, len(r.Pairs))}
	for _, n := range r.Nodes {
		v6.Nodes = append(v6.Nodes, MatrixNode{Name: n.Name, Zone: n.Zone, Pod: n.Pod}) // podIP: the IPv4 part's
	}
	found := false
	for i := range r.Pairs {
		p := &r.Pairs[i]
		twin := MatrixPair{From: p.From, To: p.To, FromZone: p.FromZone, ToZone: p.ToZone, Error: p.IPv6Error, RateError: p.IPv6RateError}
		found = found || p.IPv6Error != "" || p.IPv6RateError != ""
		var own []*v1alpha1.ProbeResult
		for _, res := range p.Results {
			if strings.HasSuffix(res.Name, v1alpha1.IPv6ProbeSuffix) {
				twin.Results, found = append(twin.Results, res), true
			} else {
				own = append(own, res)
			}
		}
		p.Results, v6.Pairs[i] = own, twin
	}
	if !found {
		return nil
	}
	r.IPFamily = "IPv4"
	return v6
}

// build fills one family's figures (see BuildMatrix).
func (r *MatrixReport) build(factor, nodeFactor float64, probe string) {
	r.Factor, r.NodeFactor, r.Outliers, r.Probe = factor, nodeFactor, nil, probe
	for i := range r.Pairs {
		fillPair(&r.Pairs[i], r.Probe)
	}
	r.Zones = cells(r.Pairs, func(p MatrixPair) (string, string) { return p.FromZone, p.ToZone })
	if r.Scope == "nodes" {
		r.NodeGrid = cells(r.Pairs, func(p MatrixPair) (string, string) { return p.From, p.To })
	}
	ix := newCellIndex(r.Pairs)
	r.summarizeNodes(ix)
	r.flagPairs(ix)
}

func rttOf(results []*v1alpha1.ProbeResult, kind string) *v1alpha1.ProbeResult {
	for _, res := range results {
		if res.Kind == kind && res.Skipped == "" && res.RTT != nil && res.RTT.Received > 0 {
			return res
		}
	}
	return nil
}

// fillPair sets a measured pair's figures from its results: probe's RTT, and the throughput.
func fillPair(p *MatrixPair, probe string) {
	if p.Error != "" {
		return
	}
	for _, res := range p.Results {
		Judge(res, Agents{}) // the DaemonSet's agents: their own quotas are in their accounting, no app beside them
	}
	res := rttOf(p.Results, probe)
	if res == nil {
		p.Error = "no " + probe + " result"
		if i := slices.IndexFunc(p.Results, func(r *v1alpha1.ProbeResult) bool { return r.Kind == probe && r.RTT != nil }); i >= 0 {
			p.Error = fmt.Sprintf("%s: none of %d round trips answered (100 %% loss)", probe, p.Results[i].RTT.Sent)
		}
		return
	}
	l := res.RTT.RTT
	p.P50Micros, p.P99Micros, p.Samples = l.P50Micros, l.P99Micros, res.RTT.Received
	p.ResolutionMicros, p.LossPercent = l.ResolutionMicros, res.RTT.LossPercent
	for _, res := range p.Results {
		if res.Throughput != nil && res.Skipped == "" {
			g := round3(res.Throughput.BitsPerSecondReceived / 1e9)
			p.Gbps = &g
		}
		if res.Skipped != "" && res.Rate == nil && v1alpha1.IsRateProbe(res.Kind) {
			p.RateError = joinNote(p.RateError, res.Name+": "+res.Skipped)
		}
		if rate := res.Rate; rate != nil && res.Skipped == "" && rate.Transactions > 0 {
			if p.PerSecond == nil {
				p.PerSecond = map[string]float64{}
			}
			p.PerSecond[rate.Kind] = Round1(rate.PerSecond)
		}
	}
}

// joinNote adds note to a "; "-separated list, once.
func joinNote(list, note string) string {
	switch {
	case list == "":
		return note
	case strings.Contains(list, note):
		return list
	}
	return list + "; " + note
}

// Measured says whether a pair has figures.
func Measured(p MatrixPair) bool { return p.Error == "" && p.Samples > 0 }

// cells groups the measured pairs by key, in key order.
func cells(pairs []MatrixPair, key func(MatrixPair) (string, string)) []MatrixCell {
	groups := map[[2]string][]MatrixPair{}
	for _, p := range pairs {
		if Measured(p) {
			a, b := key(p)
			groups[[2]string{a, b}] = append(groups[[2]string{a, b}], p)
		}
	}
	keys := make([][2]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [2]string) int {
		if x[0] != y[0] {
			return cmpString(x[0], y[0])
		}
		return cmpString(x[1], y[1])
	})
	out := make([]MatrixCell, 0, len(keys))
	for _, k := range keys {
		out = append(out, cellOf(k[0], k[1], groups[k]))
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cellOf(from, to string, ps []MatrixPair) MatrixCell {
	var p50, p99, gbps []float64
	for _, p := range ps {
		p50, p99 = append(p50, p.P50Micros), append(p99, p.P99Micros)
		if p.Gbps != nil {
			gbps = append(gbps, *p.Gbps)
		}
	}
	c := MatrixCell{From: from, To: to, Pairs: len(ps), P50Micros: Round1(median(p50)), P99Micros: Round1(median(p99)),
		MinP50: Round1(slices.Min(p50)), MaxP50: Round1(slices.Max(p50))}
	if len(gbps) > 0 {
		g := round3(median(gbps))
		c.Gbps = &g
	}
	c.PerSecond = medianRates(ps)
	return c
}

// medianRates is each rate probe's median per second over the pairs that measured it (nil
// without any).
func medianRates(ps []MatrixPair) map[string]float64 {
	byKind := map[string][]float64{}
	for _, p := range ps {
		for kind, v := range p.PerSecond {
			byKind[kind] = append(byKind[kind], v)
		}
	}
	if len(byKind) == 0 {
		return nil
	}
	out := make(map[string]float64, len(byKind))
	for kind, vs := range byKind {
		out[kind] = Round1(median(vs))
	}
	return out
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
