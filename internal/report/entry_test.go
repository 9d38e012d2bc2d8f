package report

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func entryConn(node, peer string, gw bool, connect time.Duration) probes.EntryConn {
	return probes.EntryConn{Pod: "p", Node: node, Peer: peer, PeerIsGateway: gw, Local: "198.51.100.10", Connect: connect, Answer: 2 * connect}
}

// Sources are told apart: the client's own address (kept), an address a node lists (SNAT), the
// answering pod's gateway (its node's SNAT), anything else — a pod's address that is not the
// gateway too (a relay) — as another address.
func TestEntrySources(t *testing.T) {
	nodes := NodeAddrs{netip.MustParseAddr("10.77.0.11"): "a1"}
	res := &probes.EntryResult{Connections: 5, Answered: []probes.EntryConn{
		entryConn("b1", "10.77.0.11", false, time.Millisecond), entryConn("b1", "::ffff:10.77.0.11", false, time.Millisecond),
		entryConn("b1", "10.244.3.1", true, time.Millisecond), entryConn("b1", "10.244.3.7", false, time.Millisecond),
		entryConn("b1", "198.51.100.10", false, time.Millisecond)}}
	g := EntryRung{Policy: PolicyCluster, Node: "a1"}
	AddEntry(&g, res, nodes)
	SummarizeEntry(&g, []*probes.EntryResult{res}, nil)
	want := []EntrySource{{Address: "10.244.3.1", Connections: 1, Is: SourceNode, Node: "b1", PodRange: true}, {Address: "10.244.3.7", Connections: 1, Is: SourceOther},
		{Address: "10.77.0.11", Connections: 1, Is: SourceNode, Node: "a1"}, {Address: "198.51.100.10", Connections: 1, Is: SourceClient},
		{Address: "::ffff:10.77.0.11", Connections: 1, Is: SourceNode, Node: "a1"}}
	if d := cmp.Diff(want, g.Sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
}

// The extra hop takes, of the connections answered on another node, their connect p50 less the
// nearest baseline answered on the entry node: the rung's own, else the same node's other
// policy, else another node's of the same policy (named); none, no figure.
func TestEntryExtraHop(t *testing.T) {
	rung := func(policy, node string, conns ...probes.EntryConn) EntryRung {
		res := &probes.EntryResult{Connections: len(conns) + 3, Answered: conns}
		if len(conns) == 0 {
			res.ErrorsByKind, res.Stopped = map[string]int{"timeout": 3}, "dropped"
		}
		g := EntryRung{Policy: policy, Node: node}
		AddEntry(&g, res, NodeAddrs{})
		SummarizeEntry(&g, []*probes.EntryResult{res}, nil)
		return g
	}
	ms := time.Millisecond
	r := &EntryReport{Via: "nodeport", Rungs: []EntryRung{
		rung(PolicyCluster, "a1", entryConn("b1", "x", false, 5*ms)), // nothing local: another node's baseline
		rung(PolicyLocal, "a1"), // dropped
		rung(PolicyCluster, "a2", entryConn("a2", "x", false, 2*ms), entryConn("b1", "x", false, 6*ms)), // its own
		rung(PolicyCluster, "b1", entryConn("b1", "x", false, 1*ms)),
		rung(PolicyCluster, "b2", entryConn("b1", "x", false, 7*ms)),
		rung(PolicyLocal, "b2", entryConn("b2", "x", false, 3*ms)), // b2's other policy
	}}
	r.Summarize()
	got := map[string]string{}
	for _, g := range r.Rungs {
		if g.ExtraHopMicros != nil {
			got[g.Policy+" "+g.Node] = time.Duration(*g.ExtraHopMicros*1e3).String() + " against " + g.ExtraHopBaseline
		}
	}
	want := map[string]string{
		"Cluster a1": "4ms against entering by b1, answered there (another node: the client's distance to the two may differ)",
		"Cluster a2": "4ms against the connections this rung's node answered itself",
		"Cluster b2": "4ms against the same node's answers with externalTrafficPolicy Local",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("extra hops (-want +got):\n%s", d)
	}
	if g := r.Rungs[1]; g.Answered != 0 || g.Connect != nil || g.OtherNodePercent != nil || g.Stopped == "" {
		t.Errorf("Local via a1: %+v: want nothing answered and why it stopped", g)
	}
	if len(r.Differences) != 1 || r.Differences[0].Node != "b2" || r.Differences[0].ConnectDiffMicros != -4000 {
		t.Errorf("differences %+v: want b2's alone, Local 4 ms below Cluster", r.Differences)
	}
	figs := map[string]float64{}
	for _, f := range r.FigureValues() {
		figs[f.Name] = f.Value
	}
	for name, v := range map[string]float64{"nodeport.cluster.a1.extra-hop": 4000, "nodeport.cluster.connect.p50": 7000, "nodeport.local.answered-percent": 0,
		"nodeport.cluster.answered-percent": 25, "nodeport.local.b2.connect.p50": 3000} {
		if got, ok := figs[name]; !ok || got != v {
			t.Errorf("figure %s = %v (%v), want %v", name, got, ok, v)
		}
	}
	planned := EntryPlannedFigures("nodeport", []string{"a1", "a2", "b1", "b2"})
	for name := range figs {
		if _, ok := planned[name]; !ok {
			t.Errorf("figure %s is not among the planned ones", name)
		}
	}
	if r.Answered() != nil {
		t.Error("a report with answers said none answered")
	}
}

// Through a load balancer a rung has no entry node: each connection's is read from its source
// (a node's SNAT names it; the endpoint's own gateway, or with Local alone a source kept, names
// the endpoint's node; another address, or a source kept with Cluster, names none and is
// counted apart), and the figures are per policy only, as planned.
func TestEntryThroughALoadBalancer(t *testing.T) {
	nodes := NodeAddrs{netip.MustParseAddr("10.77.0.11"): "a1", netip.MustParseAddr("10.77.0.13"): "b1"}
	res := &probes.EntryResult{Connections: 5, Answered: []probes.EntryConn{
		entryConn("b1", "10.77.0.11", false, 5*time.Millisecond), entryConn("b1", "10.77.0.13", false, time.Millisecond),
		entryConn("a1", "10.244.1.1", true, time.Millisecond), entryConn("a1", "198.51.100.10", false, time.Millisecond),
		entryConn("a1", "192.0.2.9", false, 9*time.Millisecond)}}
	r := &EntryReport{Via: "loadbalancer", Rungs: []EntryRung{{Policy: PolicyCluster}}}
	g := &r.Rungs[0]
	AddEntry(g, res, nodes)
	SummarizeEntry(g, []*probes.EntryResult{res}, nodes)
	r.Summarize()
	got := map[string]string{}
	for _, e := range g.EntryNodes {
		got[e.Node] = fmt.Sprintf("%d connections, %d on another node, extra hop %s", e.Connections, latencyCount(e.ConnectOtherNode), orNil(e.ExtraHopMicros))
	}
	want := map[string]string{"a1": "2 connections, 1 on another node, extra hop 4000", "b1": "1 connections, 0 on another node, extra hop none"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("entry nodes (-want +got):\n%s", d)
	}
	if g.OtherNodePercent == nil || *g.OtherNodePercent != 33.3 || g.ConnectOtherNode.Count != 1 || g.Connect.Count != 5 || g.UnplacedConnections != 2 {
		t.Errorf("split: other %v, other-node connects %+v, all %+v, unplaced %d: want 33.3 %% of the 3 placed, all 5 in Connect, 2 unplaced", orNil(g.OtherNodePercent), g.ConnectOtherNode, g.Connect, g.UnplacedConnections)
	}
	local := EntryRung{Policy: PolicyLocal}
	kept := &probes.EntryResult{Connections: 1, Answered: []probes.EntryConn{entryConn("b1", "::ffff:198.51.100.10", false, time.Millisecond)}}
	AddEntry(&local, kept, nodes)
	SummarizeEntry(&local, []*probes.EntryResult{kept}, nodes)
	if len(local.EntryNodes) != 1 || local.EntryNodes[0].Node != "b1" || local.UnplacedConnections != 0 {
		t.Errorf("Local, source kept: entry nodes %+v, unplaced %d: want b1's, where it was answered", local.EntryNodes, local.UnplacedConnections)
	}
	if g.ExtraHopMicros == nil || *g.ExtraHopMicros != 4000 {
		t.Errorf("extra hop %v: want 4 ms over the rung's own connections answered where they entered", g.ExtraHopMicros)
	}
	planned := EntryPlannedFigures("loadbalancer", []string{"a1", "b1"})
	figs := map[string]float64{}
	for _, f := range r.FigureValues() {
		figs[f.Name] = f.Value
		if _, ok := planned[f.Name]; !ok || f.Alias || !strings.HasPrefix(f.Name, "loadbalancer.cluster.") {
			t.Errorf("figure %s (alias %v): want loadbalancer.cluster.*, planned, no alias", f.Name, f.Alias)
		}
	}
	for name, v := range map[string]float64{"loadbalancer.cluster.a1.extra-hop": 4000, "loadbalancer.cluster.a1.share-percent": 66.7, "loadbalancer.cluster.b1.connect.p50": 1000} {
		if got, ok := figs[name]; !ok || got != v {
			t.Errorf("figure %s = %v (%v), want %v", name, got, ok, v)
		}
	}
	if _, ok := figs["loadbalancer.cluster.b1.extra-hop"]; ok {
		t.Error("b1, where its connections were answered, has an extra hop figure")
	}
	if err := (&EntryReport{Via: "loadbalancer", Rungs: []EntryRung{{}}}).Answered(); err == nil || !strings.Contains(err.Error(), "no load balancer address answered") {
		t.Errorf("nothing answered: %v", err)
	}
}

func latencyCount(l *v1alpha1.Latency) int {
	if l == nil {
		return 0
	}
	return int(l.Count)
}

func orNil(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}
