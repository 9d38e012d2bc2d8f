package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// A pod whose nameserver is the cluster DNS Service's IPv6 address (dnsPolicy None, the search
// path and ndots:5 as the kubelet writes them): for the real glibc, musl and Go resolvers
// looping over two names, `dns --observe` counts the queries tcpdump on the node counts over
// the same window (IPv6 packets), each name's queries per lookup on the wire are what the
// report's model says ("as configured"), the report names the IPv6 nameserver, and the cold
// lookups' timelines show AAAA queries answered.
func TestDNSOverAnIPv6Nameserver(t *testing.T) {
	for _, libc := range []string{"glibc", "musl", "go"} {
		t.Run(libc, func(t *testing.T) {
			cs, ns := lab(t)
			dns6 := clusterDNS6(t, cs)
			d := deployment("looper", "lab-a1", "netbench.lab/resolver-"+libc+":1", []string{"--count", "0", "--every", "100", "example.com", "kubernetes.default"})
			five := "5"
			d.Spec.Template.Spec.DNSPolicy = corev1.DNSNone
			d.Spec.Template.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{dns6},
				Searches: []string{ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"},
				Options:  []corev1.PodDNSConfigOption{{Name: "ndots", Value: &five}}}
			ip4 := startLooper(t, cs, ns, d)
			ip6 := familyIP(onePod(t, cs, ns, "app=looper"), true)
			if ip6 == "" {
				t.Fatal("the looper has no IPv6 address: this test needs the dual-stack lab")
			}
			r := observeAgainstCapture(t, ns, ip4, ip6, nil)
			if string(r.Result.Resolver) != libc {
				t.Errorf("resolver %s (%s), want %s", r.Result.Resolver, r.Result.Detection, libc)
			}
			if !strings.Contains(r.Result.Nameserver, dns6) {
				t.Errorf("nameserver %q, want %s", r.Result.Nameserver, dns6)
			}
			for _, o := range r.Result.Observed.Names {
				model, _, _ := variantOf(t, r, o.Name, "as configured")
				// The window may cut one lookup of the name at each edge.
				if o.QueriesPerLookup > float64(model) || o.QueriesPerLookup < 0.85*float64(model) {
					t.Errorf("%s: %.2f queries per lookup on the wire, the report's model %d", o.Name, o.QueriesPerLookup, model)
				}
			}
			aaaa := 0
			for _, n := range r.Result.Names {
				for _, q := range n.Timeline {
					if q.Type == "AAAA" && (q.Rcode == v1alpha1.RcodeNoError || q.Rcode == v1alpha1.RcodeNoData || q.Rcode == v1alpha1.RcodeNXDomain) {
						aaaa++
					}
				}
			}
			if aaaa == 0 {
				t.Errorf("no AAAA query answered in the timelines: %+v", r.Result.Names)
			}
		})
	}
}

// clusterDNS6 is the cluster DNS Service's IPv6 ClusterIP.
func clusterDNS6(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	svc, err := cs.CoreV1().Services("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range svc.Spec.ClusterIPs {
		if strings.Contains(ip, ":") {
			return ip
		}
	}
	t.Fatalf("kube-dns has no IPv6 ClusterIP (%v): this test needs the dual-stack lab", svc.Spec.ClusterIPs)
	return ""
}

// Applications asking for one address family (getaddrinfo with AF_INET6, Go's ip6): with
// --lookup-family 6 the report models their lookups — the queries per lookup a capture on the
// pod's veth sees equal the model's, the timelines ask AAAA alone, and the what-if of asking
// both families says what AF_UNSPEC would send. kubernetes.default has no IPv6 address on an
// IPv4-primary lab, nor example.com at the lab's upstream (NODATA): glibc and Go walk on
// through the search path, musl stops.
func TestDNSLookupOfOneFamily(t *testing.T) {
	for _, libc := range []string{"glibc", "musl", "go"} {
		t.Run(libc, func(t *testing.T) {
			cs, ns := lab(t)
			d := deployment("looper", "lab-a1", "netbench.lab/resolver-"+libc+":1", []string{"--count", "0", "--every", "100", "--family", "6", "example.com", "kubernetes.default"})
			ip := startLooper(t, cs, ns, d)
			r := observeAgainstCapture(t, ns, ip, ip, nil, "--lookup-family", "6")
			for _, o := range r.Result.Observed.Names {
				model, _, _ := variantOf(t, r, o.Name, "as configured")
				both, _, _ := variantOf(t, r, o.Name, "A and AAAA")
				t.Logf("%s: %.2f queries per lookup on the wire, model %d; asking A and AAAA: %d", o.Name, o.QueriesPerLookup, model, both)
				// The window may cut one lookup of the name at each edge.
				if o.QueriesPerLookup > float64(model) || o.QueriesPerLookup < 0.85*float64(model) {
					t.Errorf("%s: %.2f queries per lookup on the wire, the report's model %d", o.Name, o.QueriesPerLookup, model)
				}
				// example.com is NXDOMAIN at every search candidate (both types alike): asking
				// both sends twice as many. kubernetes.default: AAAA alone walks on past the
				// Service's NODATA (glibc, Go), so asking both can send as many or fewer.
				if o.Name == "example.com" && both != 2*model {
					t.Errorf("%s: the what-if of A and AAAA sends %d, want twice AAAA alone's %d", o.Name, both, model)
				}
			}
			if v := r.Result.ReplicaView; v == nil || v.QueryType != "AAAA" || v.Nameserver.Latency.Count == 0 {
				t.Errorf("the replicas' view: %+v, want them asked AAAA, as the application asks", v)
			}
			for _, n := range r.Result.Names {
				for _, q := range n.Timeline {
					if q.Type != "AAAA" {
						t.Errorf("%s: the timeline asks %s %s, want AAAA alone", n.Name, q.Type, q.Name)
					}
				}
			}
		})
	}
}
