package e2e

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// lbPool is the lab's LoadBalancer pool (hack/lab/lab.sh LB_POOL).
var lbPool = netip.MustParsePrefix("10.77.64.0/24")

// The way in through a load balancer: the plugin, run on the lab's outside host, enters
// Service web-lb (of type LoadBalancer, one endpoint, on lab-b1) through the load balancer of a
// temporary LoadBalancer copy per externalTrafficPolicy (of ClusterIP Service web, refused), which the lab's controller (hack/lab/lb) serves as a cloud's
// does: Cluster to every Ready node, Local only to the nodes whose health check node port says
// they have an endpoint. With the zone delay and the WAN delay on:
//   - each copy got an address of the lab's pool;
//   - Local: every connection entered by lab-b1 and answered there, the client's address kept;
//   - Cluster: the load balancer spread the connections over every node (each ≥ 10 %), the
//     pod saw each entry node's SNAT (lab-b1's pod-network address for its own), about three
//     in four took the extra hop to lab-b1, and each node's extra hop is what ping says its hop
//     costs (the node to the pod, less lab-b1 to it), before and after, within 5 % + 150 µs;
//   - a gate reads the nodes' own figures (loadbalancer.cluster.NODE.extra-hop);
//   - Local answered sooner than Cluster; nothing is left, the router's routes included.
func TestLoadBalancerWayIn(t *testing.T) {
	cs, ns, web := wayInService(t)
	others := []string{"lab-a1", "lab-a2", "lab-b2"}
	alone(t)
	before := hopPings(t, append(others, "lab-b1"), web.Status.PodIP)
	lbService(t, cs, ns, "web-lb") // copies only of a LoadBalancer Service: of web, it is refused
	if err := waitFor(30*time.Second, func() bool { return readyEndpoints(cs, ns, "web-lb") == 1 }); err != nil {
		t.Fatal("Service web-lb has no ready endpoint")
	}
	if _, stderr, err := netbench(t, "ladder", "-n", ns, "svc/web", "--via", "loadbalancer"); err == nil || !strings.Contains(stderr, "is of type ClusterIP, not LoadBalancer") {
		t.Errorf("ladder --via loadbalancer of ClusterIP Service web: %v, %q: want refused", err, stderr)
	}
	r := entryJSON(t, "-n", ns, "svc/web-lb", "--via", "loadbalancer", "--connections-per-rung", "200", "--fail-if", "loadbalancer.cluster.lab-a1.extra-hop > 1000 * loadbalancer.cluster.lab-b2.extra-hop")
	after := hopPings(t, append(others, "lab-b1"), web.Status.PodIP)
	if len(r.Client) != 1 || r.Client[0] != outsideIP || len(r.Rungs) != 2 || len(r.Copies) != 2 {
		t.Fatalf("client %v, %d rungs, copies %+v: want %s, 2 rungs, 2 copies", r.Client, len(r.Rungs), r.Copies, outsideIP)
	}
	var addrs []string
	for _, c := range r.Copies {
		ap, err := netip.ParseAddrPort(c.LoadBalancer)
		if err != nil || !lbPool.Contains(ap.Addr()) || ap.Port() != 80 {
			t.Errorf("copy %s's load balancer %q: want an address of %s, port 80", c.Name, c.LoadBalancer, lbPool)
		}
		addrs = append(addrs, ap.Addr().String())
	}
	for _, g := range r.Rungs {
		var shares []string
		for _, e := range g.EntryNodes {
			shares = append(shares, fmt.Sprintf("%s ×%d", e.Node, e.Connections))
		}
		t.Logf("%s via the load balancer: %d/%d answered, connect p50 %s, entry nodes %s, extra hop %s µs (against %s), on another node %s %%, sources %+v",
			g.Policy, g.Answered, g.Connections, p50Of(g.Connect), strings.Join(shares, ", "), orNone(g.ExtraHopMicros), g.ExtraHopBaseline, orNone(g.OtherNodePercent), g.Sources)
		if g.Policy == "Local" {
			lbLocal(t, g)
		} else {
			lbCluster(t, g, others)
			lbExtraHops(t, g, before, after)
		}
	}
	if len(r.Checks) != 1 || r.Checks[0].Violated || r.Checks[0].Left < 2000 || r.Checks[0].Right < 200000 {
		t.Errorf("checks %+v: want the gate on the nodes' extra hops read (lab-a1's, cross-zone, > 2 ms) and not violated", r.Checks)
	}
	if len(r.Differences) != 1 || r.Differences[0].ConnectDiffMicros >= 0 {
		t.Errorf("differences %+v: want Local beside Cluster, its connect p50 below Cluster's", r.Differences)
	}
	noAgentPods(t, cs, ns)
	noTemporaryServices(t, cs, ns)
	if err := waitFor(10*time.Second, func() bool { return routesOf(addrs) == "" }); err != nil {
		t.Errorf("the router still routes the copies' addresses: %s", routesOf(addrs))
	}
}

