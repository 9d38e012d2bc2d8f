package matrix

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// meshPod is what the policies see of every agent of the matrix: a pod of the run in the
// namespace, with the run's mesh labels.
func (r *matrixRun) meshPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.o.Namespace, Name: "netbench-" + r.sess.RunID + "-" + string(session.RoleMesh), Labels: r.sess.Labels(session.RoleMesh)}}
}

// planMeshPolicies reads the namespace's NetworkPolicies before any agent starts and works out which
// probes they let through between the agents, and from the API server (which posts the jobs):
// it moves the agents' port into a range a policy allows unless --agent-port was given, opens
// the rest for this run with --allow-policy, and otherwise skips the blocked probes, naming
// the policies; when nothing could be measured it fails before anything is created.
func (r *matrixRun) planMeshPolicies(ctx context.Context, portGiven bool) error {
	o := r.o
	if o.AllowPolicy {
		if err := access.CheckPolicyPermissions(ctx, o.Client, o.Namespace); err != nil {
			return err
		}
	}
	sc := o.ReadPolicies(ctx, o.Namespace)
	check := &report.PolicyCheck{Skipped: sc.Skipped, Policies: sc.Names()}
	r.rep.Policy, r.skip = check, map[string]bool{}
	if sc.Skipped != "" {
		if o.AllowPolicy {
			return fmt.Errorf("--allow-policy: %s", sc.Skipped)
		}
		return nil
	}
	mesh := r.meshPod()
	if p := policyplan.PortWithin(sc, mesh, mesh, nil); !portGiven && p != 0 && len(r.meshBlocks(sc, mesh, o.Port)) > 0 {
		o.Port, check.AgentPort = p, p
	}
	blocked := r.meshBlocks(sc, mesh, o.Port)
	if len(blocked) > 0 && o.AllowPolicy {
		names, err := sc.Create(ctx, r.sess, r.meshAllowance(sc, mesh), r.lifetime())
		check.Temporary = names
		if err != nil {
			return err
		}
		blocked = r.meshBlocks(sc, mesh, o.Port)
	}
	check.Blocked = blocked
	o.TellPolicy(blocked, check.Temporary)
	for _, b := range blocked {
		for _, p := range b.Probes {
			r.skip[p] = true
		}
	}
	if len(r.job("").Probes) == 0 {
		return fmt.Errorf("NetworkPolicy %s blocks every probe between the matrix's agents in namespace %s: nothing can be measured (allow them for this run with --allow-policy)",
			strings.Join(blocked[0].Policies, ", "), o.Namespace)
	}
	return nil
}

// meshBlocks are the flows the policies block: the API server's pod proxy to the agents' port
// (every probe: the jobs go through it), then agent to agent.
func (r *matrixRun) meshBlocks(sc *policyplan.Scope, mesh *corev1.Pod, port int) []report.PolicyBlock {
	var b policyplan.Blocks
	probes := r.o.job("").Probes
	if pols := sc.FromAPIServer(mesh, port); len(pols) > 0 {
		for _, p := range probes {
			b.Add(fmt.Sprintf("the API server's pod proxy to the agents' port %d (jobs are posted through it)", port), pols, p.Label())
		}
		return b
	}
	ep := sc.Endpoint(mesh)
	for _, p := range probes {
		proto, flow := policyplan.FlowOf(p)
		if v := sc.Check(ep, ep, proto, port); !v.Allowed() {
			b.Add(strings.Replace(flow, "the server agent's port", fmt.Sprintf("the agents' port %d", port), 1), v.Blockers(), p.Label())
		}
	}
	return b
}

// meshAllowance is the temporary policy of --allow-policy: the run's agents (pods nothing else
// carries the labels of) may reach each other on every port and ICMP, and the API server may
// reach their port; only in the directions a policy already isolates them.
func (r *matrixRun) meshAllowance(sc *policyplan.Scope, mesh *corev1.Pod) []*policyplan.Opening {
	self := []networkingv1.NetworkPolicyPeer{session.PeerOf(mesh.Namespace, mesh.Labels)}
	mine := []*corev1.Pod{mesh}
	ops := append(sc.IngressOpenings(mine, append([]networkingv1.NetworkPolicyIngressRule{{From: self}}, sc.APIServerRules(r.o.Port)...)),
		sc.EgressOpenings(mine, []networkingv1.NetworkPolicyEgressRule{{To: self}})...)
	return policyplan.Finalize(mesh.Name, ops)
}

// job is what the agent on a pair's From runs against the agent at ip: the matrix's probes
// less those the policies block.
func (r *matrixRun) job(ip string) agent.Job {
	j := r.o.job(ip)
	j.Probes = slices.DeleteFunc(j.Probes, func(p agent.ProbeSpec) bool { return r.skip[p.Label()] })
	return j
}
