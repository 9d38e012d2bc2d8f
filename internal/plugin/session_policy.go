package plugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ErrNoPodIP: --allow-policy names an existing pod in a temporary policy by its addresses, and
// the pod has none yet.
var ErrNoPodIP = errors.New("the pod has no IP address to allow")

// Annotations of a temporary NetworkPolicy, besides NotAfterAnnotation (its deadline, after
// which any run of the plugin or `kubectl netbench cleanup` deletes it).
const (
	// IsolatedByAnnotation names, per direction, the existing policy that already isolates
	// every pod the temporary policy selects.
	IsolatedByAnnotation = "netbench.kubectl.dev/isolated-by"
	// DescriptionAnnotation says in words what the policy is, for `kubectl describe`.
	DescriptionAnnotation = "kubernetes.io/description"
)

// CreatePolicy creates a temporary NetworkPolicy for the run, labelled as the agents are and
// annotated with the time after which anyone may delete it; Close deletes it after the agents.
func (s *Session) CreatePolicy(ctx context.Context, np *networkingv1.NetworkPolicy, lifetime time.Duration) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("the session is closed")
	}
	notAfter := s.Now().Add(lifetime).UTC().Format(time.RFC3339)
	np.Labels = s.labels(RolePolicy)
	np.Annotations = maps.Clone(np.Annotations)
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[NotAfterAnnotation] = notAfter
	np.Annotations[DescriptionAnnotation] = fmt.Sprintf("temporary policy of kubectl netbench run %s (--allow-policy): lets its agents through for the run; "+
		"it selects only pods the policies in %s already isolate; deleted at the end of the run, or by any later run or `kubectl netbench cleanup` after %s",
		s.RunID, IsolatedByAnnotation, notAfter)
	created, err := s.Client.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		return refusal(ctx, s.Client, err, refused{doing: fmt.Sprintf("creating the temporary NetworkPolicy %s/%s", np.Namespace, np.Name),
			need: permission{"create", "networkpolicies", "", "networking.k8s.io"}, ns: np.Namespace})
	}
	s.mu.Lock()
	s.policies = append(s.policies, created)
	s.mu.Unlock()
	return nil
}

// deletePolicies deletes the run's NetworkPolicies (after its agents: stopping them goes through
// the ports the policies open).
func (s *Session) deletePolicies(ctx context.Context, policies []*networkingv1.NetworkPolicy) []error {
	var errs []error
	for _, np := range policies {
		err := s.Client.NetworkingV1().NetworkPolicies(np.Namespace).Delete(ctx, np.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the temporary NetworkPolicy %s/%s (delete it with: kubectl delete networkpolicy -n %s %s): %w",
				np.Namespace, np.Name, np.Namespace, np.Name, err))
		}
	}
	return errs
}

// allowance is what --allow-policy opens for one path (or a ladder's server): the server
// agent's port from the client agent (TCP and UDP; everything between the two agents when they
// are temporary pods of the run, so ICMP too), and the agents' ports from the API server (the
// pod proxy), each only for pods already isolated in that direction.
type allowance struct {
	s                *Session
	sc               *policyScope
	src, dst         *Target
	srvPort, cliPort int
}

// newAllowance picks the agents' ports (random, outside the pods' declared ports).
func newAllowance(s *Session, sc *policyScope, src, dst *Target) *allowance {
	a := &allowance{s: s, sc: sc, src: src, dst: dst}
	a.srvPort, a.cliPort = freePortAvoiding(dst.Pod), freePortAvoiding(src.Pod)
	return a
}

// freePortAvoiding is a random port from 20000-29999 that the pod does not declare.
func freePortAvoiding(p *corev1.Pod) int {
	taken := declaredPorts(p)
	for {
		if port := 20000 + rand.IntN(10000); !slices.Contains(taken, port) {
			return port
		}
	}
}