// lbLocal: every connection entered by lab-b1 and was answered there, the source kept.
func lbLocal(t *testing.T, g v1alpha1.EntryRung) {
	t.Helper()
	if g.Answered < g.Connections*95/100 || len(g.EntryNodes) != 1 || g.EntryNodes[0].Node != "lab-b1" || g.EntryNodes[0].Connections != g.Answered || g.OtherNodePercent == nil || *g.OtherNodePercent != 0 {
		t.Errorf("Local: %d of %d answered, entry nodes %+v, %s %% on another node: want all by lab-b1 and answered there", g.Answered, g.Connections, g.EntryNodes, orNone(g.OtherNodePercent))
	}
	if len(g.Sources) != 1 || g.Sources[0].Is != "client" || g.Sources[0].Address != outsideIP {
		t.Errorf("Local: the pod saw %+v, want %s alone (source kept)", g.Sources, outsideIP)
	}
}

// lbCluster: spread over every node, each entry node's SNAT seen, about 3 in 4 on another node.
func lbCluster(t *testing.T, g v1alpha1.EntryRung, others []string) {
	t.Helper()
	if g.Answered < g.Connections*95/100 || len(g.EntryNodes) != 4 {
		t.Errorf("Cluster: %d of %d answered, entry nodes %+v: want every node, each ≥ 10 %%", g.Answered, g.Connections, g.EntryNodes)
		return
	}
	for _, e := range g.EntryNodes {
		if e.Connections < g.Answered/10 {
			t.Errorf("Cluster: entry nodes %+v: %s has %d: want every node, each ≥ 10 %%", g.EntryNodes, e.Node, e.Connections)
		}
	}
	if p := g.OtherNodePercent; p == nil || *p < 55 || *p > 92 {
		t.Errorf("Cluster: %s %% answered on another node than the entry node: want about 75 (3 of 4 nodes have no endpoint)", orNone(p))
	}
	for _, s := range g.Sources {
		own := s.Node == "lab-b1" && s.PodRange
		if s.Is != "node" || (s.Node != "lab-b1" && s.PodRange) || (s.Node == "lab-b1" && !own) {
			t.Errorf("Cluster: the pod saw %+v: want each entry node's SNAT (lab-b1's pod-network address for its own)", s)
		}
	}
	if len(g.Sources) != 1+len(others) {
		t.Errorf("Cluster: sources %+v: want one per node", g.Sources)
	}
}

// lbExtraHops: each node the load balancer sent connections to besides lab-b1 has an extra hop
// within ping's (hopWithinPing), lab-b1 none.
func lbExtraHops(t *testing.T, g v1alpha1.EntryRung, before, after map[string]float64) {
	t.Helper()
	for _, e := range g.EntryNodes {
		switch {
		case e.Node == "lab-b1" && e.ExtraHopMicros != nil:
			t.Errorf("Cluster: lab-b1 has an extra hop %.0f µs: its connections were answered where they entered", *e.ExtraHopMicros)
		case e.Node != "lab-b1" && e.ExtraHopMicros == nil:
			t.Errorf("Cluster: entering by %s: no extra hop", e.Node)
		case e.Node != "lab-b1":
			hopWithinPing(t, "Cluster through the load balancer to "+e.Node, e.Node, *e.ExtraHopMicros, before, after)
		}
	}
}

// routesOf is the router's routes of addrs ("" if none).
func routesOf(addrs []string) string {
	var out strings.Builder
	for _, a := range addrs {
		b, _ := exec.Command("ip", "-n", "nblab-rt", "route", "show", a).Output()
		out.Write(b)
	}
	return strings.TrimSpace(out.String())
}
