package ladder

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
)

// ladderClient is what the policies see of every rung's client: a temporary pod of the run in
// DST's namespace, carrying the run's client labels (every rung's client carries the same).
func ladderClient(s *session.Session, dst *session.Target) *session.Target {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: dst.Namespace, Name: s.Name(session.AgentSpec{Role: session.RoleClient}), Labels: s.Labels(session.RoleClient)}}
	return &session.Target{Namespace: dst.Namespace, Pod: pod}
}

// planPolicies reads the NetworkPolicies of DST's (and the Service's) namespace and works out,
// as path does for its pair, what they let through from the rungs' clients to the server agent
// and the app's port, then the Service's flows. --allow-policy opens what they block.
func (r *ladderRun) planPolicies(ctx context.Context) error {
	o := r.o
	probes, appPort, _ := o.FamilySpecs(r.addrs, nil) // the IPv6 twins too (--ip-family both)
	namespaces := []string{r.dst.Namespace}
	if r.sr != nil {
		namespaces = append(namespaces, r.sr.svc.Namespace)
	}
	if err := r.checkServiceNamespace(ctx); err != nil {
		return err
	}
	sc := o.ReadPolicies(ctx, namespaces...)
	cli := ladderClient(r.sess, r.dst)
	pp, err := o.PlanPolicy(ctx, r.sess, sc, cli, r.dst, probes, appPort, r.lifetime)
	r.pp, r.rep.Policy = pp, pp.Check
	if err != nil || r.sr == nil || sc.Skipped != "" {
		return err
	}
	return r.servicePolicy(ctx, sc, cli.Pod)
}

// checkServiceNamespace checks, before anything is created, what the run does in the Service's
// namespace when it is not DST's (DST's is checked when the session opens): the endpoint
// agents are ephemeral containers in the Service's pods, and --allow-policy may create a
// temporary policy there.
func (r *ladderRun) checkServiceNamespace(ctx context.Context) error {
	if r.sr == nil || r.sr.svc.Namespace == r.dst.Namespace {
		return nil
	}
	ns := r.sr.svc.Namespace
	if r.sess.Mode == session.ModeEphemeral && len(r.sr.svc.Spec.Selector) > 0 {
		if err := access.CheckPermissions(ctx, r.o.Client, []string{ns}, access.NeededPermissions(false)); err != nil {
			return err
		}
	}
	if r.o.AllowPolicy {
		return access.CheckPolicyPermissions(ctx, r.o.Client, ns)
	}
	return nil
}

// servicePolicy checks the Service's flows from the rungs' clients: through its ClusterIP to
// its endpoints' target port (the svc- probes), and to the endpoint agents that count where
// connections land.
func (r *ladderRun) servicePolicy(ctx context.Context, sc *policyplan.Scope, cliPod *corev1.Pod) error {
	sr, pp := r.sr, r.pp
	if err := r.o.endpointPods(ctx, sr); err != nil {
		return err
	}
	var b policyplan.Blocks
	// Each probe through the ClusterIP of its family, judged at the pods' addresses of it.
	for _, probe := range r.o.serviceProbes(sr) {
		like := (agent.Job{}).TargetAddr(probe) // its ClusterIP
		for _, p := range sr.pods {
			port := targetPort(sr.port, p)
			if v := sc.Check(sc.EndpointOf(cliPod, like), sc.EndpointOf(p, like), corev1.ProtocolTCP, port); !v.Allowed() {
				flow := fmt.Sprintf("TCP through Service %s/%s (%s) to its endpoint %s port %d", sr.svc.Namespace, sr.svc.Name, like, p.Name, port)
				b.Add(flow, v.Blockers(), probe.Label())
				pp.Skip[probe.Label()] = true
				break
			}
		}
	}
	if r.sess.Mode == session.ModeEphemeral && len(sr.pods) > 0 && len(sr.svc.Spec.Selector) > 0 {
		sr.agentPort = policyplan.FreePort(sr.pods...)
		if err := r.spreadPolicy(ctx, sc, cliPod, &b); err != nil {
			return err
		}
	}
	pp.Check.Blocked = append(pp.Check.Blocked, b...)
	r.o.TellPolicy(b, nil)
	return nil
}

