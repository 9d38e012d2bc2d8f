package netpolicy

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Ports is one port over each of the protocols, as a policy rule names them.
func Ports(port int, protos ...corev1.Protocol) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, proto := range protos {
		p, pr := intstr.FromInt32(int32(port)), proto
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: &pr, Port: &p})
	}
	return out
}
