package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The way in from outside the cluster: the plugin, run on the lab's outside host (beyond the
// router, reaching the API server and the nodes as a machine outside a cluster does), enters a
// Service whose one endpoint runs on lab-b1 through every node's NodePort, with the zone delay
// on (300 µs same zone, 2 ms cross zone, one way) and a WAN delay of 1 ms one way (so that the
// baseline an extra hop is measured against is no smaller than the bound), on temporary copies
// with externalTrafficPolicy Cluster and Local:
//   - Local keeps the client's address (the pod saw 198.51.100.10) and answers only on lab-b1;
//     the other nodes drop it, said in one line, and cost no more than their first connections;
//   - Cluster SNATs (the pod saw the entry node's address) and, entering by another node, takes
//     an extra hop to lab-b1: its extra connect time is what ping says the hop costs (the entry
//     node to the pod, less lab-b1 to it), before and after, within 5 % + 150 µs;
//   - nothing is left behind.
func TestNodePortWayIn(t *testing.T) {
	cs, ns, web := wayInService(t)
	nodes := []string{"lab-a1", "lab-a2", "lab-b1", "lab-b2"}
	alone(t)
	before := hopPings(t, nodes, web.Status.PodIP)
	r := entryJSON(t, "-n", ns, "svc/web", "--via", "nodeport", "--connections-per-rung", "100")
	after := hopPings(t, nodes, web.Status.PodIP)
	if len(r.Client) != 1 || r.Client[0] != outsideIP || len(r.Rungs) != 2*len(nodes) || len(r.Copies) != 2 {
		t.Fatalf("client %v, %d rungs, copies %+v: want %s, 8 rungs, 2 copies", r.Client, len(r.Rungs), r.Copies, outsideIP)
	}
	for _, g := range r.Rungs {
		t.Logf("%s via %s: %d/%d answered, connect p50 %s, extra hop %s µs (against %s), on another node %s %%, sources %+v",
			g.Policy, g.Node, g.Answered, g.Connections, p50Of(g.Connect), orNone(g.ExtraHopMicros), g.ExtraHopBaseline, orNone(g.OtherNodePercent), g.Sources)
		switch {
		case g.Node == "lab-b1":
			wayInDirect(t, g)
		case g.Policy == "Local":
			if g.Answered != 0 || g.Stopped == "" || g.Connections > 3 {
				t.Errorf("Local via %s (no endpoint there): %d of %d answered, stopped %q: want none, stopped after its first connections", g.Node, g.Answered, g.Connections, g.Stopped)
			}
		default:
			wayInExtraHop(t, g, before, after)
		}
	}
	if len(r.Differences) != 1 || r.Differences[0].Node != "lab-b1" {
		t.Errorf("differences %+v: want Local beside Cluster on lab-b1 alone", r.Differences)
	}
	noAgentPods(t, cs, ns)
	noTemporaryServices(t, cs, ns)
}

// wayInService is the ways in's Service web: one pause pod on lab-b1 behind it, port 80, with
// the zone delay on (300 µs same zone, 2 ms cross zone, one way) and the WAN delay (1 ms).
func wayInService(t *testing.T) (kubernetes.Interface, string, *corev1.Pod) {
	t.Helper()
	cs, ns := lab(t)
	labScript(t, "delay", "300us", "2ms")
	labScript(t, "wan-delay", "1ms")
	t.Cleanup(func() { labScript(t, "delay", "off"); labScript(t, "wan-delay", "off") })
	createPod(t, cs, ns, pod("web", "lab-b1", "netbench.lab/pause:1", nil, map[string]string{"app": "web"}))
	web := waitPod(t, cs, ns, "web", 60*time.Second, "running", running)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt(8080)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(30*time.Second, func() bool { return readyEndpoints(cs, ns, "web") == 1 }); err != nil {
		t.Fatal("Service web has no ready endpoint")
	}
	return cs, ns, web
}

// noTemporaryServices fails the test if a copy the plugin made is left in ns.
func noTemporaryServices(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	svcs, err := cs.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"})
	if err != nil || len(svcs.Items) != 0 {
		t.Errorf("temporary Services left: %v %v", svcs, err)
	}
}

