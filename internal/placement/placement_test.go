package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func node(name, zone string, mod ...func(*Node)) Node {
	n := Node{Name: name, Zone: zone, Region: "r1", Ready: true, Labels: map[string]string{"pool": "general"}}
	for _, m := range mod {
		m(&n)
	}
	return n
}

var gpuTaint = corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}

func TestLadder(t *testing.T) {
	cluster := []Node{
		node("b2", "zone-b"), node("a1", "zone-a"), node("b1", "zone-b"), node("a2", "zone-a"),
		node("c1", "zone-c", func(n *Node) { n.Unschedulable = true }),
		node("c2", "zone-c", func(n *Node) { n.Taints = []corev1.Taint{gpuTaint} }),
		node("d1", "zone-d", func(n *Node) { n.Region = "r2" }),
	}
	sel, _ := labels.Parse("pool=general")
	tests := []struct {
		name string
		dst  Node
		tol  []corev1.Toleration
		f    Filter
		want []Rung
	}{
		{"every rung, one skipped with each node's reason", node("b1", "zone-b"), nil, Filter{}, []Rung{
			{Name: "same-node", Class: "same-node", Node: "b1", Zone: "zone-b", Region: "r1"},
			{Name: "same-zone", Class: "same-zone", Node: "b2", Zone: "zone-b", Region: "r1"},
			{Name: "cross-zone zone-a", Class: "cross-zone", Node: "a1", Zone: "zone-a", Region: "r1"},
			{Name: "cross-zone zone-c", Class: "cross-zone", Zone: "zone-c", Region: "r1",
				Skipped: "no usable node in zone zone-c: c1 is cordoned; c2 has taint gpu=true:NoSchedule that neither the destination's pod nor a --toleration tolerates"},
			{Name: "cross-region r2", Class: "cross-region", Node: "d1", Zone: "zone-d", Region: "r2"},
		}},
		{"the destination's tolerations are the clients'", node("b1", "zone-b"),
			[]corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}, Filter{Zones: []string{"zone-c"}}, []Rung{
				{Name: "same-node", Class: "same-node", Node: "b1", Zone: "zone-b", Region: "r1"},
				{Name: "same-zone", Class: "same-zone", Node: "b2", Zone: "zone-b", Region: "r1"},
				{Name: "cross-zone zone-a", Class: "cross-zone", Zone: "zone-a", Region: "r1", Skipped: "zone zone-a is not in --zones"},
				{Name: "cross-zone zone-c", Class: "cross-zone", Node: "c2", Zone: "zone-c", Region: "r1"},
				{Name: "cross-region r2", Class: "cross-region", Node: "d1", Zone: "zone-d", Region: "r2"},
			}},
		{"--nodes matching every node", node("a1", "zone-a"), nil, Filter{Nodes: sel}, []Rung{
			{Name: "same-node", Class: "same-node", Node: "a1", Zone: "zone-a", Region: "r1"},
			{Name: "same-zone", Class: "same-zone", Node: "a2", Zone: "zone-a", Region: "r1"},
			{Name: "cross-zone zone-b", Class: "cross-zone", Node: "b1", Zone: "zone-b", Region: "r1"},
			{Name: "cross-zone zone-c", Class: "cross-zone", Zone: "zone-c", Region: "r1",
				Skipped: "no usable node in zone zone-c: c1 is cordoned; c2 has taint gpu=true:NoSchedule that neither the destination's pod nor a --toleration tolerates"},
			{Name: "cross-region r2", Class: "cross-region", Node: "d1", Zone: "zone-d", Region: "r2"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Ladder(tc.dst, append([]Node(nil), cluster...), tc.tol, tc.f)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLadderEdges(t *testing.T) {
	sel, _ := labels.Parse("pool=gpu")
	alone := Ladder(node("a1", "zone-a"), []Node{node("a1", "zone-a"), node("b1", "zone-b", func(n *Node) { n.Ready = false })}, nil, Filter{})
	want := []Rung{
		{Name: "same-node", Class: "same-node", Node: "a1", Zone: "zone-a", Region: "r1"},
		{Name: "same-zone", Class: "same-zone", Region: "r1", Skipped: "no other node in zone zone-a"},
		{Name: "cross-zone zone-b", Class: "cross-zone", Zone: "zone-b", Region: "r1", Skipped: "no usable node in zone zone-b: b1 is not Ready"},
	}
	if diff := cmp.Diff(want, alone); diff != "" {
		t.Errorf("alone (-want +got):\n%s", diff)
	}
	noZones := Ladder(node("n1", ""), []Node{node("n1", ""), node("n2", "")}, nil, Filter{Nodes: sel})
	want = []Rung{
		{Name: "same-node", Class: "same-node", Region: "r1", Skipped: "node n1 does not match --nodes pool=gpu"},
		{Name: "other-node", Class: "unknown", Region: "r1",
			Skipped: "no usable node in the cluster (its nodes carry no topology.kubernetes.io/zone label): n2 does not match --nodes pool=gpu"},
	}
	if diff := cmp.Diff(want, noZones); diff != "" {
		t.Errorf("no zones (-want +got):\n%s", diff)
	}
}
