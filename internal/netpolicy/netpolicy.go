// Package netpolicy decides what Kubernetes NetworkPolicies allow between two endpoints, as the
// API defines it: a pod is isolated in a direction once a policy of its namespace selects it
// for that direction, and an isolated pod's traffic in that direction is allowed only when some
// rule of a selecting policy matches both the peer and the port. ICMP has no port: only a rule
// without ports allows it. It reads policies; it does not enforce them.
package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ICMP is the protocol of echo requests; NetworkPolicy ports cannot name it.
const ICMP corev1.Protocol = "ICMP"

// Endpoint is one end of a flow: a pod with its namespace's labels, or an address outside the
// cluster's pods (Pod nil), such as the API server's.
type Endpoint struct {
	Pod             *corev1.Pod
	NamespaceLabels map[string]string
	IP              netip.Addr
}

// Flow is traffic from one endpoint to another on one protocol and destination port (0 for ICMP).
type Flow struct {
	From, To Endpoint
	Protocol corev1.Protocol
	Port     int
}

// Verdict is what the policies say about a flow, in each direction.
type Verdict struct {
	Egress, Ingress Side
}

// Allowed says whether both directions let the flow through.
func (v Verdict) Allowed() bool { return v.Egress.Allowed && v.Ingress.Allowed }

// Blockers names the policies (namespace/name) that isolate the flow's ends without allowing it.
func (v Verdict) Blockers() []string {
	var b []string
	if !v.Egress.Allowed {
		b = append(b, v.Egress.Selecting...)
	}
	if !v.Ingress.Allowed {
		b = append(b, v.Ingress.Selecting...)
	}
	return b
}

// Side is one direction's verdict: the policies that select the pod for it and, when one of
// them allows the flow, which.
type Side struct {
	Allowed   bool
	Selecting []string // namespace/name of every policy that isolates the pod in this direction
	AllowedBy string
}

// Check evaluates a flow against policies (those of both ends' namespaces; others are ignored).
func Check(policies []networkingv1.NetworkPolicy, f Flow) Verdict {
	return Verdict{
		Egress:  side(policies, f, networkingv1.PolicyTypeEgress),
		Ingress: side(policies, f, networkingv1.PolicyTypeIngress),
	}
}

// side evaluates one direction: egress of From, ingress of To. An endpoint that is not a pod
// is never isolated.
func side(policies []networkingv1.NetworkPolicy, f Flow, dir networkingv1.PolicyType) Side {
	self, peer := f.To, f.From
	if dir == networkingv1.PolicyTypeEgress {
		self, peer = f.From, f.To
	}
	s := Side{Allowed: true}
	if self.Pod == nil {
		return s
	}
	for i := range policies {
		p := &policies[i]
		if p.Namespace != self.Pod.Namespace || !hasType(p, dir) || !selects(&p.Spec.PodSelector, self.Pod.Labels) {
			continue
		}
		name := p.Namespace + "/" + p.Name
		s.Selecting = append(s.Selecting, name)
		if s.AllowedBy == "" && ruleAllows(p, dir, peer, f) {
			s.AllowedBy = name
		}
	}
	s.Allowed = len(s.Selecting) == 0 || s.AllowedBy != ""
	return s
}

// hasType applies the API's default: Ingress always, Egress when the policy has egress rules.
func hasType(p *networkingv1.NetworkPolicy, dir networkingv1.PolicyType) bool {
	if len(p.Spec.PolicyTypes) > 0 {
		return slices.Contains(p.Spec.PolicyTypes, dir)
	}
	return dir == networkingv1.PolicyTypeIngress || len(p.Spec.Egress) > 0
}

// ruleAllows says whether any rule of p in direction dir matches the peer and the port.
func ruleAllows(p *networkingv1.NetworkPolicy, dir networkingv1.PolicyType, peer Endpoint, f Flow) bool {
	if dir == networkingv1.PolicyTypeIngress {
		for _, r := range p.Spec.Ingress {
			if peersMatch(r.From, p.Namespace, peer) && portsMatch(r.Ports, f) {
				return true
			}
		}
		return false
	}
	for _, r := range p.Spec.Egress {
		if peersMatch(r.To, p.Namespace, peer) && portsMatch(r.Ports, f) {
			return true
		}
	}
	return false
}

