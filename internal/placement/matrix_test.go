package placement

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func names(pairs []Pair) []string {
	var out []string
	for _, p := range pairs {
		out = append(out, p.From+">"+p.To)
	}
	return out
}

func TestUsable(t *testing.T) {
	nodes := []Node{
		node("b1", "zone-b"), node("a1", "zone-a"),
		node("c1", "zone-c", func(n *Node) { n.Unschedulable = true }),
		node("c2", "zone-c", func(n *Node) { n.Taints = []corev1.Taint{gpuTaint} }),
		node("c3", "zone-c", func(n *Node) { n.Ready = false }),
		node("x1", "zone-x", func(n *Node) { n.Labels = map[string]string{"pool": "batch"} }),
	}
	sel, _ := labels.Parse("pool=general")
	use, out := Usable(nodes, nil, Filter{Nodes: sel})
	if got := []string{use[0].Name, use[1].Name}; len(use) != 2 || got[0] != "a1" || got[1] != "b1" {
		t.Errorf("usable %v", use)
	}
	want := []Excluded{
		{"c1", "is cordoned"},
		{"c2", "has taint gpu=true:NoSchedule that the agents do not tolerate (see --toleration, --tolerations-from)"},
		{"c3", "is not Ready"},
		{"x1", "does not match --nodes pool=general"},
	}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("excluded (-want +got):\n%s", d)
	}
	use, _ = Usable(nodes, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, Filter{Zones: []string{"zone-c"}})
	if len(use) != 1 || use[0].Name != "c2" {
		t.Errorf("zone-c with every taint tolerated: %v", use)
	}
}

func TestMatrixPlanZones(t *testing.T) {
	nodes := []Node{node("a1", "zone-a"), node("a2", "zone-a"), node("b1", "zone-b"), node("b2", "zone-b"), node("b3", "zone-b")}
	pairs, err := MatrixPlan{Scope: ScopeZones, PairsPerCell: 2}.Plan(nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a1>a2", "a2>a1", "a1>b1", "a2>b2", "b1>a1", "b2>a2", "b3>b1", "b1>b3"}
	if d := cmp.Diff(want, names(pairs)); d != "" {
		t.Errorf("pairs (-want +got):\n%s", d)
	}
	// Every node is a client and a server somewhere, and each cell has its pairs.
	cells, from, to := map[string]int{}, map[string]bool{}, map[string]bool{}
	for _, p := range pairs {
		cells[p.FromZone+">"+p.ToZone]++
		from[p.From], to[p.To] = true, true
	}
	if d := cmp.Diff(map[string]int{"zone-a>zone-a": 2, "zone-a>zone-b": 2, "zone-b>zone-a": 2, "zone-b>zone-b": 2}, cells); d != "" {
		t.Errorf("cells (-want +got):\n%s", d)
	}
	for _, n := range nodes {
		if !from[n.Name] || !to[n.Name] {
			t.Errorf("%s: client %v, server %v: want both", n.Name, from[n.Name], to[n.Name])
		}
	}
	// A zone of one node has no pair to itself; the cell is left empty, not filled with a loop.
	pairs, _ = MatrixPlan{Scope: ScopeZones, PairsPerCell: 3}.Plan([]Node{node("a1", "zone-a"), node("b1", "")})
	if d := cmp.Diff([]string{"b1>a1", "a1>b1"}, names(pairs)); d != "" {
		t.Errorf("one node per zone (-want +got):\n%s", d)
	}
	if pairs[0].FromZone != NoZone {
		t.Errorf("a node without a zone label is in %q", pairs[0].FromZone)
	}
}

func TestMatrixPlanNodesAndSample(t *testing.T) {
	var nodes []Node
	for i := range 30 {
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i), "z"))
	}
	pairs, err := MatrixPlan{Scope: ScopeNodes, MaxPairs: 870}.Plan(nodes)
	if err != nil || len(pairs) != 870 {
		t.Fatalf("nodes scope: %d pairs, %v", len(pairs), err)
	}
	_, err = MatrixPlan{Scope: ScopeNodes, MaxPairs: 869}.Plan(nodes)
	if !errors.Is(err, ErrTooManyPairs) || err.Error() != "too many pairs: every pair of 30 nodes is 870 pairs, above --max-pairs 869 (raise it, or use --scope zones or --sample)" {
		t.Errorf("above --max-pairs: %v", err)
	}
	a, _ := MatrixPlan{Scope: ScopeSample, Sample: 100, Seed: 7}.Plan(nodes)
	b, _ := MatrixPlan{Scope: ScopeSample, Sample: 100, Seed: 7}.Plan(nodes)
	c, _ := MatrixPlan{Scope: ScopeSample, Sample: 100, Seed: 8}.Plan(nodes)
	if len(a) != 100 || !cmp.Equal(a, b) || cmp.Equal(a, c) {
		t.Errorf("sample: %d pairs; same seed same plan %v; other seed other plan %v", len(a), cmp.Equal(a, b), !cmp.Equal(a, c))
	}
	seen := map[string]bool{}
	for _, p := range a {
		if p.From == p.To || seen[p.From+">"+p.To] {
			t.Errorf("sample pair %v repeated or a loop", p)
		}
		seen[p.From+">"+p.To] = true
	}
	if all, _ := (MatrixPlan{Scope: ScopeSample, Sample: 5000}).Plan(nodes); len(all) != 870 {
		t.Errorf("a sample larger than the pairs there are: %d, want all 870", len(all))
	}
}

// Rounds never hold a node twice and never more pairs than the concurrency; every pair runs once.
func TestSchedule(t *testing.T) {
	var nodes []Node
	for i := range 9 {
		nodes = append(nodes, node(fmt.Sprintf("n%d", i), fmt.Sprintf("z%d", i%3)))
	}
	pairs, _ := MatrixPlan{Scope: ScopeNodes}.Plan(nodes)
	for _, conc := range []int{1, 3, 100} {
		rounds := Schedule(pairs, conc)
		ran := map[int]bool{}
		for r, round := range rounds {
			busy := map[string]bool{}
			if len(round) > conc || len(round) == 0 {
				t.Errorf("concurrency %d: round %d has %d pairs", conc, r, len(round))
			}
			for _, i := range round {
				p := pairs[i]
				if busy[p.From] || busy[p.To] || ran[i] {
					t.Errorf("concurrency %d: round %d: %s>%s overlaps or repeats", conc, r, p.From, p.To)
				}
				busy[p.From], busy[p.To], ran[i] = true, true, true
			}
		}
		if len(ran) != len(pairs) {
			t.Errorf("concurrency %d: %d of %d pairs scheduled", conc, len(ran), len(pairs))
		}
		// First-fit never needs more than 2Δ−1 rounds, Δ a node's pairs (16 here).
		if conc == 100 && len(rounds) > 31 {
			t.Errorf("concurrency 100: %d rounds for 72 pairs of 9 nodes, above 2Δ−1 = 31", len(rounds))
		}
	}
}