// policies builds the temporary NetworkPolicies: the server's ingress, the client's egress and
// ingress, each only where a policy already isolates (none when nothing is isolated).
func (a *allowance) policies() ([]*opening, error) {
	cli, srv := policyPod(a.s, a.src, RoleClient), policyPod(a.s, a.dst, RoleServer)
	cliPeers, err := a.s.peers(cli)
	if err != nil {
		return nil, err
	}
	srvPeers, err := a.s.peers(srv)
	if err != nil {
		return nil, err
	}
	base := "netbench-" + a.s.RunID
	server := a.sc.ingressOpenings([]*corev1.Pod{srv},
		append([]networkingv1.NetworkPolicyIngressRule{{From: cliPeers, Ports: a.agentPorts()}}, a.sc.apiServerRules(a.srvPort)...))
	client := append(a.sc.egressOpenings([]*corev1.Pod{cli}, []networkingv1.NetworkPolicyEgressRule{{To: srvPeers, Ports: a.agentPorts()}}),
		a.sc.ingressOpenings([]*corev1.Pod{cli}, a.sc.apiServerRules(a.cliPort))...)
	return append(finalize(base+"-server", server), finalize(base+"-client", client)...), nil
}

// isRunPod says whether p is a temporary pod of this run: only those carry the run's id.
func (s *Session) isRunPod(p *corev1.Pod) bool {
	return p.Labels[RunIDLabel] == s.RunID && p.Labels[ManagedByLabel] == ManagedByValue
}

// peers is how a temporary policy names the other end of a flow, exactly: the run's own pods
// by the run's labels (nothing else carries its id), an existing pod by its own addresses
// (ipBlock /32 or /128): its labels may be shared with other pods, or it may have none.
func (s *Session) peers(pods ...*corev1.Pod) ([]networkingv1.NetworkPolicyPeer, error) {
	var out []networkingv1.NetworkPolicyPeer
	for _, p := range pods {
		if s.isRunPod(p) {
			out = append(out, peerOf(p.Namespace, p.Labels))
			continue
		}
		ips := podIPs(p)
		if len(ips) == 0 {
			return nil, fmt.Errorf("--allow-policy: %s/%s: %w", p.Namespace, p.Name, ErrNoPodIP)
		}
		for _, ip := range ips {
			out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(ip, ip.BitLen()).String()}})
		}
	}
	return out, nil
}

// podIPs are a pod's addresses (both families on a dual-stack cluster).
func podIPs(p *corev1.Pod) []netip.Addr {
	var out []netip.Addr
	add := func(s string) {
		if ip, err := netip.ParseAddr(s); err == nil && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	add(p.Status.PodIP)
	for _, ip := range p.Status.PodIPs {
		add(ip.IP)
	}
	return out
}

// peerOf is the pods of namespace ns that carry labels l.
func peerOf(ns string, l map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: l},
	}
}

// portsOf is one port number over each of the protocols.
func portsOf(port int, protos ...corev1.Protocol) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, proto := range protos {
		p, pr := intstr.FromInt32(int32(port)), proto
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: &pr, Port: &p})
	}
	return out
}

// agentPorts: the server agent's port over TCP and UDP; nothing (every port and ICMP) between
// two temporary agent pods, which nothing but this run's agents carry the labels of.
func (a *allowance) agentPorts() []networkingv1.NetworkPolicyPort {
	if a.s.Mode == ModePod {
		return nil
	}
	return portsOf(a.srvPort, corev1.ProtocolTCP, corev1.ProtocolUDP)
}

// apiServerRules allow the API server's addresses to one TCP port (none when they are unknown).
func (sc *policyScope) apiServerRules(port int) []networkingv1.NetworkPolicyIngressRule {
	if len(sc.apiServer) == 0 {
		return nil
	}
	var peers []networkingv1.NetworkPolicyPeer
	for _, ip := range sc.apiServer {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(ip, ip.BitLen()).String()}})
	}
	return []networkingv1.NetworkPolicyIngressRule{{From: peers, Ports: portsOf(port, corev1.ProtocolTCP)}}
}
