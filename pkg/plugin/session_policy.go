package plugin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/netpolicy"
)

// ErrNoSelector: --allow-policy cannot select a pod that has no labels without selecting its
// whole namespace.
var ErrNoSelector = errors.New("the pod has no labels to select it by")

// CreatePolicy creates a temporary NetworkPolicy for the run, labelled as the agents are and
// annotated with the time after which anyone may delete it; Close deletes it after the agents.
func (s *Session) CreatePolicy(ctx context.Context, np *networkingv1.NetworkPolicy, lifetime time.Duration) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("the session is closed")
	}
	np.Labels = s.labels(RolePolicy)
	np.Annotations = map[string]string{NotAfterAnnotation: s.Now().Add(lifetime).UTC().Format(time.RFC3339)}
	created, err := s.Client.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		return admissionError(err, fmt.Sprintf("creating the temporary NetworkPolicy %s/%s", np.Namespace, np.Name))
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

// allowance is what --allow-policy opens for one run: the server agent's port from the client
// agent (TCP and UDP; everything between the two agents when they are temporary pods of the
// run, so ICMP too), and the agents' ports from the API server (the pod proxy), each only in a
// direction a policy already isolates.
type allowance struct {
	s                  *Session
	sc                 *policyScope
	src, dst           *Target
	srvPort, cliPort   int
	srcEgress, srcIngr bool // SRC's agent is isolated in that direction
	dstIngress         bool
}

// newAllowance picks the agents' ports (random, outside the pods' declared ports) and reads
// which directions the policies isolate.
func newAllowance(s *Session, sc *policyScope, src, dst *Target) *allowance {
	a := &allowance{s: s, sc: sc, src: src, dst: dst}
	a.srvPort, a.cliPort = freePortAvoiding(dst.Pod), freePortAvoiding(src.Pod)
	cli, srv := policyPod(s, src, RoleClient), policyPod(s, dst, RoleServer)
	a.srcEgress = isolated(sc, []*corev1.Pod{cli}, networkingv1.PolicyTypeEgress)
	a.srcIngr = isolated(sc, []*corev1.Pod{cli}, networkingv1.PolicyTypeIngress)
	a.dstIngress = isolated(sc, []*corev1.Pod{srv}, networkingv1.PolicyTypeIngress)
	return a
}

// isolated says whether a policy selects any of the pods for direction dir.
func isolated(sc *policyScope, pods []*corev1.Pod, dir networkingv1.PolicyType) bool {
	for _, p := range pods {
		f := netpolicy.Flow{From: sc.endpoint(p), Protocol: corev1.ProtocolTCP, Port: 1}
		if dir == networkingv1.PolicyTypeIngress {
			f.From, f.To = netpolicy.Endpoint{}, sc.endpoint(p)
		}
		v := netpolicy.Check(sc.policies, f)
		if len(v.Egress.Selecting)+len(v.Ingress.Selecting) > 0 {
			return true
		}
	}
	return false
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

// policies builds the temporary NetworkPolicies (none when nothing is isolated).
func (a *allowance) policies() ([]*networkingv1.NetworkPolicy, error) {
	var out []*networkingv1.NetworkPolicy
	if a.dstIngress {
		sel, err := a.selector(a.dst, RoleServer)
		if err != nil {
			return nil, err
		}
		np := a.policy(a.dst, "server", sel, networkingv1.PolicyTypeIngress)
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{a.peer(a.src, RoleClient)}, Ports: a.agentPorts()}}
		np.Spec.Ingress = append(np.Spec.Ingress, a.fromAPIServer(a.srvPort)...)
		out = append(out, np)
	}
	if !a.srcEgress && !a.srcIngr {
		return out, nil
	}
	sel, err := a.selector(a.src, RoleClient)
	if err != nil {
		return nil, err
	}
	np := a.policy(a.src, "client", sel)
	if a.srcEgress {
		np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{a.peer(a.dst, RoleServer)}, Ports: a.agentPorts()}}
	}
	if a.srcIngr {
		np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
		np.Spec.Ingress = a.fromAPIServer(a.cliPort)
	}
	return append(out, np), nil
}

func (a *allowance) policy(t *Target, side string, sel metav1.LabelSelector, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: fmt.Sprintf("netbench-%s-%s", a.s.RunID, side)},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: sel, PolicyTypes: types},
	}
}

// selector selects the agent: a temporary pod by the run's labels, an ephemeral container by
// its pod's own labels (which may select the pod's siblings too: the report says so).
func (a *allowance) selector(t *Target, r Role) (metav1.LabelSelector, error) {
	l := policyPod(a.s, t, r).Labels
	if len(l) == 0 {
		return metav1.LabelSelector{}, fmt.Errorf("--allow-policy: %s/%s: %w (use --mode pod: its agent pods carry the run's labels)", t.Namespace, t.Pod.Name, ErrNoSelector)
	}
	return metav1.LabelSelector{MatchLabels: l}, nil
}

func (a *allowance) peer(t *Target, r Role) networkingv1.NetworkPolicyPeer {
	return peerOf(t.Namespace, policyPod(a.s, t, r).Labels)
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

// fromAPIServer allows the API server's addresses to one TCP port (none when they are unknown).
func (a *allowance) fromAPIServer(port int) []networkingv1.NetworkPolicyIngressRule {
	return a.sc.apiServerRules(port)
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

// apply creates the policies and adds them to the scope, so that the plan sees them.
func (a *allowance) apply(ctx context.Context, lifetime time.Duration) ([]string, error) {
	nps, err := a.policies()
	if err != nil {
		return nil, err
	}
	return createPolicies(ctx, a.s, a.sc, nps, lifetime)
}

// createPolicies creates temporary policies of the session, adding each to the scope so that
// the plan sees it, and returns their names (namespace/name), also of those made before an error.
func createPolicies(ctx context.Context, s *Session, sc *policyScope, nps []*networkingv1.NetworkPolicy, lifetime time.Duration) ([]string, error) {
	var names []string
	for _, np := range nps {
		if err := s.CreatePolicy(ctx, np, lifetime); err != nil {
			return names, err
		}
		sc.policies = append(sc.policies, *np)
		names = append(names, np.Namespace+"/"+np.Name)
	}
	return names, nil
}
