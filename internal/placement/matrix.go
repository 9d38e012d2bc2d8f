package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Matrix scopes: which node pairs a matrix measures.
const (
	ScopeZones  = "zones"  // every ordered zone pair (each zone to itself too), K node pairs per cell
	ScopeNodes  = "nodes"  // every ordered pair of distinct nodes
	ScopeSample = "sample" // N ordered pairs of distinct nodes drawn at random
)

// NoZone names the zone of nodes without a zone label.
const NoZone = "(no zone)"

// Pair is one measurement of a matrix: the agent on From measures the agent on To.
type Pair struct {
	From     string `json:"from"`
	To       string `json:"to"`
	FromZone string `json:"fromZone"`
	ToZone   string `json:"toZone"`
}

// MatrixPlan says which pairs a matrix measures.
type MatrixPlan struct {
	Scope        string
	PairsPerCell int    // zones scope
	Sample       int    // sample scope
	MaxPairs     int    // a plan above it is refused (0: no bound)
	Seed         uint64 // sampling: the same seed plans the same pairs
}

// ErrTooManyPairs is returned, wrapped with the numbers, when a plan exceeds MaxPairs.
var ErrTooManyPairs = errors.New("too many pairs")

// Excluded is a node the matrix leaves out, and why.
type Excluded struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// Usable splits nodes into those an agent can run on (Ready, not cordoned, its taints
// tolerated by tol, inside the filter's selector and zones) and the rest with the reason.
// Both come sorted by name.
func Usable(nodes []Node, tol []corev1.Toleration, f Filter) (use []Node, out []Excluded) {
	nodes = slices.Clone(nodes)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		why := f.Excludes(n)
		if why == "" && len(f.Zones) > 0 && !slices.Contains(f.Zones, n.Zone) {
			why = "is not in --zones"
		}
		if why == "" {
			why = unusable(n, tol, "the agents do not tolerate (see --toleration, --tolerations-from)")
		}
		if why != "" {
			out = append(out, Excluded{Node: n.Name, Reason: why})
			continue
		}
		use = append(use, n)
	}
	return use, out
}

// ZoneOf is the zone a node's cells are under.
func ZoneOf(n Node) string {
	if n.Zone == "" {
		return NoZone
	}
	return n.Zone
}

// Plan chooses the pairs of a matrix over usable nodes (sorted by name).
func (p MatrixPlan) Plan(nodes []Node) ([]Pair, error) {
	var pairs []Pair
	switch p.Scope {
	case ScopeZones:
		pairs = zonePairs(nodes, p.PairsPerCell)
	case ScopeNodes:
		if n := len(nodes); p.MaxPairs > 0 && n*(n-1) > p.MaxPairs {
			return nil, fmt.Errorf("%w: every pair of %d nodes is %d pairs, above --max-pairs %d (raise it, or use --scope zones or --sample)",
				ErrTooManyPairs, n, n*(n-1), p.MaxPairs)
		}
		pairs = allPairs(nodes)
	case ScopeSample:
		pairs = samplePairs(nodes, p.Sample, p.Seed)
	default:
		return nil, fmt.Errorf("scope %q: want %s, %s or %s", p.Scope, ScopeZones, ScopeNodes, ScopeSample)
	}
	if p.MaxPairs > 0 && len(pairs) > p.MaxPairs {
		return nil, fmt.Errorf("%w: the plan has %d pairs, above --max-pairs %d", ErrTooManyPairs, len(pairs), p.MaxPairs)
	}
	return pairs, nil
}

func pairOf(a, b Node) Pair {
	return Pair{From: a.Name, To: b.Name, FromZone: ZoneOf(a), ToZone: ZoneOf(b)}
}

func allPairs(nodes []Node) []Pair {
	pairs := make([]Pair, 0, len(nodes)*max(len(nodes)-1, 0))
	for _, a := range nodes {
		for _, b := range nodes {
			if a.Name != b.Name {
				pairs = append(pairs, pairOf(a, b))
			}
		}
	}
	return pairs
}

