package path

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/wayin"
)

// makeService creates the temporary Service in front of DST's agent (NodePort or LoadBalancer,
// no selector: its one endpoint is the agent, on the agent's port for TCP and UDP alike) and
// that endpoint.
func (r *wayInRun) makeService(ctx context.Context) error {
	svc, err := r.serviceSpec(ctx)
	if err != nil {
		return err
	}
	created, err := r.sess.CreateService(ctx, svc, r.lifetime())
	if err != nil {
		return err
	}
	if err := r.sess.CreateEndpointSlice(ctx, created, r.sliceSpec(created.Name)); err != nil {
		return err
	}
	r.svc, r.port = created, r.srv.Port
	if r.o.Via == ViaNodePort && !r.sess.DryRun {
		if err := r.sameNodePortForUDP(ctx); err != nil {
			return err
		}
		r.port = int(r.svc.Spec.Ports[0].NodePort)
	}
	r.rep.WayIn = &report.WayIn{Via: r.o.Via, Service: created.Namespace + "/" + created.Name, ExternalTrafficPolicy: r.o.ExternalTrafficPolicy, EntryNode: r.entry}
	return nil
}

// serviceSpec is the temporary Service: with --via loadbalancer and DST a Service, a load
// balancer of that Service's kind (wayin.LoadBalancerCopy).
func (r *wayInRun) serviceSpec(ctx context.Context) (*corev1.Service, error) {
	port := int32(r.srv.Port)
	fam, single := corev1.IPv4Protocol, corev1.IPFamilyPolicySingleStack
	if r.family == "6" {
		fam = corev1.IPv6Protocol
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "netbench-" + r.sess.RunID + "-way-in", Namespace: r.dst.Namespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicy(r.o.ExternalTrafficPolicy),
			IPFamilies: []corev1.IPFamily{fam}, IPFamilyPolicy: &single,
			Ports: []corev1.ServicePort{{Name: "agent", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port)}}}}
	// A NodePort's UDP port takes the TCP port's number once it has one (sameNodePortForUDP).
	if r.o.Via == ViaLoadBalancer || r.sess.DryRun {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "agent-udp", Protocol: corev1.ProtocolUDP, Port: port, TargetPort: intstr.FromInt32(port)})
	}
	if r.o.Via != ViaLoadBalancer {
		return svc, nil
	}
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	ns, name, ok := serviceArg(r.o.DstArg, r.dst.Namespace)
	if !ok {
		return svc, nil
	}
	orig, err := r.o.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Service %s/%s, whose load balancer's kind the temporary one takes: %w", ns, name, err)
	}
	if left := wayin.LoadBalancerCopy(svc, orig); len(left) > 0 {
		r.rep.Warnings = append(r.rep.Warnings, "annotations of the Service not given to the temporary load balancer (they may name, reuse or pin the original's): "+strings.Join(left, ", "))
	}
	return svc, nil
}

// serviceArg is DST's Service when DST names one (svc/NAME or NAMESPACE/svc/NAME).
func serviceArg(arg, ns string) (string, string, bool) {
	parts := strings.Split(arg, "/")
	isSvc := func(t string) bool { return t == "svc" || t == "service" || t == "services" }
	switch {
	case len(parts) == 2 && isSvc(strings.ToLower(parts[0])):
		return ns, parts[1], true
	case len(parts) == 3 && isSvc(strings.ToLower(parts[1])):
		return parts[0], parts[2], true
	}
	return "", "", false
}

// sliceSpec is the Service's one endpoint: DST's pod, at the agent's port for TCP and UDP.
func (r *wayInRun) sliceSpec(name string) *discoveryv1.EndpointSlice {
	port, ready, node := int32(r.srv.Port), true, r.dst.Pod.Spec.NodeName
	tcp, udp, tcpName, udpName := corev1.ProtocolTCP, corev1.ProtocolUDP, "agent", "agent-udp"
	addrType := discoveryv1.AddressTypeIPv4
	if r.family == "6" {
		addrType = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: addrType,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{r.podIP}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:     []discoveryv1.EndpointPort{{Name: &tcpName, Protocol: &tcp, Port: &port}, {Name: &udpName, Protocol: &udp, Port: &port}}}
}

