package dns

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

func cachePod(name, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: map[string]string{"k8s-app": "node-local-dns"}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

// A node-local cache is in use when the pod's nameserver is link-local, or when its node runs
// the cache (which then answers the Service's ClusterIP); a cache on other nodes only, or one
// not running, does not count; without leave to list pods it is unknown, with the reason. The
// cross-zone share stands only while the pod's queries go through the Service.
func TestNodeLocalCache(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, Spec: corev1.PodSpec{NodeName: "lab-a2"}}
	tests := []struct {
		name, nameserver string
		pods             []runtime.Object
		forbid           bool
		want             report.NodeLocalDNS
		wantBasis        string
	}{
		{"link-local nameserver", "169.254.20.10", nil, false,
			report.NodeLocalDNS{State: report.NodeLocalInUse, Address: "169.254.20.10"}, "is link-local"},
		{"cache on the pod's node", "10.96.0.10", []runtime.Object{cachePod("nld-a2", "lab-a2", corev1.PodRunning), cachePod("nld-a1", "lab-a1", corev1.PodRunning)}, false,
			report.NodeLocalDNS{State: report.NodeLocalInUse, Address: "10.96.0.10", Pod: "nld-a2"}, "kube-system/nld-a2 (k8s-app=node-local-dns), which answers the Service's ClusterIP 10.96.0.10 on the node"},
		{"cache on other nodes only", "10.96.0.10", []runtime.Object{cachePod("nld-a1", "lab-a1", corev1.PodRunning), cachePod("nld-a2", "lab-a2", corev1.PodPending)}, false,
			report.NodeLocalDNS{State: report.NodeLocalNotInUse, Address: "10.96.0.10"}, "its node runs no k8s-app=node-local-dns pod"},
		{"pods not listable", "10.96.0.10", nil, true,
			report.NodeLocalDNS{State: report.NodeLocalUnknown, Address: "10.96.0.10"}, "unknown: listing pods k8s-app=node-local-dns in kube-system: pods is forbidden"},
		{"another nameserver", "10.0.0.2", nil, false,
			report.NodeLocalDNS{State: report.NodeLocalUnknown, Address: "10.0.0.2"}, "neither link-local nor the Service's ClusterIP"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewDNSOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
			cs := kubeDNS("")
			for _, p := range tc.pods {
				if err := cs.Tracker().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if tc.forbid {
				cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
				})
			}
			o.Client = cs
			s, _ := o.nameserverService(context.Background(), &session.Target{Namespace: "shop", Pod: pod})
			o.finishNameserverView(context.Background(), s, &session.Target{Pod: pod}, &probes.DNSResult{Config: resolverConfig(tc.nameserver)})
			got := *s.NodeLocalCache
			if !strings.Contains(got.Basis, tc.wantBasis) {
				t.Errorf("basis %q, want it to contain %q", got.Basis, tc.wantBasis)
			}
			got.Basis = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// The share stands while the pod asks the Service and no cache is known to answer.
			viaService := tc.nameserver == "10.96.0.10" && tc.want.State != report.NodeLocalInUse
			if viaService != (s.CrossZoneShare >= 0) {
				t.Errorf("cross-zone share %g with the cache %s", s.CrossZoneShare, tc.want.State)
			}
		})
	}
}

// Without a cache, the what-if compares the Service with a replica on the pod's node, or else
// with the fastest replica in its zone; replicas that never answered are left out.
func TestNodeLocalWhatIf(t *testing.T) {
	lat := func(p50 float64) probes.Latency { return probes.Latency{Count: 20, P50Micros: p50} }
	rep := func(pod, node, zone string, p50 float64) probes.DNSReplicaLatency {
		return probes.DNSReplicaLatency{DNSReplica: probes.DNSReplica{Pod: pod, Node: node, Zone: zone}, Latency: lat(p50)}
	}
	s := &report.DNSService{PodZone: "zone-a"}
	view := &probes.DNSReplicaView{Nameserver: probes.DNSReplicaLatency{Latency: lat(2000)}, Replicas: []probes.DNSReplicaLatency{
		rep("far", "lab-b1", "zone-b", 4000), rep("slow-near", "lab-a1", "zone-a", 900), rep("fast-near", "lab-a3", "zone-a", 500),
		{DNSReplica: probes.DNSReplica{Pod: "silent", Node: "lab-a2", Zone: "zone-a"}},
	}}
	n := &report.NodeLocalDNS{State: report.NodeLocalNotInUse}
	nodeLocalWhatIf(n, s, "lab-a2", view)
	if want := (report.NodeLocalDNS{State: report.NodeLocalNotInUse, ServiceP50Micros: 2000, NearestReplica: "fast-near", NearestP50Micros: 500}); *n != want {
		t.Errorf("zone's fastest: %+v, want %+v", *n, want)
	}
	view.Replicas = append(view.Replicas, rep("on-node", "lab-a2", "zone-a", 300))
	n = &report.NodeLocalDNS{State: report.NodeLocalNotInUse}
	nodeLocalWhatIf(n, s, "lab-a2", view)
	if n.NearestReplica != "on-node" || !n.SameNode || n.NearestP50Micros != 300 {
		t.Errorf("same node: %+v", *n)
	}
	n = &report.NodeLocalDNS{State: report.NodeLocalInUse}
	if nodeLocalWhatIf(n, s, "lab-a2", view); n.NearestReplica != "" {
		t.Errorf("a what-if with the cache in use: %+v", *n)
	}
}
