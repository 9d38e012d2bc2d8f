package e2e

import (
	"context"
	"math"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// With a CoreDNS replica in each zone and the zone delay on, a zone-a pod's report lists both
// replicas with their zones, the zone-b one slower by what ping from the same pod says the extra
// round trip is, and half of the pod's queries crossing a zone; with the kube-dns Service set to
// trafficDistribution PreferSameZone, none. The connection tracking of the pod's node, where
// kube-proxy picks the replica for each flow, agrees with the share the report claims.
func TestDNSReplicasByZone(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })
	p := pod("app", "lab-a1", "netbench.lab/resolver-glibc:1", []string{"--idle"}, nil)
	createPod(t, cs, ns, p)
	p = waitPod(t, cs, ns, "app", 90*time.Second, "running", running)
	netns := podNetns(t, "lab-a1", p.Status.PodIP)

	forgetDNSFlows(t, "lab-a1", p.Status.PodIP)
	r := dnsJSON(t, "-n", ns, "app", "kubernetes.default", "--lookups-per-second", "10")
	s := r.NameserverService
	if s == nil || s.Skipped != "" || r.Result.ReplicaView == nil {
		t.Fatalf("no per-replica view: %+v", s)
	}
	if s.ReadyReplicas != 2 || s.PodZone != "zone-a" || s.SameZoneReplicas != 1 || s.CrossZoneShare != 0.5 {
		t.Errorf("view %+v: want 2 replicas, one in the pod's zone-a, half the queries across", s)
	}
	if want := 10 * 0.5 * float64(r.Result.Names[0].Variants[0].Queries); s.CrossZoneQueriesPerSecond != want {
		t.Errorf("cross-zone queries/s %g, want %g", s.CrossZoneQueriesPerSecond, want)
	}
	var near, far float64
	var nearIP, farIP string
	for _, rp := range r.Result.ReplicaView.Replicas {
		if rp.Errors > 0 || rp.Latency.Count == 0 {
			t.Errorf("replica %s: %d answers, %d without", rp.Pod, rp.Latency.Count, rp.Errors)
		}
		switch rp.Zone {
		case "zone-a":
			near, nearIP = rp.Latency.P50Micros, rp.Address
		case "zone-b":
			far, farIP = rp.Latency.P50Micros, rp.Address
		}
	}
	if nearIP == "" || farIP == "" {
		t.Fatalf("replicas %+v: want one in zone-a and one in zone-b", r.Result.ReplicaView.Replicas)
	}
	// The extra round trip to zone-b as iputils ping sees it from the same pod: 3.4 ms with the
	// zone-a replica on another node (2 × (2 ms − 300 µs)), 4 ms with it on the pod's node. 16
	// medians of 20 pings each, idle and beside three busy loops, gave 3376 … 3501 µs
	// (benchmarks/notes/2026-12-02-fidelity-tests.md): under 3 ms the lab is not what the test
	// assumes, and lab.sh status says whether the delay lines run.
	pingGap := pingMedian(t, netns, farIP, 20, "0.05") - pingMedian(t, netns, nearIP, 20, "0.05")
	t.Logf("replica p50: zone-a %.0f µs, zone-b %.0f µs; ping gap %.0f µs", near, far, pingGap)
	if pingGap < 3000 {
		t.Errorf("ping from the pod: zone-b's replica only %.0f µs farther than zone-a's, want ≥ 3000 µs; lab.sh status:\n%s", pingGap, labStatus())
	}
	if math.Abs((far-near)-pingGap) > 0.25*pingGap {
		t.Errorf("zone-b replica %.0f µs slower than zone-a's; ping says %.0f µs", far-near, pingGap)
	}
	// Through the Service, kube-proxy sent the share of the flows to zone-b that the report
	// claims: its connection tracking on the pod's node says which replica answered each.
	checkCrossZoneShare(t, "without a traffic distribution", s, dnsFlows(t, "lab-a1", p.Status.PodIP, s.ClusterIP), nearIP, farIP)

	patchTrafficDistribution(t, cs, `"PreferSameZone"`)
	t.Cleanup(func() { patchTrafficDistribution(t, cs, "null") })
	waitHints(t, cs, "lab-a1", s.ClusterIP)
	forgetDNSFlows(t, "lab-a1", p.Status.PodIP)
	r = dnsJSON(t, "-n", ns, "app", "kubernetes.default")
	if s = r.NameserverService; s == nil {
		t.Fatal("with PreferSameZone: no view of the nameserver's Service")
	}
	// And kube-proxy agrees with the report: no flow through the Service reached zone-b.
	checkCrossZoneShare(t, "with PreferSameZone", s, dnsFlows(t, "lab-a1", p.Status.PodIP, s.ClusterIP), nearIP, farIP)
	if !strings.Contains(s.ShareBasis, "PreferSameZone") {
		t.Errorf("with PreferSameZone, the share's basis: %q", s.ShareBasis)
	}
}