// spreadPolicy checks the endpoint agents' port from the clients and from the API server (which
// renews their leases); --allow-policy opens it for the run, else the spread is skipped.
func (r *ladderRun) spreadPolicy(ctx context.Context, sc *policyplan.Scope, cliPod *corev1.Pod, b *policyplan.Blocks) error {
	sr := r.sr
	var families []netip.Addr
	for _, c := range clusterIPs(sr.svc, r.o.IPFamily) {
		families = append(families, netip.MustParseAddr(c.ip))
	}
	blockers := spreadBlockers(sc, cliPod, families, sr.pods, sr.agentPort)
	if len(blockers) > 0 && r.o.AllowPolicy {
		ops, err := r.spreadAllowance(sc, cliPod)
		if err != nil {
			return err
		}
		names, err := sc.Create(ctx, r.sess, ops, r.lifetime)
		r.pp.Check.Temporary = append(r.pp.Check.Temporary, names...)
		r.o.TellPolicy(nil, names)
		if err != nil {
			return err
		}
		blockers = spreadBlockers(sc, cliPod, families, sr.pods, sr.agentPort)
	}
	switch {
	case len(blockers) > 0:
		b.Add(fmt.Sprintf("TCP to the Service's endpoint agents on port %d (from the clients and the API server)", sr.agentPort), blockers, "svc-spread")
		sr.info.SpreadSkipped = fmt.Sprintf("NetworkPolicy %s blocks the endpoint agents' port (allow it for this run with --allow-policy)", strings.Join(blockers, ", "))
	case r.pp.InlineJob:
		sr.info.SpreadSkipped = "a NetworkPolicy stops the API server handing the clients a job, and counting where connections land needs the run's token in it"
	}
	return nil
}

// spreadBlockers are the policies that stop the clients (over each of the families, those of
// the ClusterIPs measured) or the API server reaching an endpoint agent on port.
func spreadBlockers(sc *policyplan.Scope, cliPod *corev1.Pod, families []netip.Addr, pods []*corev1.Pod, port int) []string {
	var out []string
	for _, p := range pods {
		for _, like := range families {
			out = append(out, sc.Check(sc.EndpointOf(cliPod, like), sc.EndpointOf(p, like), corev1.ProtocolTCP, port).Blockers()...)
		}
		out = append(out, sc.FromAPIServer(p, port)...)
	}
	return text.Unique(out)
}

// spreadAllowance opens the endpoint agents' port for this run: ingress to the measured
// endpoint pods from the run's clients and the API server, and the clients' egress to those
// pods' addresses, each only for pods a policy already isolates in that direction. Endpoint
// pods are grouped by the policy that isolates them (one temporary policy each); a pod no
// policy isolates is not selected at all.
func (r *ladderRun) spreadAllowance(sc *policyplan.Scope, cliPod *corev1.Pod) ([]*policyplan.Opening, error) {
	sr, port := r.sr, r.sr.agentPort
	base := "netbench-" + r.sess.RunID
	endpoints, err := r.sess.Peers(sr.pods...)
	if err != nil {
		return nil, err
	}
	clients, err := r.sess.Peers(cliPod)
	if err != nil {
		return nil, err
	}
	in := sc.IngressOpenings(sr.pods, append([]networkingv1.NetworkPolicyIngressRule{{From: clients, Ports: netpolicy.Ports(port, corev1.ProtocolTCP)}},
		sc.APIServerRules(port)...))
	out := sc.EgressOpenings([]*corev1.Pod{cliPod}, []networkingv1.NetworkPolicyEgressRule{{To: endpoints, Ports: netpolicy.Ports(port, corev1.ProtocolTCP)}})
	return append(policyplan.Finalize(base+"-endpoints", in), policyplan.Finalize(base+"-client-endpoints", out)...), nil
}
