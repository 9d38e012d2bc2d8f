package ladder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// HostNetworkClass is the class of the --host-baseline rung: node to node, in the nodes' own
// network, on the same pair of nodes as the first cross-zone (or cross-region) rung.
const HostNetworkClass = "host-network"

// hostRung plans the node-to-node rung beside the first measurable cross-zone rung.
func hostRung(rungs []report.LadderRung) report.LadderRung {
	for _, r := range rungs {
		if (r.Class == placement.CrossZone || r.Class == placement.CrossRegion) && r.Skipped == "" {
			return report.LadderRung{Name: HostNetworkClass + " " + strings.TrimPrefix(strings.TrimPrefix(r.Name, placement.CrossZone+" "), placement.CrossRegion+" "),
				Class: HostNetworkClass, Node: r.Node, Zone: r.Zone, Region: r.Region, Baseline: r.Name}
		}
	}
	return report.LadderRung{Name: HostNetworkClass, Class: HostNetworkClass, Skipped: "no measurable cross-zone rung to put beside it"}
}

// startHostServer starts the host-network rung's server: a hostNetwork pod on DST's node. A
// namespace whose Pod Security forbids hostNetwork skips the rung with that reason.
func (r *ladderRun) startHostServer(ctx context.Context) error {
	rung := r.hostRung()
	if rung == nil {
		return nil
	}
	r.o.Progress("starting the host-network server agent on node %s", r.dst.Pod.Spec.NodeName)
	a, err := r.sess.Start(ctx, session.AgentSpec{Role: session.RoleServer, Suffix: "host", Target: r.dst, Serve: true, Lifetime: r.lifetime,
		Placement: &session.Placement{Node: r.dst.Pod.Spec.NodeName, Tolerations: r.tolerationsOn(r.dst.Pod.Spec.NodeName), HostNetwork: true}})
	switch {
	case errors.Is(err, access.ErrPodSecurity):
		rung.Skipped = fmt.Sprintf("namespace %s's Pod Security level forbids hostNetwork pods (%v); run the ladder in a namespace that allows them (privileged)", r.dst.Namespace, err)
		return nil
	case errors.Is(err, access.ErrAdmission):
		rung.Skipped = fmt.Sprintf("admission in namespace %s refused the hostNetwork pod (%v); run the ladder in a namespace that allows them", r.dst.Namespace, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting the host-network server agent: %w", err)
	}
	if err := a.WaitReady(ctx); err != nil {
		return err
	}
	// Every agent-to-agent probe, to the host-network server's address of each family.
	if r.hostProbes, _, err = r.o.FamilySpecs(r.addrs, a); err != nil {
		return fmt.Errorf("the host-network rung: %w", err)
	}
	if r.hostHost, err = path.ServerHost(a, r.addrs[0]); err != nil {
		return fmt.Errorf("the host-network rung: %w", err)
	}
	r.hostSrv = a
	r.timer.Phase("start-host-server")
	return nil
}

// hostRung returns the planned host-network rung still to be measured, if any.
func (r *ladderRun) hostRung() *report.LadderRung {
	for i := range r.rungs {
		if r.rungs[i].Class == HostNetworkClass && r.rungs[i].Skipped == "" {
			return &r.rungs[i]
		}
	}
	return nil
}

// hostClientSpec is the host-network rung's client: in its node's network, measuring against
// the host-network server with the agent-to-agent probes only (the app and its Service are
// not reached from there the way a pod reaches them).
func (r *ladderRun) hostClientSpec(rung *report.LadderRung, round, i int) session.AgentSpec {
	job := r.job
	job.Host, job.Port, job.Probes = r.hostHost, r.hostSrv.Port, r.hostProbes
	return session.AgentSpec{Role: session.RoleClient, Target: r.dst, Job: &job, Lifetime: r.perRung, Suffix: strconv.Itoa(i+1) + "-" + strconv.Itoa(round),
		Placement: &session.Placement{Node: rung.Node, Tolerations: r.tolerationsOn(rung.Node), HostNetwork: true}}
}

// controlPlaneTaints are the keys of the taints that keep workloads off control-plane nodes.
var controlPlaneTaints = []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}

// clientTolerations are the tolerations of clients on nodes other than DST's: DST's pod's
// (clients go where the destination may), except that none tolerates a control-plane taint, so
// that no client lands on a control-plane node because DST tolerates it (a DaemonSet's pod
// often tolerates every taint). A toleration of every key becomes one toleration for each other
// taint the nodes carry that it tolerates.
func clientTolerations(tol []corev1.Toleration, nodes []placement.Node) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range tol {
		switch {
		case slices.Contains(controlPlaneTaints, t.Key):
		case t.Key == "":
			out = append(out, taintsTolerated(t, nodes)...)
		default:
			out = append(out, t)
		}
	}
	return out
}

// taintsTolerated turns a toleration of every key into one toleration per key and effect of
// the nodes' taints it tolerates, control-plane taints left out.
func taintsTolerated(t corev1.Toleration, nodes []placement.Node) []corev1.Toleration {
	seen := map[[2]string]bool{}
	var out []corev1.Toleration
	for _, n := range nodes {
		for _, taint := range n.Taints {
			k := [2]string{taint.Key, string(taint.Effect)}
			if seen[k] || slices.Contains(controlPlaneTaints, taint.Key) || !t.ToleratesTaint(klog.Background(), &taint, true) {
				continue
			}
			seen[k] = true
			out = append(out, corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: taint.Effect, TolerationSeconds: t.TolerationSeconds})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key+string(out[i].Effect) < out[j].Key+string(out[j].Effect) })
	return out
}

// tolerationsOn are the tolerations of a client on node: DST's own on DST's node (DST runs
// there), the clients' elsewhere.
func (r *ladderRun) tolerationsOn(node string) []corev1.Toleration {
	if node == r.dst.Pod.Spec.NodeName {
		return append(slices.Clone(r.dst.Pod.Spec.Tolerations), r.o.Tolerations...)
	}
	return slices.Clone(r.clientTol)
}
