package ladder

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/wayin"
)

// makeCopies creates one copy of the Service per policy: NodePort, or LoadBalancer (lbCopy).
func (r *entryRun) makeCopies(ctx context.Context) error {
	typ := corev1.ServiceTypeNodePort
	if r.o.Via == ViaLoadBalancer {
		typ = corev1.ServiceTypeLoadBalancer
	}
	for _, pol := range entryPolicies {
		temp := r.sr.copyOf("netbench-"+r.sess.RunID+"-"+strings.ToLower(string(pol)), typ)
		temp.Spec.ExternalTrafficPolicy = pol
		if typ == corev1.ServiceTypeLoadBalancer {
			wayin.LoadBalancerCopy(temp, r.sr.svc) // it takes them all: Plan refused any other
		}
		c, err := r.sess.CreateService(ctx, temp, r.life)
		if err != nil {
			return err
		}
		r.copies = append(r.copies, c)
		r.rep.Copies = append(r.rep.Copies, report.EntryCopy{Name: c.Name, ExternalTrafficPolicy: string(pol), NodePort: int(c.Spec.Ports[0].NodePort)})
	}
	return nil
}

// waitWaysIn waits, up to --start-timeout per node, until each node's port of the Cluster
// copy (or each copy's load balancer address) answers one connection (its dataplane has
// programmed the copies); a way in that does not is measured all the same, and said.
func (r *entryRun) waitWaysIn(ctx context.Context) {
	for _, n := range r.nodes {
		if r.o.Via == ViaLoadBalancer {
			r.waitAnswer(ctx, r.address(n, 0), "the Cluster copy's load balancer address")
			r.waitAnswer(ctx, r.address(n, 1), "the Local copy's load balancer address (its health checks passed)")
			continue
		}
		r.waitAnswer(ctx, r.address(n, 0), "node "+n.name+"'s port of the Cluster copy")
	}
}

// waitAnswer waits up to --start-timeout until addr answers one connection, and says it if not.
func (r *entryRun) waitAnswer(ctx context.Context, addr, what string) {
	if _, err := wayin.WaitAnswer(ctx, addr, r.sess.Token, r.o.StartTimeout); err != nil && ctx.Err() == nil {
		r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("%s (%s) did not answer within --start-timeout %s before measuring", what, addr, r.o.StartTimeout))
	}
}

// label names an entry node in messages: "node NAME", or "the load balancer".
func (n entryNode) label() string {
	if n.name == "" {
		return "the load balancer"
	}
	return "node " + n.name
}

// waitLoadBalancers waits, up to --start-timeout, for each LoadBalancer copy's address of the
// family (a host name, as some clouds give, looked up here), and reports it.
func (r *entryRun) waitLoadBalancers(ctx context.Context) error {
	if r.o.Via != ViaLoadBalancer {
		return nil
	}
	for k, c := range r.copies {
		addrs, err, last := wayin.WaitAddresses(ctx, r.o.Client, c.Namespace, c.Name, r.family, r.o.StartTimeout)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return wayin.NoAddress(c.Namespace, c.Name, r.family, r.o.StartTimeout, last)
		}
		r.lbAddr = append(r.lbAddr, addrs[0].String())
		r.rep.Copies[k].LoadBalancer = r.address(entryNode{}, k)
		if len(addrs) > 1 {
			r.rep.Warnings = append(r.rep.Warnings, wayin.ManyAddresses(c.Name, r.family, addrs))
		}
	}
	return nil
}
