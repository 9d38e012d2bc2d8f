package path

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/wayin"
)

// makeService creates the temporary Service in front of DST's agent (NodePort or LoadBalancer,
// no selector: its one endpoint is the agent, on the agent's port for TCP and UDP alike) and
// that endpoint.
func (r *wayInRun) makeService(ctx context.Context) error {
	created, err := r.sess.CreateService(ctx, r.serviceSpec(), r.lifetime())
	if err != nil {
		return err
	}
	r.svc, r.port = created, r.srv.Port
	// Both ports before the endpoint: a dataplane that programs a Service with its endpoints
	// (kube-proxy) then programs TCP and UDP at once, and the first answer through TCP says UDP
	// is programmed too.
	if r.o.Via == ViaNodePort && !r.sess.DryRun {
		if err := r.sameNodePortForUDP(ctx); err != nil {
			return err
		}
		r.port = int(r.svc.Spec.Ports[0].NodePort)
	}
	if err := r.sess.CreateEndpointSlice(ctx, r.svc, r.sliceSpec(created.Name)); err != nil {
		return err
	}
	r.rep.WayIn = &report.WayIn{Via: r.o.Via, Service: created.Namespace + "/" + created.Name, ExternalTrafficPolicy: r.o.ExternalTrafficPolicy, EntryNode: r.entry}
	return nil
}

// serviceSpec is the temporary Service: with --via loadbalancer, a load balancer of DST's
// Service's kind (wayin.LoadBalancerCopy), reached as that one is.
func (r *wayInRun) serviceSpec() *corev1.Service {
	port := int32(r.srv.Port)
	fam, single := corev1.IPv4Protocol, corev1.IPFamilyPolicySingleStack
	if r.family == "6" {
		fam = corev1.IPv6Protocol
	}
	// Owned by DST's pod: should the run be killed, the Service and its endpoint go with the pod,
	// and never forward to a pod that takes its address later.
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: r.dst.Pod.Name, UID: r.dst.Pod.UID}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "netbench-" + r.sess.RunID + "-way-in", Namespace: r.dst.Namespace, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicy(r.o.ExternalTrafficPolicy),
			IPFamilies: []corev1.IPFamily{fam}, IPFamilyPolicy: &single,
			Ports: []corev1.ServicePort{{Name: "agent", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port)}}}}
	// A NodePort's UDP port takes the TCP port's number once it has one (sameNodePortForUDP).
	if r.o.Via == ViaLoadBalancer || r.sess.DryRun {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "agent-udp", Protocol: corev1.ProtocolUDP, Port: port, TargetPort: intstr.FromInt32(port)})
	}
	if r.o.Via != ViaLoadBalancer {
		return svc
	}
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	wayin.LoadBalancerCopy(svc, r.orig) // it takes them all: readLoadBalancer refused any other
	return svc
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
		return fmt.Errorf("giving the temporary Service %s/%s its UDP port on node port %d: %w", svc.Namespace, svc.Name, tcp.NodePort, access.ForbiddenOr(err))
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
	if err := grpcProxied(r.o.wayInProbes(), r.host); err != nil {
		return err
	}
	addr := net.JoinHostPort(r.host, strconv.Itoa(r.port))
	r.rep.WayIn.Address = addr
	r.o.Progress("waiting for %s to answer", addr)
	last, err := wayin.WaitAnswer(ctx, addr, r.sess.Token, r.o.StartTimeout)
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
	slices.Sort(kinds)
	return " (last: " + strings.Join(kinds, ", ") + ")"
}

// seen records the addresses of the first answer: this machine's and the one the pod saw.
func (r *wayInRun) seen(c probes.EntryConn) {
	w := r.rep.WayIn
	w.Client, w.Seen = c.Local, c.Peer
	w.SeenIs, w.SeenNode, _ = report.SeenAs(c, r.nodeOf)
	w.SNAT = w.SeenIs != report.SourceClient
	switch w.SeenIs {
	case report.SourceClient:
		r.rep.Path.Reason += fmt.Sprintf("; the pod saw this machine's own address %s (no SNAT)", c.Peer)
	case report.SourceNode:
		r.rep.Path.Reason += fmt.Sprintf("; the pod saw node %s's address %s (SNAT on that node)", w.SeenNode, c.Peer)
	default:
		r.rep.Path.Reason += fmt.Sprintf("; the pod saw %s, neither this machine's address (%s) nor one the nodes list (a NAT or proxy on the way, or a node's tunnel address)", c.Peer, c.Local)
	}
}

// waitLoadBalancer waits up to --start-timeout for the Service's load balancer address of the
// family (a host name is looked up here).
func (r *wayInRun) waitLoadBalancer(ctx context.Context) error {
	addrs, err, last := wayin.WaitAddresses(ctx, r.o.Client, r.svc.Namespace, r.svc.Name, r.family, r.o.StartTimeout)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return wayin.NoAddress(r.svc.Namespace, r.svc.Name, r.family, r.o.StartTimeout, last)
	case len(addrs) > 1:
		r.rep.Warnings = append(r.rep.Warnings, wayin.ManyAddresses(r.svc.Name, r.family, addrs))
	}
	r.host = addrs[0].String()
	return nil
}
