package render

import (
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

func TestWriteDNSService(t *testing.T) {
	lat := func(p50 float64) probes.Latency {
		return probes.Latency{Count: 20, P50Micros: p50, P90Micros: p50 + 50, MaxMicros: p50 + 100}
	}
	view := &probes.DNSReplicaView{Query: "kubernetes.default.svc.cluster.local.",
		Nameserver: probes.DNSReplicaLatency{DNSReplica: probes.DNSReplica{Address: "10.96.0.10"}, Latency: lat(2500)},
		Replicas: []probes.DNSReplicaLatency{
			{DNSReplica: probes.DNSReplica{Address: "10.244.1.3", Pod: "coredns-a", Node: "lab-a1", Zone: "zone-a"}, Latency: lat(600)},
			{DNSReplica: probes.DNSReplica{Address: "10.244.3.3", Pod: "coredns-b", Node: "lab-b1", Zone: "zone-b"}, Latency: lat(4600), Errors: 1},
		}}
	r := &report.DNSReport{
		Result: &agent.DNSReport{DNSResult: &probes.DNSResult{Repeats: 20, ReplicaView: view, Names: []probes.DNSName{{Name: "kubernetes.default"}}}},
		NameserverService: &report.DNSService{Namespace: "kube-system", Name: "kube-dns", ClusterIP: "10.96.0.10", ReadyReplicas: 2, PodZone: "zone-a",
			SameZoneReplicas: 1, CrossZoneShare: 0.5, ShareBasis: "without a traffic distribution …", LookupsPerSecond: 10, CrossZoneQueriesPerSecond: 20},
	}
	var b strings.Builder
	writeDNSService(&b, r)
	out := b.String()
	for _, want := range []string{
		"Nameserver replicas: Service kube-system/kube-dns (10.96.0.10), 2 ready, this pod in zone-a",
		"coredns-a  10.244.1.3  lab-a1  zone-a      same zone   600 µs",
		"coredns-b  10.244.3.3  lab-b1  zone-b     other zone  4.60 ms",
		"50 % of this pod's queries through the Service reach another zone",
		"at 10 lookups/s of kubernetes.default as configured: 20.0 cross-zone queries/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r.NameserverService = &report.DNSService{Skipped: "skipped: reading Service kube-system/kube-dns: forbidden"}
	b.Reset()
	writeDNSService(&b, r)
	if !strings.Contains(b.String(), "Nameserver replicas: skipped: reading Service") {
		t.Errorf("skipped view: %q", b.String())
	}
}