// samplePairs draws n distinct ordered pairs of distinct nodes (all of them when n is not less).
func samplePairs(nodes []Node, n int, seed uint64) []Pair {
	total := len(nodes) * max(len(nodes)-1, 0)
	if n >= total {
		return allPairs(nodes)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e62))
	seen := make(map[[2]int]bool, n)
	idx := make([][2]int, 0, n)
	for len(idx) < n {
		a, b := rng.IntN(len(nodes)), rng.IntN(len(nodes)-1)
		if b >= a {
			b++
		}
		if k := [2]int{a, b}; !seen[k] {
			seen[k] = true
			idx = append(idx, k)
		}
	}
	slices.SortFunc(idx, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	pairs := make([]Pair, len(idx))
	for i, k := range idx {
		pairs[i] = pairOf(nodes[k[0]], nodes[k[1]])
	}
	return pairs
}

// zonePairs takes k pairs per ordered zone pair, spread over the zones' nodes: each pick takes
// the client and the server used least so far, so that every node is measured, as a client
// and as a server, once the cells together have room for it. Cost O(zones × k × nodes).
func zonePairs(nodes []Node, k int) []Pair {
	byZone := map[string][]Node{}
	for _, n := range nodes {
		byZone[ZoneOf(n)] = append(byZone[ZoneOf(n)], n)
	}
	zones := make([]string, 0, len(byZone))
	for z := range byZone {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	u := usage{from: map[string]int{}, to: map[string]int{}}
	var pairs []Pair
	for _, za := range zones {
		for _, zb := range zones {
			pairs = append(pairs, u.cell(byZone[za], byZone[zb], k)...)
		}
	}
	return pairs
}

// usage counts how often each node was a client (from) and a server (to) so far.
type usage struct{ from, to map[string]int }

// cell picks up to k distinct pairs of distinct nodes, least used first (then by name).
func (u usage) cell(as, bs []Node, k int) []Pair {
	taken := map[[2]string]bool{}
	var out []Pair
	for len(out) < k {
		ca, cb := slices.Clone(as), slices.Clone(bs) // by name, then stably by use
		slices.SortStableFunc(ca, func(x, y Node) int { return u.from[x.Name] - u.from[y.Name] })
		slices.SortStableFunc(cb, func(x, y Node) int { return u.to[x.Name] - u.to[y.Name] })
		p, ok := firstFree(ca, cb, taken)
		if !ok {
			break
		}
		taken[[2]string{p.From, p.To}] = true
		u.from[p.From]++
		u.to[p.To]++
		out = append(out, p)
	}
	return out
}

func firstFree(as, bs []Node, taken map[[2]string]bool) (Pair, bool) {
	for _, a := range as {
		for _, b := range bs {
			if a.Name != b.Name && !taken[[2]string{a.Name, b.Name}] {
				return pairOf(a, b), true
			}
		}
	}
	return Pair{}, false
}

// Schedule orders pairs into rounds of at most concurrency pairs in which no node appears
// twice, as client or as server: a node never sends or serves two measurements at once.
// Pairs keep their plan order within and across rounds as far as that allows.
func Schedule(pairs []Pair, concurrency int) [][]int {
	concurrency = max(concurrency, 1)
	left := make([]int, len(pairs))
	for i := range left {
		left[i] = i
	}
	var rounds [][]int
	for len(left) > 0 {
		busy := map[string]bool{}
		var round, rest []int
		for _, i := range left {
			p := pairs[i]
			if len(round) < concurrency && !busy[p.From] && !busy[p.To] {
				busy[p.From], busy[p.To] = true, true
				round = append(round, i)
			} else {
				rest = append(rest, i)
			}
		}
		rounds, left = append(rounds, round), rest
	}
	return rounds
}
