package ladder

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
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
			if left := wayin.LoadBalancerCopy(temp, r.sr.svc); len(left) > 0 && pol == entryPolicies[0] {
				r.rep.Warnings = append(r.rep.Warnings, "annotations of the Service not given to its load balancer copies (they may name, reuse or pin the original's load balancer): "+strings.Join(left, ", "))
			}
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
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, r.o.StartTimeout, true, func(ctx context.Context) (bool, error) {
		res, err := probes.Enter(ctx, probes.EntrySpec{Address: addr, Path: agent.PathWhoAmI, Token: r.sess.Token, Connections: 1})
		return err == nil && len(res.Answered) == 1, nil
	})
	if err != nil && ctx.Err() == nil {
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
		var addrs []netip.Addr
		var last error
		err := wait.PollUntilContextTimeout(ctx, time.Second, r.o.StartTimeout, true, func(ctx context.Context) (bool, error) {
			got, err := r.o.Client.CoreV1().Services(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			addrs, last = wayin.LoadBalancerAddresses(ctx, got.Status.LoadBalancer.Ingress, r.family)
			return len(addrs) > 0, nil
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return r.noAddress(c, last)
		}
		r.lbAddr = append(r.lbAddr, addrs[0].String())
		r.rep.Copies[k].LoadBalancer = r.address(entryNode{}, k)
		if len(addrs) > 1 {
			r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("the load balancer of %s has %d IPv%s addresses (%v): entered by %s alone (a load balancer with an address per zone and no cross-zone balancing reaches only that zone's nodes)", c.Name, len(addrs), r.family, addrs, addrs[0]))
		}
	}
	return nil
}

// noAddress is the error of a copy that got no address in time, with the last error on the way.
func (r *entryRun) noAddress(c *corev1.Service, last error) error {
	msg := fmt.Sprintf("the temporary LoadBalancer copy %s/%s got no IPv%s address within --start-timeout %s: does a load balancer controller serve this cluster's Services of type LoadBalancer (a cloud's can take minutes: raise --start-timeout)?", c.Namespace, c.Name, r.family, r.o.StartTimeout)
	if last != nil {
		return fmt.Errorf("%s (last: %w)", msg, last)
	}
	return errors.New(msg)
}
