package netpolicy

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(ns, name, ip string, l map[string]string, ports ...corev1.ContainerPort) Endpoint {
	return Endpoint{
		Pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: ports}}},
		},
		NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": ns},
		IP:              netip.MustParseAddr(ip),
	}
}

func policy(ns, name string, sel map[string]string, types []networkingv1.PolicyType, in []networkingv1.NetworkPolicyIngressRule, eg []networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types, Ingress: in, Egress: eg},
	}
}

func tcp(port int) networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(int32(port))
	return networkingv1.NetworkPolicyPort{Port: &p}
}

func proto(p networkingv1.NetworkPolicyPort, pr corev1.Protocol) networkingv1.NetworkPolicyPort {
	p.Protocol = &pr
	return p
}

func portRange(first, last int) networkingv1.NetworkPolicyPort {
	p := tcp(first)
	e := int32(last)
	p.EndPort = &e
	return p
}

func named(name string) networkingv1.NetworkPolicyPort {
	p := intstr.FromString(name)
	return networkingv1.NetworkPolicyPort{Port: &p}
}

var (
	ingress = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress  = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	both    = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
)

func TestCheck(t *testing.T) {
	web := map[string]string{"app": "web"}
	client := pod("shop", "client", "10.0.1.5", map[string]string{"app": "client"})
	server := pod("shop", "web-1", "10.0.2.7", web, corev1.ContainerPort{Name: "http", ContainerPort: 8080})
	other := pod("other", "x", "10.0.3.9", map[string]string{"app": "client"})
	apiserver := Endpoint{IP: netip.MustParseAddr("10.77.0.1")}
	denyAll := policy("shop", "default-deny", nil, both, nil, nil)
	allow8080 := policy("shop", "allow-web", web, ingress, []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}},
		Ports: []networkingv1.NetworkPolicyPort{tcp(8080)},
	}}, nil)
	egress8080 := policy("shop", "egress-web", nil, egress, nil, []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: web}}},
		Ports: []networkingv1.NetworkPolicyPort{tcp(8080), portRange(30000, 30100)},
	}})
	set := []networkingv1.NetworkPolicy{denyAll, allow8080, egress8080}
	for _, tc := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		flow     Flow
		allowed  bool
		blockers []string
	}{
		{"no policies", nil, Flow{client, server, corev1.ProtocolTCP, 40000}, true, nil},
		{"app port allowed both ways", set, Flow{client, server, corev1.ProtocolTCP, 8080}, true, nil},
		{"agent port blocked both ways", set, Flow{client, server, corev1.ProtocolTCP, 40000}, false, []string{"shop/default-deny", "shop/egress-web", "shop/default-deny", "shop/allow-web"}},
		{"UDP on the app port is not TCP", set, Flow{client, server, corev1.ProtocolUDP, 8080}, false, []string{"shop/default-deny", "shop/egress-web", "shop/default-deny", "shop/allow-web"}},
		{"ICMP needs a rule without ports", set, Flow{client, server, ICMP, 0}, false, []string{"shop/default-deny", "shop/egress-web", "shop/default-deny", "shop/allow-web"}},
		{"range allows egress, ingress still blocked", set, Flow{client, server, corev1.ProtocolTCP, 30050}, false, []string{"shop/default-deny", "shop/allow-web"}},
		{"API server is not a pod: ingress rules with pod peers do not match", set, Flow{apiserver, server, corev1.ProtocolTCP, 8080}, false, []string{"shop/default-deny", "shop/allow-web"}},
		{"other namespace: podSelector alone means the policy's namespace", set, Flow{other, server, corev1.ProtocolTCP, 8080}, false, []string{"shop/default-deny", "shop/allow-web"}},
		{"ingress only: egress of the client is open", []networkingv1.NetworkPolicy{allow8080}, Flow{client, server, corev1.ProtocolTCP, 8080}, true, nil},
		{"policy of another namespace does not isolate", []networkingv1.NetworkPolicy{policy("other", "deny", nil, both, nil, nil)}, Flow{client, server, corev1.ProtocolTCP, 1}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.policies, tc.flow)
			if v.Allowed() != tc.allowed {
				t.Errorf("allowed %v, want %v (%+v)", v.Allowed(), tc.allowed, v)
			}
			if diff := cmp.Diff(tc.blockers, v.Blockers()); diff != "" {
				t.Errorf("blockers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPeersAndPorts(t *testing.T) {
	web := map[string]string{"app": "web"}
	server := pod("shop", "web-1", "10.0.2.7", web, corev1.ContainerPort{Name: "http", ContainerPort: 8080}, corev1.ContainerPort{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP})
	client := pod("front", "c", "10.0.1.5", map[string]string{"app": "client"})
	in := func(from []networkingv1.NetworkPolicyPeer, ports ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicy {
		return []networkingv1.NetworkPolicy{policy("shop", "p", web, nil, []networkingv1.NetworkPolicyIngressRule{{From: from, Ports: ports}}, nil)}
	}
	nsSel := func(ns string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	}
	for _, tc := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		flow     Flow
		want     bool
	}{
		{"named port", in(nil, named("http")), Flow{client, server, corev1.ProtocolTCP, 8080}, true},
		{"named port, other number", in(nil, named("http")), Flow{client, server, corev1.ProtocolTCP, 8081}, false},
		{"named UDP port", in(nil, proto(named("dns"), corev1.ProtocolUDP)), Flow{client, server, corev1.ProtocolUDP, 5353}, true},
		{"range inclusive", in(nil, portRange(30000, 30100)), Flow{client, server, corev1.ProtocolTCP, 30100}, true},
		{"range below", in(nil, portRange(30000, 30100)), Flow{client, server, corev1.ProtocolTCP, 29999}, false},
		{"protocol only: every port", in(nil, networkingv1.NetworkPolicyPort{Protocol: ptr(corev1.ProtocolUDP)}), Flow{client, server, corev1.ProtocolUDP, 9}, true},
		{"no ports: ICMP too", in([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsSel("front")}}), Flow{client, server, ICMP, 0}, true},
		{"namespace selector and pod selector", in([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsSel("front"), PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}}}), Flow{client, server, corev1.ProtocolTCP, 1}, false},
		{"ipBlock", in([]networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16"}}}), Flow{client, server, corev1.ProtocolTCP, 1}, true},
		{"ipBlock except", in([]networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.0.1.0/24"}}}}), Flow{client, server, corev1.ProtocolTCP, 1}, false},
		{"expression selector", in([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}}}}}), Flow{client, server, corev1.ProtocolTCP, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Check(tc.policies, tc.flow).Allowed(); got != tc.want {
				t.Errorf("allowed %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAllowedRanges(t *testing.T) {
	p := policy("shop", "p", nil, nil, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{tcp(80), portRange(30000, 30100), proto(portRange(5000, 5010), corev1.ProtocolUDP)}}}, nil)
	if diff := cmp.Diff([]Range{{30000, 30100}}, AllowedRanges([]networkingv1.NetworkPolicy{p}, corev1.ProtocolTCP)); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]Range{{5000, 5010}}, AllowedRanges([]networkingv1.NetworkPolicy{p}, corev1.ProtocolUDP)); diff != "" {
		t.Error(diff)
	}
}

func ptr[T any](v T) *T { return &v }
