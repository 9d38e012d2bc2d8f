package report

import "fmt"

// MinOutlierExcessMicros keeps differences below it from being called outliers: under it, a
// pair's RTT is within what scheduling on a busy node moves.
const MinOutlierExcessMicros = 50

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
		if Measured(p) {
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
		if Measured(p) {
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
			s.Ratio, s.ExcessMicros = round3(median(ratios)), Round1(median(excess))
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
		if !Measured(p) || slow[p.From] || slow[p.To] {
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
