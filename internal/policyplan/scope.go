package policyplan

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/netip"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Scope is what the policy check reads before a run starts anything: the
// NetworkPolicies of the run's namespaces, those namespaces' labels, and the API server's
// addresses (the pod proxy, which hands agents their jobs and renews leases, connects from them).
type Scope struct {
	Policies  []networkingv1.NetworkPolicy
	nsLabels  map[string]map[string]string
	apiServer []netip.Addr
	Skipped   string

	client kubernetes.Interface // reads the policies again and creates the temporary ones
	log    io.Writer            // says what it left out
}

// Read reads the scope of namespaces; without permission to list NetworkPolicies the check is
// skipped and says so. A namespace that cannot be read keeps the label every namespace
// carries. sweep, when set, sees each namespace's policies first and returns those to keep
// (the commands delete there what a killed run left).
func Read(ctx context.Context, client kubernetes.Interface, log io.Writer, sweep func(ctx context.Context, ns string, list []networkingv1.NetworkPolicy) []networkingv1.NetworkPolicy, namespaces ...string) *Scope {
	sc := &Scope{nsLabels: map[string]map[string]string{}, client: client, log: log}
	for _, ns := range namespaces {
		if _, seen := sc.nsLabels[ns]; seen {
			continue
		}
		list, err := client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			sc.Skipped = fmt.Sprintf("listing networkpolicies in namespace %q failed (%v): blocked probes were not predicted", ns, access.ForbiddenOr(err))
			return sc
		}
		if sweep != nil {
			list.Items = sweep(ctx, ns, list.Items)
		}
		sc.Policies = append(sc.Policies, list.Items...)
		sc.nsLabels[ns] = map[string]string{}
		if n, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			maps.Copy(sc.nsLabels[ns], n.Labels)
		}
		sc.nsLabels[ns][corev1.LabelMetadataName] = ns // set by the API server on every namespace
	}
	sc.apiServer = session.APIServerAddrs(ctx, client)
	return sc
}

// Names lists the policies read, namespace/name.
func (sc *Scope) Names() []string {
	var n []string
	for _, p := range sc.Policies {
		n = append(n, p.Namespace+"/"+p.Name)
	}
	return n
}

// Endpoint is a pod as the policies see it, at its primary address.
func (sc *Scope) Endpoint(p *corev1.Pod) netpolicy.Endpoint {
	return sc.EndpointOf(p, netip.Addr{})
}

// EndpointOf is a pod as the policies see it at its address of like's family (a dual-stack
// flow over IPv6 is judged by the ipBlocks of IPv6); its primary address when like is not an
// address. A pod without an address of that family has none: no ipBlock matches it.
func (sc *Scope) EndpointOf(p *corev1.Pod, like netip.Addr) netpolicy.Endpoint {
	e := netpolicy.Endpoint{Pod: p, NamespaceLabels: sc.nsLabels[p.Namespace]}
	for _, s := range session.PodIPs(p) {
		if a, err := netip.ParseAddr(s); err == nil && (!like.IsValid() || a.Unmap().Is4() == like.Unmap().Is4()) {
			e.IP = a.Unmap()
			break
		}
	}
	return e
}

// policyPod is what the policies see of an agent: the target pod itself (ephemeral containers
// share its network and labels) or a temporary pod of the run in its namespace.
func policyPod(s *session.Session, t *session.Target, r session.Role) *corev1.Pod {
	if s.Mode != session.ModePod {
		return t.Pod
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: s.Name(session.AgentSpec{Role: r}), Labels: s.Labels(r)}}
}

// Check evaluates a flow; from the API server, any of its addresses must be allowed.
func (sc *Scope) Check(from, to netpolicy.Endpoint, proto corev1.Protocol, port int) netpolicy.Verdict {
	return netpolicy.Check(sc.Policies, netpolicy.Flow{From: from, To: to, Protocol: proto, Port: port})
}

// FromAPIServer says which policies stop the API server reaching pod's port (none: allowed,
// or the API server's addresses are unknown and it is assumed allowed).
func (sc *Scope) FromAPIServer(pod *corev1.Pod, port int) []string {
	for _, ip := range sc.apiServer {
		v := sc.Check(netpolicy.Endpoint{IP: ip}, sc.EndpointOf(pod, ip), corev1.ProtocolTCP, port)
		if !v.Allowed() {
			return text.Unique(v.Blockers())
		}
	}
	return nil
}

// FlowOf is the protocol a probe of the agents uses to the server agent.
func FlowOf(p agent.ProbeSpec) (corev1.Protocol, string) {
	switch p.Kind {
	case agent.ProbeICMP:
		return netpolicy.ICMP, "ICMP echo"
	case agent.ProbeUDP, agent.ProbePMTU, agent.ProbeUDPRR, agent.ProbeLoadedRTT:
		return corev1.ProtocolUDP, "UDP to the server agent's port"
	}
	return corev1.ProtocolTCP, "TCP to the server agent's port"
}

// Blocks groups blocked probes by flow, in the order first seen.
type Blocks []v1alpha1.PolicyBlock

func (b *Blocks) Add(flow string, policies []string, probe string) {
	for i := range *b {
		if (*b)[i].Flow == flow {
			(*b)[i].Probes = append((*b)[i].Probes, probe)
			return
		}
	}
	*b = append(*b, v1alpha1.PolicyBlock{Flow: flow, Policies: text.Unique(policies), Probes: []string{probe}})
}
