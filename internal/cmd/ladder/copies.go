package ladder

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
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
			lbCopy(temp, r.sr.svc)
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

// waitNodePorts waits, up to --start-timeout per node, until each node's port of the Cluster
// copy (or each copy's load balancer address) answers one connection (its dataplane has
// programmed the copies); a way in that does not is measured all the same, and said.
func (r *entryRun) waitNodePorts(ctx context.Context) {
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

// lbKept are the words a copy's annotation key must hold to be kept (lbCopy); lbDropped those
// that leave it out all the same: a name, an address or an allocation pinned to the original's
// load balancer, which a second one cannot have, and a DNS name pointed at whatever holds it.
var (
	lbKept    = []string{"load-balancer", "loadbalancer"}
	lbDropped = []string{"external-dns", "-name", "eip-allocation", "ipv4-address", "ipv6-address", "ip-address", "static-ip", "loadbalancer-ip", "load-balancer-ip"}
)

// lbCopy makes the LoadBalancer copy temp a load balancer of orig's kind: its
// loadBalancerClass, its loadBalancerSourceRanges (the copy open to no more sources than the
// original) and its annotations that configure the load balancer (a cloud's internal or
// external scheme, its type), but none that pin a name or an address (lbDropped).
func lbCopy(temp, orig *corev1.Service) {
	temp.Spec.LoadBalancerClass = orig.Spec.LoadBalancerClass
	temp.Spec.LoadBalancerSourceRanges = orig.Spec.LoadBalancerSourceRanges
	for k, v := range orig.Annotations {
		lk := strings.ToLower(k)
		if !containsAny(lk, lbKept) || containsAny(lk, lbDropped) {
			continue
		}
		if temp.Annotations == nil {
			temp.Annotations = map[string]string{}
		}
		temp.Annotations[k] = v
	}
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// waitLoadBalancers waits, up to --start-timeout, for each LoadBalancer copy's address of the
// family (a host name, as some clouds give, looked up here), and reports it.
func (r *entryRun) waitLoadBalancers(ctx context.Context) error {
	if r.o.Via != ViaLoadBalancer {
		return nil
	}
	for k, c := range r.copies {
		var addr string
		err := wait.PollUntilContextTimeout(ctx, time.Second, r.o.StartTimeout, true, func(ctx context.Context) (bool, error) {
			got, err := r.o.Client.CoreV1().Services(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			addr = lbAddress(ctx, got.Status.LoadBalancer.Ingress, r.family)
			return addr != "", nil
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("the temporary LoadBalancer copy %s/%s got no IPv%s address within --start-timeout %s: does a load balancer controller serve this cluster's Services of type LoadBalancer (a cloud's can take minutes: raise --start-timeout)?", c.Namespace, c.Name, r.family, r.o.StartTimeout)
		}
		r.lbAddr = append(r.lbAddr, addr)
		r.rep.Copies[k].LoadBalancer = r.address(entryNode{}, k)
	}
	return nil
}

// lbAddress is the first ingress address of family ("4" or "6"): an IP, or a host name's
// address of that family ("" if none yet).
func lbAddress(ctx context.Context, ingress []corev1.LoadBalancerIngress, family string) string {
	network := "ip" + family
	for _, in := range ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && a.Unmap().Is4() == (family == "4") {
			return a.Unmap().String()
		}
		if in.Hostname == "" {
			continue
		}
		if addrs, err := net.DefaultResolver.LookupNetIP(ctx, network, in.Hostname); err == nil && len(addrs) > 0 {
			return addrs[0].Unmap().String()
		}
	}
	return ""
}
