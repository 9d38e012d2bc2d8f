package plugin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/placement"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/report"
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
	a, err := r.sess.Start(ctx, AgentSpec{Role: RoleServer, Suffix: "host", Target: r.dst, Serve: true, Lifetime: r.lifetime,
		Placement: &Placement{Node: r.dst.Pod.Spec.NodeName, Tolerations: clientTolerations(r.dst.Pod), HostNetwork: true}})
	if errors.Is(err, ErrPodSecurity) {
		rung.Skipped = fmt.Sprintf("namespace %s's Pod Security level forbids hostNetwork pods (%v); run the ladder in a namespace that allows them (privileged)", r.dst.Namespace, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting the host-network server agent: %w", err)
	}
	if err := a.Wait(ctx); err != nil {
		return err
	}
	if err := a.Ready(ctx); err != nil {
		return err
	}
	r.hostSrv = a
	r.timer.phase("start-host-server")
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
func (r *ladderRun) hostClientSpec(rung *report.LadderRung, round, i int) AgentSpec {
	job := r.job
	job.Host, job.Port, job.Probes = r.hostSrv.IP, r.hostSrv.Port, r.hostProbes
	return AgentSpec{Role: RoleClient, Target: r.dst, Job: &job, Lifetime: r.perRung, Suffix: strconv.Itoa(i+1) + "-" + strconv.Itoa(round),
		Placement: &Placement{Node: rung.Node, Tolerations: clientTolerations(r.dst.Pod), HostNetwork: true}}
}

// clientTolerations are DST's pod's: clients go where the destination may.
func clientTolerations(p *corev1.Pod) []corev1.Toleration {
	return append([]corev1.Toleration(nil), p.Spec.Tolerations...)
}