// checkCrossZoneShare compares the report's cross-zone share with the flows the node's
// connection tracking saw go to the zone-b replica: within 4 binomial standard deviations of
// the share over that many flows (none at all for a share of 0).
func checkCrossZoneShare(t *testing.T, when string, s *v1alpha1.DNSService, flows map[string]int, nearIP, farIP string) {
	t.Helper()
	n, all := flows[nearIP]+flows[farIP], 0
	for _, c := range flows {
		all += c
	}
	t.Logf("%s: the report's cross-zone share %g; flows by replica %v", when, s.CrossZoneShare, flows)
	if n < 20 || n != all {
		t.Fatalf("%s: %d flows through the Service to its two replicas (%v): too few to compare", when, n, flows)
	}
	got := float64(flows[farIP]) / float64(n)
	if bound := 4 * math.Sqrt(s.CrossZoneShare*(1-s.CrossZoneShare)/float64(n)); math.Abs(got-s.CrossZoneShare) > bound {
		t.Errorf("%s: the report's cross-zone share is %g, the node's connection tracking saw %d of %d flows go to zone-b (%.3f; ±%.3f allowed)", when, s.CrossZoneShare, flows[farIP], n, got, bound)
	}
}

// forgetDNSFlows deletes the node's connection tracking entries of the pod's UDP queries, so
// that dnsFlows counts only the next run's.
func forgetDNSFlows(t *testing.T, node, podIP string) {
	t.Helper()
	// conntrack -D exits 1 when nothing matched.
	_ = exec.Command("ip", "netns", "exec", nodeNetns(node), "conntrack", "-D", "-p", "udp", "--orig-src", podIP, "--dport", "53").Run()
}

// dnsFlows counts the pod's UDP queries to the Service's ClusterIP by the replica that answered,
// as the pod's node's connection tracking (kube-proxy's DNAT) records them.
func dnsFlows(t *testing.T, node, podIP, clusterIP string) map[string]int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", nodeNetns(node), "conntrack", "-L", "-p", "udp",
		"--orig-src", podIP, "--orig-dst", clusterIP, "--dport", "53").Output()
	if err != nil {
		t.Fatalf("conntrack -L on %s: %v", node, err)
	}
	n := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		// orig: src=POD dst=CLUSTERIP …; reply: src=REPLICA dst=POD …
		if f := conntrackSources.FindAllStringSubmatch(line, -1); len(f) == 2 {
			n[f[1][1]]++
		}
	}
	return n
}

var conntrackSources = regexp.MustCompile(`\bsrc=(\S+)`)

// waitHints waits until the EndpointSlice controller has given every kube-dns endpoint its zone
// hint, then until kube-proxy on node routes the ClusterIP to its own zone's replica alone.
func waitHints(t *testing.T, cs kubernetes.Interface, node, clusterIP string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sl, err := cs.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
		if err != nil || len(sl.Items) == 0 {
			return false, nil
		}
		for _, s := range sl.Items {
			for _, e := range s.Endpoints {
				if e.Hints == nil || len(e.Hints.ForZones) == 0 {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal("the kube-dns EndpointSlice got no zone hints within 30 s")
	}
	t.Cleanup(func() {
		if t.Failed() {
			logSlices(t, cs)
		}
	})
	waitServiceEndpoints(t, node, clusterIP, "udp", 53, 1)
}

// logSlices logs the kube-dns EndpointSlices' endpoints: address, node, conditions, hints.
func logSlices(t *testing.T, cs kubernetes.Interface) {
	sl, err := cs.DiscoveryV1().EndpointSlices("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
	if err != nil {
		t.Log(err)
		return
	}
	for _, s := range sl.Items {
		for _, e := range s.Endpoints {
			t.Logf("slice %s: %v node %v ready %v serving %v terminating %v hints %+v", s.Name, e.Addresses, ptr.Deref(e.NodeName, ""), ptr.Deref(e.Conditions.Ready, false), ptr.Deref(e.Conditions.Serving, false), ptr.Deref(e.Conditions.Terminating, false), e.Hints)
		}
	}
}

func patchTrafficDistribution(t *testing.T, cs kubernetes.Interface, value string) {
	t.Helper()
	patch := []byte(`{"spec":{"trafficDistribution":` + value + `}}`)
	if _, err := cs.CoreV1().Services("kube-system").Patch(context.Background(), "kube-dns", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
