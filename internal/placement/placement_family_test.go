package placement

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A node's families come from its pod ranges, else from its InternalIPs.
func TestNodeFamilies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		addrs      []string
		podCIDRs   []string
		ipv4, ipv6 bool
	}{
		{"dual-stack", []string{"10.77.0.11", "fd77::11"}, nil, true, true},
		{"IPv4 only", []string{"10.77.0.11"}, nil, true, false},
		{"IPv6 pod range", []string{"10.77.0.11"}, []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, true, true},
		{"IPv4 pod range on a dual-stack node", []string{"10.77.0.11", "fd77::11"}, []string{"10.244.1.0/24"}, true, false},
		{"none", nil, nil, false, false},
	} {
		n := &corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: tc.podCIDRs}}
		for _, a := range tc.addrs {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "2001:db8::1"})
		if got := NodeFrom(n); got.IPv4 != tc.ipv4 || got.IPv6 != tc.ipv6 {
			t.Errorf("%s: IPv4 %v IPv6 %v, want %v %v", tc.name, got.IPv4, got.IPv6, tc.ipv4, tc.ipv6)
		}
	}
}
