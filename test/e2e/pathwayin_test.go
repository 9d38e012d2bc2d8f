package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// path here svc/web from the lab's outside host: every probe but ICMP from outside the cluster,
// through a temporary NodePort Service whose one endpoint is the agent in web's pod (lab-b1),
// with the zone delay on (300 µs same zone, 2 ms cross zone, one way) and the WAN delay (1 ms):
//   - entering by lab-a1 with Cluster, the pod saw lab-a1's address (SNAT); by lab-b1 with Local,
//     the outside host's own;
//   - through the lab's load balancer with Local (a temporary one of the kind of web-lb, web's
//     Service of type LoadBalancer), the pod saw the outside host's address too;
//   - every probe of each has its samples, and the tcp transfer its bytes;
//   - the extra hop (lab-a1 on to lab-b1) is in the round trips: the udp round trip's p50 (the
//     agent's dwell taken off) and the TCP handshake's, by lab-a1 less by lab-b1, are what ping
//     says the hop costs (lab-a1 to the pod, less lab-b1 to it), before and after, within
//     5 % + 150 µs;
//   - nothing is left behind: no agent pod, no temporary Service, no EndpointSlice.
//
// On a lab whose first family is IPv6 (LAB_IP_FAMILY 6,4) the way in is IPv6's, from
// outsideIP6.
func TestPathWayIn(t *testing.T) {
	cs, ns, web := wayInService(t)
	nodes := []string{"lab-a1", "lab-b1"}
	alone(t)
	before := hopPings(t, nodes, web.Status.PodIP)
	cluster := wayInPath(t, "-n", ns, "svc/web", "--via", "nodeport", "--entry-node", "lab-a1")
	local := wayInPath(t, "-n", ns, "svc/web", "--via", "nodeport", "--external-traffic-policy", "Local")
	after := hopPings(t, nodes, web.Status.PodIP)
	lbService(t, cs, ns, "web-lb")
	lb := wayInPath(t, "-n", ns, "svc/web-lb", "--via", "loadbalancer", "--external-traffic-policy", "Local")
	client := outsideIP // the outside host's address of web's first family, which the way in takes
	if strings.Contains(web.Status.PodIP, ":") {
		client = outsideIP6
	}
	wayInSeen(t, cluster.WayIn, v1alpha1.WayIn{Via: "nodeport", ExternalTrafficPolicy: "Cluster", EntryNode: "lab-a1", Client: client, SeenIs: "node", SeenNode: "lab-a1", SNAT: true})
	wayInSeen(t, local.WayIn, v1alpha1.WayIn{Via: "nodeport", ExternalTrafficPolicy: "Local", EntryNode: "lab-b1", Client: client, Seen: client, SeenIs: "client"})
	wayInSeen(t, lb.WayIn, v1alpha1.WayIn{Via: "loadbalancer", ExternalTrafficPolicy: "Local", Client: client, Seen: client, SeenIs: "client"})
	for _, r := range []*v1alpha1.PathReport{cluster, local, lb} {
		wayInProbes(t, r)
	}
	for _, name := range []string{"udp", "tcp-rtt"} {
		extra := rttOf(t, cluster, name).RTT.P50Micros - rttOf(t, local, name).RTT.P50Micros
		hopWithinPing(t, "path here, "+name+" by lab-a1 (Cluster) less by lab-b1 (Local)", "lab-a1", extra, before, after)
	}
	noAgentPods(t, cs, ns)
	noTemporaryServices(t, cs, ns)
	noTemporarySlices(t, cs, ns)
}

// wayInPath runs `path here … -o json` on the lab's outside host, with the probes of the
// test, and decodes the report.
func wayInPath(t *testing.T, args ...string) *v1alpha1.PathReport {
	t.Helper()
	full := append(append([]string{"path", "-o", "json", "here"}, args...), "--probes", "rtt,udp,tcp,http", "--start-timeout", "60s")
	r := decodeStrict[v1alpha1.PathReport](t, onOutsideHost(t, full...))
	if r.Path.Class != v1alpha1.Ingress || r.WayIn == nil || r.Source.External == "" || r.Destination.Pod != "web" {
		t.Fatalf("path here %v: class %q, way in %+v, source %+v, destination %+v: want ingress to web from this machine", args, r.Path.Class, r.WayIn, r.Source, r.Destination)
	}
	t.Logf("path here %v: %s", args, r.Path.Reason)
	return r
}

// wayInSeen checks a way in's entry node and the addresses on its first connection (Seen,
// when want has none: the entry node's, which SeenIs names).
func wayInSeen(t *testing.T, got *v1alpha1.WayIn, want v1alpha1.WayIn) {
	t.Helper()
	if want.Seen == "" {
		want.Seen = got.Seen
	}
	want.Service, want.Address = got.Service, got.Address
	if *got != want {
		t.Errorf("way in %+v, want %+v", *got, want)
	}
}

// wayInProbes checks that every probe of the run measured through the way in.
func wayInProbes(t *testing.T, r *v1alpha1.PathReport) {
	t.Helper()
	names := map[string]bool{}
	for _, p := range r.Probes {
		names[p.Name] = true
		switch {
		case p.Skipped != "":
			t.Errorf("%s: %s skipped: %s", r.WayIn.ExternalTrafficPolicy, p.Name, p.Skipped)
		case p.RTT != nil && (p.RTT.Received < p.RTT.Sent*95/100 || p.RTT.Received == 0):
			t.Errorf("%s: %s answered %d of %d", r.WayIn.ExternalTrafficPolicy, p.Name, p.RTT.Received, p.RTT.Sent)
		case p.HTTP != nil && (p.HTTP.Requests == 0 || p.HTTP.Errors != 0):
			t.Errorf("%s: %s had %d requests, %d errors", r.WayIn.ExternalTrafficPolicy, p.Name, p.HTTP.Requests, p.HTTP.Errors)
		case p.Throughput != nil && p.Throughput.BytesReceived == 0:
			t.Errorf("%s: %s received nothing", r.WayIn.ExternalTrafficPolicy, p.Name)
		}
	}
	for _, want := range []string{"tcp-rtt", "udp", "tcp-1", "http"} {
		if !names[want] {
			t.Errorf("%s: no %s result among %v", r.WayIn.ExternalTrafficPolicy, want, names)
		}
	}
	if names["icmp"] {
		t.Errorf("%s: an icmp result: ICMP ends at the node entered, not at the pod", r.WayIn.ExternalTrafficPolicy)
	}
}

// rttOf is the report's round-trip result named name.
func rttOf(t *testing.T, r *v1alpha1.PathReport, name string) *v1alpha1.RTTResult {
	t.Helper()
	for _, p := range r.Probes {
		if p.Name == name && p.RTT != nil {
			return p.RTT
		}
	}
	t.Fatalf("no %s result", name)
	return nil
}

// noTemporarySlices fails the test if an EndpointSlice the plugin made is left in ns.
func noTemporarySlices(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("temporary EndpointSlices left: %v %v", list, err)
	}
}

// lbService creates a Service of type LoadBalancer, name, in front of web's port 8080.
func lbService(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt(8080)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