// peersMatch: an empty list matches everyone; otherwise any one peer.
func peersMatch(peers []networkingv1.NetworkPolicyPeer, policyNS string, e Endpoint) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if peerMatches(p, policyNS, e) {
			return true
		}
	}
	return false
}

func peerMatches(p networkingv1.NetworkPolicyPeer, policyNS string, e Endpoint) bool {
	if p.IPBlock != nil {
		return ipBlockMatches(p.IPBlock, e.IP)
	}
	if e.Pod == nil {
		return false
	}
	if p.NamespaceSelector == nil {
		return e.Pod.Namespace == policyNS && selects(p.PodSelector, e.Pod.Labels)
	}
	if !selects(p.NamespaceSelector, e.NamespaceLabels) {
		return false
	}
	return p.PodSelector == nil || selects(p.PodSelector, e.Pod.Labels)
}

func ipBlockMatches(b *networkingv1.IPBlock, ip netip.Addr) bool {
	if !ip.IsValid() || !prefixContains(b.CIDR, ip) {
		return false
	}
	for _, ex := range b.Except {
		if prefixContains(ex, ip) {
			return false
		}
	}
	return true
}

func prefixContains(cidr string, ip netip.Addr) bool {
	p, err := netip.ParsePrefix(cidr)
	return err == nil && p.Contains(ip.Unmap())
}

// selects: a nil selector selects nothing, an empty one everything (as the API says for peers;
// a policy's own podSelector is never nil).
func selects(sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(l))
}

// portsMatch: an empty list matches every port and ICMP; otherwise any one entry of the flow's
// protocol (TCP when unset), by number, range or the destination pod's named container port.
func portsMatch(ports []networkingv1.NetworkPolicyPort, f Flow) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol == nil && f.Protocol == corev1.ProtocolTCP || p.Protocol != nil && *p.Protocol == f.Protocol {
			if portMatches(p, f) {
				return true
			}
		}
	}
	return false
}

func portMatches(p networkingv1.NetworkPolicyPort, f Flow) bool {
	switch {
	case p.Port == nil:
		return true
	case p.Port.Type == intstr.String:
		return namedPort(f.To.Pod, p.Port.StrVal, f.Protocol) == f.Port
	case p.EndPort != nil:
		return f.Port >= p.Port.IntValue() && f.Port <= int(*p.EndPort)
	}
	return f.Port == p.Port.IntValue()
}

// namedPort is the number of a pod's container port by name and protocol, 0 when none.
func namedPort(pod *corev1.Pod, name string, proto corev1.Protocol) int {
	if pod == nil {
		return 0
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == name && (cp.Protocol == proto || cp.Protocol == "" && proto == corev1.ProtocolTCP) {
				return int(cp.ContainerPort)
			}
		}
	}
	return 0
}

// Range is an inclusive range of ports.
type Range struct{ First, Last int }

func (r Range) String() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// AllowedRanges lists the port ranges (endPort rules) of protocol proto that some policy names
// for the flow's destination side or source side: candidates for a port that a flow between the
// two may use. Check each candidate with Check: a range on one side may not be allowed on the other.
func AllowedRanges(policies []networkingv1.NetworkPolicy, proto corev1.Protocol) []Range {
	var out []Range
	add := func(ports []networkingv1.NetworkPolicyPort) {
		for _, p := range ports {
			if p.EndPort != nil && p.Port != nil && p.Port.Type == intstr.Int && (p.Protocol == nil && proto == corev1.ProtocolTCP || p.Protocol != nil && *p.Protocol == proto) {
				out = append(out, Range{p.Port.IntValue(), int(*p.EndPort)})
			}
		}
	}
	for _, pol := range policies {
		for _, r := range pol.Spec.Ingress {
			add(r.Ports)
		}
		for _, r := range pol.Spec.Egress {
			add(r.Ports)
		}
	}
	return out
}
