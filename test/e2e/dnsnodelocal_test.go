package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// corednsNode is the node of a ready kube-dns replica.
func corednsNode(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	pods, err := cs.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
			return p.Spec.NodeName
		}
	}
	t.Fatal("no running CoreDNS replica")
	return ""
}

// cacheHits is how many DNS packets the node's NodeLocal DNSCache rules have let through to the
// node's own cache at addr (the NOTRACK rule for UDP queries to it), read in the node's namespace.
func cacheHits(t *testing.T, node, addr string) int {
	t.Helper()
	tables := "iptables"
	if strings.Contains(addr, ":") {
		tables = "ip6tables"
	}
	out, err := exec.Command("ip", "netns", "exec", nodeNetns(node), tables, "-t", "raw", "-L", "NBLAB-NODELOCAL", "-v", "-x", "-n").CombinedOutput()
	if err != nil {
		t.Fatalf("reading the cache rules: %v %s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		// pkts bytes target prot opt in out source destination …: "CT … NOTRACK" or "NOTRACK",
		// the protocol by name or number, as the iptables variant prints them.
		if len(f) > 8 && (f[3] == "udp" || f[3] == "17") && f[8] == addr && strings.Contains(l, "dpt:53") && strings.Contains(l, "NOTRACK") {
			n, _ := strconv.Atoi(f[0])
			return n
		}
	}
	t.Fatalf("no NOTRACK rule for %s:\n%s", addr, out)
	return 0
}

// Without a node-local cache, the report says so and measures what one would save (a replica
// on the pod's node against the Service); with the lab's NodeLocal DNSCache on (iptables mode:
// the cache answers the Service's ClusterIP on the node), the same pod's report says it is in
// use, names the cache's pod, and shows its latency next to the replicas'; the cache's rules on
// the node counted the agent's queries. A pod with dnsPolicy None pointed at the link-local
// address is detected by it.
func TestDNSNodeLocalCache(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "nodelocaldns", "off")
	node := corednsNode(t, cs)
	d := deployment("app", node, "netbench.lab/resolver-glibc:1", []string{"--idle"})
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, "app")

	off := dnsJSON(t, "-n", ns, "deploy/app", "kubernetes.default")
	c := off.NameserverService.NodeLocalCache
	t.Logf("without a cache: %+v", c)
	if c == nil || c.State != v1alpha1.NodeLocalNotInUse || !c.SameNode || c.NearestP50Micros <= 0 || c.ServiceP50Micros <= 0 || off.NameserverService.CrossZoneShare < 0 {
		t.Fatalf("without a cache, want not in use and a what-if from a replica on %s: %+v", node, c)
	}

	labScript(t, "nodelocaldns", "on")
	t.Cleanup(func() { labScript(t, "nodelocaldns", "off") })
	// The pod's nameserver: the Service's ClusterIP of the lab's primary family.
	before := cacheHits(t, node, c.Address)
	on := dnsJSON(t, "-n", ns, "deploy/app", "kubernetes.default")
	hits := cacheHits(t, node, c.Address) - before
	c, view := on.NameserverService.NodeLocalCache, on.Result.ReplicaView
	t.Logf("with the cache: %+v; %d queries answered on the node", c, hits)
	if c == nil || c.State != v1alpha1.NodeLocalInUse || !strings.HasPrefix(c.Pod, "node-local-dns-") || on.NameserverService.CrossZoneShare >= 0 {
		t.Errorf("with the cache on, want it in use with its pod named: %+v", c)
	}
	if view == nil || view.Nameserver.Latency.Count == 0 || len(view.Replicas) == 0 || view.Replicas[0].Latency.Count == 0 {
		t.Fatalf("want the cache's latency and the replicas': %+v", view)
	}
	for _, r := range view.Replicas {
		t.Logf("cache p50 %.0f µs; replica %s (%s) p50 %.0f µs", view.Nameserver.Latency.P50Micros, r.Pod, r.Zone, r.Latency.P50Micros)
	}
	if int64(hits) < view.Nameserver.Latency.Count {
		t.Errorf("the node's cache rules counted %d queries; the agent asked the nameserver %d times", hits, view.Nameserver.Latency.Count)
	}
	out, _, err := netbench(t, "dns", "-n", ns, "deploy/app", "kubernetes.default")
	if err != nil || !strings.Contains(out, "NodeLocal DNSCache: in use") || !strings.Contains(out, "node-local cache") {
		t.Errorf("the report does not show the cache (%v):\n%s", err, out)
	}

	p := pod("linklocal", node, "netbench.lab/resolver-glibc:1", []string{"--idle"}, nil)
	p.Spec.DNSPolicy = corev1.DNSNone
	p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"169.254.20.10"}, Searches: []string{ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}}
	createPod(t, cs, ns, p)
	waitPod(t, cs, ns, "linklocal", time.Minute, "running", running)
	ll := dnsJSON(t, "-n", ns, "pod/linklocal", "kubernetes.default")
	if c := ll.NameserverService.NodeLocalCache; c == nil || c.State != v1alpha1.NodeLocalInUse || !strings.Contains(c.Basis, "link-local") {
		t.Errorf("a pod asking 169.254.20.10: %+v", ll.NameserverService)
	}
}