// wayInDirect checks a way in by the endpoint's own node: answered there, and the source the pod
// saw kept (Local) or the node's (Cluster's SNAT).
func wayInDirect(t *testing.T, g v1alpha1.EntryRung) {
	t.Helper()
	want := v1alpha1.EntrySource{Address: outsideIP, Connections: g.Answered, Is: "client"}
	if g.Policy == "Cluster" {
		want = v1alpha1.EntrySource{Connections: g.Answered, Is: "node", Node: "lab-b1"}
	}
	if g.Answered < g.Connections*95/100 || g.OtherNodePercent == nil || *g.OtherNodePercent != 0 || len(g.Sources) != 1 {
		t.Errorf("%s via lab-b1: %d of %d answered, %s %% on another node, sources %+v: want all answered on lab-b1 from one source", g.Policy, g.Answered, g.Connections, orNone(g.OtherNodePercent), g.Sources)
		return
	}
	if s := g.Sources[0]; s.Is != want.Is || s.Node != want.Node || (want.Address != "" && s.Address != want.Address) {
		t.Errorf("%s via lab-b1: the pod saw %+v, want %+v", g.Policy, s, want)
	}
}

// wayInExtraHop checks Cluster by a node without the endpoint: every connection on to lab-b1,
// SNAT to the entry node, and the extra hop against ping's.
func wayInExtraHop(t *testing.T, g v1alpha1.EntryRung, before, after map[string]float64) {
	t.Helper()
	if g.Answered < g.Connections*95/100 || g.OtherNodePercent == nil || *g.OtherNodePercent != 100 || len(g.Sources) != 1 || g.Sources[0].Is != "node" || g.Sources[0].Node != g.Node || g.ExtraHopMicros == nil {
		t.Errorf("Cluster via %s: %d of %d answered, %s %% on another node, sources %+v, extra hop %s: want all answered on lab-b1, SNAT to %s, an extra hop", g.Node, g.Answered, g.Connections, orNone(g.OtherNodePercent), g.Sources, orNone(g.ExtraHopMicros), g.Node)
		return
	}
	hopWithinPing(t, "Cluster via "+g.Node, g.Node, *g.ExtraHopMicros, before, after)
}

// hopWithinPing checks an extra hop entering by node against ping's: the node's ping to the pod
// less lab-b1's, before and after, within 5 % + 150 µs.
func hopWithinPing(t *testing.T, what, node string, got float64, before, after map[string]float64) {
	t.Helper()
	hop := func(p map[string]float64) float64 { return p[node] - p["lab-b1"] }
	lo, hi := min(hop(before), hop(after)), max(hop(before), hop(after))
	t.Logf("%s: extra hop %.0f µs, ping's %.0f-%.0f µs (%s to the pod, less lab-b1 to it)", what, got, lo, hi, node)
	if got < lo-pingBound(lo) || got > hi+pingBound(hi) {
		t.Errorf("%s: extra hop %.0f µs, more than 5 %% + 150 µs outside ping's %.0f-%.0f µs", what, got, lo, hi)
	}
}

// hopPings is ping's median from each node's own network namespace to ip, in µs.
func hopPings(t *testing.T, nodes []string, ip string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, n := range nodes {
		out[n] = pingMedian(t, "/run/netns/"+nodeNetns(n), ip, 50, "0.01")
	}
	return out
}

// entryJSON runs `ladder … --via nodeport|loadbalancer -o json` on the lab's outside host and decodes it.
func entryJSON(t *testing.T, args ...string) *v1alpha1.EntryReport {
	t.Helper()
	r := decodeStrict[v1alpha1.EntryReport](t, onOutsideHost(t, append([]string{"ladder", "-o", "json"}, args...)...))
	via := args[slices.Index(args, "--via")+1]
	if r.Kind != v1alpha1.KindEntry || r.APIVersion != v1alpha1.APIVersion || r.Via != via {
		t.Fatalf("required fields missing: %+v", r)
	}
	return r
}

func orNone(v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}

func p50Of(l *v1alpha1.Latency) string {
	if l == nil {
		return "none"
	}
	return time.Duration(l.P50Micros * 1e3).String()
}

// readyEndpoints counts the ready endpoints in Service name's EndpointSlices.
func readyEndpoints(cs kubernetes.Interface, ns, name string) int {
	slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + name})
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				n++
			}
		}
	}
	return n
}

// onOutsideHost runs the plugin with args on the lab's outside host (its network namespace,
// beyond the router) and returns its output; a failure ends the test with its stderr.
func onOutsideHost(t *testing.T, args ...string) string {
	t.Helper()
	alone(t)
	cmd := exec.Command("nsenter", append([]string{"--net=" + outsideNetns, plugin(t), "--kubeconfig", kubeconfigPath()}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("netbench %v on the outside host: %v\n%s", args, err, errb.String())
	}
	return out.String()
}