// sameNodePortForUDP adds the NodePort Service's UDP port on the node port its TCP port got:
// the client reaches the agent by one port for both.
func (r *wayInRun) sameNodePortForUDP(ctx context.Context) error {
	svc := r.svc.DeepCopy()
	tcp := svc.Spec.Ports[0]
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "agent-udp", Protocol: corev1.ProtocolUDP, Port: tcp.Port, TargetPort: tcp.TargetPort, NodePort: tcp.NodePort})
	updated, err := r.o.Client.CoreV1().Services(svc.Namespace).Update(ctx, svc, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("giving the temporary Service %s/%s its UDP port on node port %d: %w", svc.Namespace, svc.Name, tcp.NodePort, err)
	}
	r.svc = updated
	return nil
}

// waitWayIn waits, up to --start-timeout each, for the load balancer's address (--via
// loadbalancer) and for the way in's first answer, and says whose address the pod saw.
func (r *wayInRun) waitWayIn(ctx context.Context) error {
	if r.o.Via == ViaLoadBalancer {
		if err := r.waitLoadBalancer(ctx); err != nil {
			return err
		}
	}
	addr := net.JoinHostPort(r.host, strconv.Itoa(r.port))
	r.rep.WayIn.Address = addr
	r.o.Progress("waiting for %s to answer", addr)
	var last *probes.EntryResult
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, r.o.StartTimeout, true, func(ctx context.Context) (bool, error) {
		res, err := probes.Enter(ctx, probes.EntrySpec{Address: addr, Path: agent.PathWhoAmI, Token: r.sess.Token, Connections: 1})
		if err == nil {
			last = res
		}
		return err == nil && len(res.Answered) == 1, nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("the way in %s (%s) did not answer within --start-timeout %s%s: a firewall between this machine and the cluster, or a NetworkPolicy of %s/%s that admits no one from outside",
			addr, r.rep.Path.Reason, r.o.StartTimeout, entryErrors(last), r.dst.Namespace, r.dst.Pod.Name)
	}
	r.seen(last.Answered[0])
	return nil
}

// entryErrors says how the last try failed, when it said.
func entryErrors(res *probes.EntryResult) string {
	if res == nil || len(res.ErrorsByKind) == 0 {
		return ""
	}
	var kinds []string
	for k := range res.ErrorsByKind {
		kinds = append(kinds, k)
	}
	return " (last: " + strings.Join(kinds, ", ") + ")"
}

// seen records the addresses of the first answer: this machine's and the one the pod saw.
func (r *wayInRun) seen(c probes.EntryConn) {
	w := r.rep.WayIn
	w.Client, w.Seen = c.Local, c.Peer
	is, node, _ := report.SeenAs(c, r.nodeOf)
	switch is {
	case report.SourceClient:
		w.SeenIs = "client"
		r.rep.Path.Reason += fmt.Sprintf("; the pod saw this machine's own address %s (no SNAT)", c.Peer)
	case report.SourceNode:
		w.SeenIs, w.SNAT = "node "+node, true
		r.rep.Path.Reason += fmt.Sprintf("; the pod saw node %s's address %s (SNAT on that node)", node, c.Peer)
	default:
		w.SeenIs, w.SNAT = "unknown", true
		r.rep.Path.Reason += fmt.Sprintf("; the pod saw %s, neither this machine's address (%s) nor a node's (a NAT or proxy on the way)", c.Peer, c.Local)
	}
}

// waitLoadBalancer waits up to --start-timeout for the Service's load balancer address of the
// family (a host name is looked up here).
func (r *wayInRun) waitLoadBalancer(ctx context.Context) error {
	var addrs []netip.Addr
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, r.o.StartTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := r.o.Client.CoreV1().Services(r.svc.Namespace).Get(ctx, r.svc.Name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		addrs, last = wayin.LoadBalancerAddresses(ctx, got.Status.LoadBalancer.Ingress, r.family)
		return len(addrs) > 0, nil
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && last != nil:
		return fmt.Errorf("the temporary LoadBalancer Service %s/%s got no IPv%s address within --start-timeout %s (does a load balancer controller serve this cluster?): %w", r.svc.Namespace, r.svc.Name, r.family, r.o.StartTimeout, last)
	case err != nil:
		return fmt.Errorf("the temporary LoadBalancer Service %s/%s got no IPv%s address within --start-timeout %s: does a load balancer controller serve this cluster's Services of type LoadBalancer (a cloud's can take minutes: raise --start-timeout)?", r.svc.Namespace, r.svc.Name, r.family, r.o.StartTimeout)
	}
	r.host = addrs[0].String()
	return nil
}
