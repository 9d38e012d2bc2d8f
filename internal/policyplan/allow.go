package policyplan

import (
	"math/rand/v2"
	"net/netip"
	"slices"

	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Allowance is what --allow-policy opens for one path (or a ladder's server): the server
// agent's port from the client agent (TCP and UDP; everything between the two agents when they
// are temporary pods of the run, so ICMP too), and the agents' ports from the API server (the
// pod proxy), each only for pods already isolated in that direction.
type Allowance struct {
	s                *session.Session
	sc               *Scope
	src, dst         *session.Target
	SrvPort, CliPort int
}

// NewAllowance picks the agents' ports (random, outside the pods' declared ports).
func NewAllowance(s *session.Session, sc *Scope, src, dst *session.Target) *Allowance {
	a := &Allowance{s: s, sc: sc, src: src, dst: dst}
	a.SrvPort, a.CliPort = FreePort(dst.Pod), FreePort(src.Pod)
	return a
}

// FreePort picks a port for agents to listen on in pods: below the kernel's default range of
// ephemeral ports (32768-60999), so that no outgoing connection of a pod can hold it (a listener
// cannot bind a port a connection of the same address uses), and declared by none of the pods'
// containers.
func FreePort(pods ...*corev1.Pod) int {
	var taken []int
	for _, p := range pods {
		taken = append(taken, declaredPorts(p)...)
	}
	for {
		if port := 20000 + rand.IntN(10000); !slices.Contains(taken, port) {
			return port
		}
	}
}

// Policies builds the temporary NetworkPolicies: the server's ingress, the client's egress and
// ingress, each only where a policy already isolates (none when nothing is isolated).
func (a *Allowance) Policies() ([]*Opening, error) {
	cli, srv := policyPod(a.s, a.src, session.RoleClient), policyPod(a.s, a.dst, session.RoleServer)
	cliPeers, err := a.s.Peers(cli)
	if err != nil {
		return nil, err
	}
	srvPeers, err := a.s.Peers(srv)
	if err != nil {
		return nil, err
	}
	base := "netbench-" + a.s.RunID
	server := a.sc.IngressOpenings([]*corev1.Pod{srv},
		append([]networkingv1.NetworkPolicyIngressRule{{From: cliPeers, Ports: a.agentPorts()}}, a.sc.APIServerRules(a.SrvPort)...))
	client := append(a.sc.EgressOpenings([]*corev1.Pod{cli}, []networkingv1.NetworkPolicyEgressRule{{To: srvPeers, Ports: a.agentPorts()}}),
		a.sc.IngressOpenings([]*corev1.Pod{cli}, a.sc.APIServerRules(a.CliPort))...)
	return append(Finalize(base+"-server", server), Finalize(base+"-client", client)...), nil
}

// agentPorts: the server agent's port over TCP and UDP; nothing (every port and ICMP) between
// two temporary agent pods, which nothing but this run's agents carry the labels of.
func (a *Allowance) agentPorts() []networkingv1.NetworkPolicyPort {
	if a.s.Mode == session.ModePod {
		return nil
	}
	return netpolicy.Ports(a.SrvPort, corev1.ProtocolTCP, corev1.ProtocolUDP)
}

// APIServerRules allow the API server's addresses to one TCP port (none when they are unknown).
func (sc *Scope) APIServerRules(port int) []networkingv1.NetworkPolicyIngressRule {
	if len(sc.apiServer) == 0 {
		return nil
	}
	var peers []networkingv1.NetworkPolicyPeer
	for _, ip := range sc.apiServer {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(ip, ip.BitLen()).String()}})
	}
	return []networkingv1.NetworkPolicyIngressRule{{From: peers, Ports: netpolicy.Ports(port, corev1.ProtocolTCP)}}
}
