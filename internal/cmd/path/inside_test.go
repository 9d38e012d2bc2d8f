package path

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// An address of a pod, a node or a Service is refused as a destination outside the cluster,
// naming whose it is; an outside address or a name is not.
func TestInsideClusterRefusesTheCluster(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-1"}, Status: corev1.PodStatus{PodIP: "10.244.1.5", PodIPs: []corev1.PodIP{{IP: "10.244.1.5"}, {IP: "fd00:10:244:1::5"}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lab-a1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.77.0.11"}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}, Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.96.0.10"}}},
	)
	for dst, want := range map[string]string{
		"icmp://10.244.1.5":         "pod shop/api-1's",
		"icmp://[fd00:10:244:1::5]": "pod shop/api-1's",
		"tcp://10.77.0.11:22":       "node lab-a1's",
		"http://10.96.0.10/":        "Service kube-system/dns's",
		"icmp://198.51.100.10":      "",
		"https://outside.lab/":      "",
	} {
		err := InsideCluster(context.Background(), client, "DST", dst)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want it measured", dst, err)
		case want != "" && (!errors.Is(err, errInside) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "pod/NAME")):
			t.Errorf("%s: %v, want it refused as %s address", dst, err, want)
		}
	}
}

// Which figures a destination can have.
func TestAbsentPhase(t *testing.T) {
	for _, tc := range []struct {
		dst      string
		download bool
		absent   []string
		present  []string
	}{
		{"icmp://outside.lab", false, []string{"connect", "tls", "ttfb-new", "ttfb-reused", "download"}, []string{"icmp", "dns"}},
		{"icmp://198.51.100.10", false, []string{"connect", "dns"}, []string{"icmp"}},
		{"https://outside.lab/", true, []string{"icmp"}, []string{"connect", "tls", "ttfb-new", "download", "dns"}},
		{"grpcs://outside.lab:443", false, []string{"icmp", "download"}, []string{"connect", "tls", "ttfb-reused"}},
		{"tcp://outside.lab:5432", false, []string{"tls", "ttfb-new", "icmp"}, []string{"connect", "dns"}},
	} {
		for _, p := range tc.absent {
			if !AbsentPhase(p, tc.dst, tc.download) {
				t.Errorf("%s: %s planned, want absent", tc.dst, p)
			}
		}
		for _, p := range tc.present {
			if AbsentPhase(p, tc.dst, tc.download) {
				t.Errorf("%s: %s absent, want planned", tc.dst, p)
			}
		}
	}
}
