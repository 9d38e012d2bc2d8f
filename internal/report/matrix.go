package report

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// MinOutlierExcessMicros keeps differences below it from being called outliers: under it, a
// pair's RTT is within what scheduling on a busy node moves.
const MinOutlierExcessMicros = 50

// BuildMatrix fills the pairs' figures, the cells, the per-node summary and the outliers from
// the pairs' results. factor is how many times its cell's other pairs a pair must be to be
// called an outlier, nodeFactor the same for the median of a node's pairs (lower: a median
// over many pairs moves less than one pair's figure).
func (r *MatrixReport) BuildMatrix(factor, nodeFactor float64) {
	r.Factor, r.NodeFactor, r.Outliers = factor, nodeFactor, nil
	r.Probe = v1alpha1.ProbeICMP
	for _, p := range r.Pairs {
		if p.Error == "" && rttOf(p.Results, v1alpha1.ProbeICMP) == nil {
			r.Probe = v1alpha1.ProbeTCPRTT
		}
	}
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
	res := rttOf(p.Results, probe)
	if res == nil {
		p.Error = "no " + probe + " result"
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
	}
}

// measured says whether a pair has figures.
func measured(p MatrixPair) bool { return p.Error == "" && p.Samples > 0 }

// cells groups the measured pairs by key, in key order.
func cells(pairs []MatrixPair, key func(MatrixPair) (string, string)) []MatrixCell {
	groups := map[[2]string][]MatrixPair{}
	for _, p := range pairs {
		if measured(p) {
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
	c := MatrixCell{From: from, To: to, Pairs: len(ps), P50Micros: round1(median(p50)), P99Micros: round1(median(p99)),
		MinP50: round1(slices.Min(p50)), MaxP50: round1(slices.Max(p50))}
	if len(gbps) > 0 {
		g := round3(median(gbps))
		c.Gbps = &g
	}
	return c
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

// cellIndex finds the pairs of a zone cell, and the median figure of those that involve
// neither of two nodes: what a pair or a node is compared with. Medians per (cell, node) are
// kept, so a report costs O(pairs × cell size), not O(pairs²).
type cellIndex struct {
	pairs   []MatrixPair
	byCell  map[[2]string][]int
	cache   map[othersKey]othersVal
	scratch []float64
}

type othersKey struct {
	cell  [2]string
	a, b  string
	which string
}

type othersVal struct {
	v  float64
	ok bool
}

func newCellIndex(pairs []MatrixPair) *cellIndex {
	ix := &cellIndex{pairs: pairs, byCell: map[[2]string][]int{}, cache: map[othersKey]othersVal{}}
	for i, p := range pairs {
		if measured(p) {
			k := [2]string{p.FromZone, p.ToZone}
			ix.byCell[k] = append(ix.byCell[k], i)
		}
	}
	return ix
}

// others is the median p50 or p99 (which) of the pairs in p's cell that involve neither a nor b.
func (ix *cellIndex) others(p MatrixPair, a, b, which string) (float64, bool) {
	k := othersKey{cell: [2]string{p.FromZone, p.ToZone}, a: a, b: b, which: which}
	if v, ok := ix.cache[k]; ok {
		return v.v, v.ok
	}
	vs := ix.scratch[:0]
	for _, i := range ix.byCell[k.cell] {
		q := ix.pairs[i]
		if q.From == a || q.To == a || q.From == b || q.To == b {
			continue
		}
		vs = append(vs, figure(q, which))
	}
	ix.scratch = vs
	v := othersVal{v: median(vs), ok: len(vs) > 0}
	if b == "" { // per node: reused by each of its pairs
		ix.cache[k] = v
	}
	return v.v, v.ok
}

// MinSamplesForP99 is how many round trips a pair needs before its p99 may call it an outlier:
// with fewer, the p99 is one of the two largest samples, and one late packet would do.
const MinSamplesForP99 = 200

func pairFigures(p MatrixPair) []string {
	if p.Samples >= MinSamplesForP99 {
		return []string{"p99", "p50"}
	}
	return []string{"p50"}
}

// othersThan is the median p50 or p99 of the pairs of p's cell other than p.
func (ix *cellIndex) othersThan(p MatrixPair, which string) (float64, bool) {
	var vs []float64
	for _, i := range ix.byCell[[2]string{p.FromZone, p.ToZone}] {
		if q := ix.pairs[i]; q.From != p.From || q.To != p.To {
			vs = append(vs, figure(q, which))
		}
	}
	return median(vs), len(vs) > 0
}

func figure(p MatrixPair, which string) float64 {
	if which == "p99" {
		return p.P99Micros
	}
	return p.P50Micros
}

// summarizeNodes compares each node's pairs with the other pairs of the same cells (those not
// involving the node) and marks the nodes at least NodeFactor times slower, by the median.
func (r *MatrixReport) summarizeNodes(ix *cellIndex) {
	r.Summary = nil
	byNode := map[string][]int{}
	for i, p := range r.Pairs {
		if measured(p) {
			byNode[p.From] = append(byNode[p.From], i)
			byNode[p.To] = append(byNode[p.To], i)
		}
	}
	for _, n := range r.Nodes {
		s := NodeSummary{Node: n.Name, Zone: n.Zone}
		var ratios, excess []float64
		for _, i := range byNode[n.Name] {
			p := r.Pairs[i]
			if p.From == n.Name {
				s.AsClient++
			} else {
				s.AsServer++
			}
			if base, ok := ix.others(p, n.Name, "", "p50"); ok && base > 0 {
				ratios, excess = append(ratios, p.P50Micros/base), append(excess, p.P50Micros-base)
			}
		}
		s.Compared = len(ratios)
		if len(ratios) > 0 {
			s.Ratio, s.ExcessMicros = round3(median(ratios)), round1(median(excess))
			s.Outlier = s.Ratio >= r.NodeFactor && s.ExcessMicros >= MinOutlierExcessMicros
		}
		if s.Outlier {
			r.Outliers = append(r.Outliers, MatrixFlag{Kind: "node", Node: n.Name, Figure: "p50", Ratio: s.Ratio,
				Message: fmt.Sprintf("%s is slow: the median of its %d pairs' p50 is %.2f× (+%s) the same cells' other pairs", n.Name, s.Compared, s.Ratio, Micros(s.ExcessMicros))})
		}
		r.Summary = append(r.Summary, s)
	}
}

// flagPairs names the pairs whose p50 (or p99, from MinSamplesForP99 round trips) is at least factor times the median of the cell's
// pairs that share neither of its nodes (or, where every other pair shares one, of the cell's
// other pairs), unless one of its nodes is an outlier already.
func (r *MatrixReport) flagPairs(ix *cellIndex) {
	slow := map[string]bool{}
	for _, s := range r.Summary {
		slow[s.Node] = s.Outlier
	}
	for _, p := range r.Pairs {
		if !measured(p) || slow[p.From] || slow[p.To] {
			continue
		}
		for _, which := range pairFigures(p) {
			base, ok := ix.others(p, p.From, p.To, which)
			if !ok { // every other pair of the cell shares a node with p: compare with them
				base, ok = ix.othersThan(p, which)
			}
			v := figure(p, which)
			if !ok || base <= 0 || v/base < r.Factor || v-base < MinOutlierExcessMicros {
				continue
			}
			r.Outliers = append(r.Outliers, MatrixFlag{Kind: "pair", From: p.From, To: p.To, Figure: which, Ratio: round3(v / base),
				Message: fmt.Sprintf("%s → %s (%s → %s) %s is %.1f× the cell's other pairs (%s vs %s)", p.From, p.To, p.FromZone, p.ToZone, which, v/base, Micros(v), Micros(base))})
			break
		}
	}
}
