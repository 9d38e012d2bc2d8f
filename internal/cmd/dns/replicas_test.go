package dns

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// kubeDNS is a cluster whose kube-dns has one replica per zone and whose client pod runs in
// zone-a, with the Service's traffic distribution set to td.
func kubeDNS(td string) *fake.Clientset {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}}
	if td != "" {
		svc.Spec.TrafficDistribution = &td
	}
	ready := true
	ep := func(pod, node, zone, addr string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{addr}, NodeName: &node, Zone: &zone, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns-x", Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{ep("coredns-a", "lab-a1", "zone-a", "10.244.1.3"), ep("coredns-b", "lab-b1", "zone-b", "10.244.3.3")}}
	// Dual-stack: the Service's IPv6 ClusterIP and the replicas' IPv6 addresses, listed first.
	svc.Spec.ClusterIPs = []string{"10.96.0.10", "fd00:10:96::a"}
	slice6 := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns-6", Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns"}},
		AddressType: discoveryv1.AddressTypeIPv6,
		Endpoints:   []discoveryv1.Endpoint{ep("coredns-a", "lab-a1", "zone-a", "fd00:10:244:1::3"), ep("coredns-b", "lab-b1", "zone-b", "fd00:10:244:3::3")}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lab-a2", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	return fake.NewClientset(svc, slice6, slice, node)
}

// A pod (dnsPolicy None) asking the DNS Service's IPv6 ClusterIP has the Service viewed at that
// address, its replicas at their IPv6 addresses; one asking the IPv4 ClusterIP, at IPv4 ones.
func TestNameserverServiceFamily(t *testing.T) {
	o := NewDNSOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	o.Client = kubeDNS("")
	for ns, want := range map[string][]string{"fd00:10:96::a": {"fd00:10:244:1::3", "fd00:10:244:3::3"}, "10.96.0.10": {"10.244.1.3", "10.244.3.3"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, Spec: corev1.PodSpec{NodeName: "lab-a2",
			DNSPolicy: corev1.DNSNone, DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{ns}}}}
		s, reps := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod})
		var got []string
		for _, r := range reps {
			got = append(got, r.Address)
		}
		if s.Skipped != "" || s.ClusterIP != ns || !cmp.Equal(got, want) {
			t.Errorf("nameserver %s: view %+v, replicas %v; want %v", ns, s, got, want)
		}
	}
}

func TestNameserverService(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, Spec: corev1.PodSpec{NodeName: "lab-a2"}}
	tests := []struct {
		name, td  string
		wantShare float64
		wantBasis string
	}{
		{"no traffic distribution", "", 0.5, "spreads them evenly over its 2 ready replicas, 1 of them in other zones"},
		{"PreferClose", "PreferClose", 0, "trafficDistribution PreferClose keeps them in zone-a, where 1 of the 2 ready replicas are"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewDNSOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
			o.Client = kubeDNS(tc.td)
			s, reps := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod})
			want := []probes.DNSReplica{{Address: "10.244.1.3", Pod: "coredns-a", Node: "lab-a1", Zone: "zone-a"}, {Address: "10.244.3.3", Pod: "coredns-b", Node: "lab-b1", Zone: "zone-b"}}
			if diff := cmp.Diff(want, reps); diff != "" {
				t.Errorf("replicas (-want +got):\n%s", diff)
			}
			if s.Skipped != "" || s.ClusterIP != "10.96.0.10" || s.PodZone != "zone-a" || s.SameZoneReplicas != 1 || s.CrossZoneShare != tc.wantShare || !strings.Contains(s.ShareBasis, tc.wantBasis) {
				t.Errorf("view %+v", s)
			}
			// 40 lookups/s of a name that takes 2 queries: 80 queries/s, this share of them across.
			o.LookupsPerSecond = 40
			o.finishNameserverView(context.Background(), s, &session.Target{Pod: pod}, &probes.DNSResult{Config: resolverConfig("10.96.0.10"), Names: []probes.DNSName{{Name: "x", Variants: []probes.DNSVariant{{Queries: 2}}}}})
			if s.CrossZoneQueriesPerSecond != 80*tc.wantShare || s.NodeLocalCache.State != report.NodeLocalNotInUse {
				t.Errorf("cross-zone queries/s %g, want %g", s.CrossZoneQueriesPerSecond, 80*tc.wantShare)
			}
		})
	}
}

// A pod whose nameserver is link-local (a node-local cache) gets no share; a pod that
// does not use cluster DNS, or a Service that cannot be read, gets the reason instead of a view.
func TestNameserverServiceSkipped(t *testing.T) {
	o := NewDNSOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	o.Client = kubeDNS("")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, Spec: corev1.PodSpec{NodeName: "lab-a2"}}
	s, _ := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod})
	o.finishNameserverView(context.Background(), s, &session.Target{Pod: pod}, &probes.DNSResult{Config: resolverConfig("169.254.20.10")})
	if s.CrossZoneShare != -1 || !strings.Contains(s.ShareBasis, "a node-local cache answers the pod's queries") || s.NodeLocalCache.State != report.NodeLocalInUse {
		t.Errorf("node-local nameserver: %+v", s)
	}
	pod.Spec.DNSPolicy = corev1.DNSDefault
	if s, reps := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod}); reps != nil || !strings.Contains(s.Skipped, "does not query the cluster DNS Service") {
		t.Errorf("dnsPolicy Default: %+v", s)
	}
	pod.Spec.DNSPolicy = corev1.DNSNone
	pod.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.2"}}
	if s, reps := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod}); reps != nil || !strings.Contains(s.Skipped, "names its own nameservers") {
		t.Errorf("dnsPolicy None, own nameserver: %+v", s)
	}
	pod.Spec.DNSConfig.Nameservers = []string{"169.254.20.10"}
	if s, reps := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod}); len(reps) != 2 || s.Skipped != "" {
		t.Errorf("dnsPolicy None asking a node-local cache: %+v", s)
	}
	pod.Spec.DNSPolicy, pod.Spec.DNSConfig = "", nil
	o.DNSService = "kube-system/other-dns"
	if s, reps := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod}); reps != nil || !strings.Contains(s.Skipped, "reading Service kube-system/other-dns") {
		t.Errorf("no such Service: %+v", s)
	}
}

func resolverConfig(nameserver string) resolver.Config {
	return resolver.Config{Nameservers: []string{nameserver}}
}
