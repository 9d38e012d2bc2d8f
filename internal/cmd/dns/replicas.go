package dns

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// DefaultDNSService is where a cluster's DNS Service usually is.
const DefaultDNSService = "kube-system/kube-dns"

// nameserverService reads the Service behind the pod's cluster DNS, its ready replicas and their
// zones. What cannot be read (RBAC, no such Service, a pod that does not use cluster DNS) becomes
// the view's Skipped reason, never an error: the rest of the report stands without it.
func (o *DNSOptions) nameserverService(ctx context.Context, t *session.Target) (*report.DNSService, []probes.DNSReplica) {
	ns, name, _ := strings.Cut(o.DNSService, "/")
	s := &report.DNSService{Namespace: ns, Name: name, CrossZoneShare: -1}
	if p := t.Pod.Spec.DNSPolicy; p == corev1.DNSDefault || (t.Pod.Spec.HostNetwork && p != corev1.DNSClusterFirstWithHostNet) {
		s.Skipped = fmt.Sprintf("skipped: the pod (dnsPolicy %s, hostNetwork %t) does not query the cluster DNS Service", p, t.Pod.Spec.HostNetwork)
		return s, nil
	}
	svc, err := o.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		s.Skipped = fmt.Sprintf("skipped: reading Service %s: %v (--dns-service names another)", o.DNSService, access.ForbiddenOr(err))
		return s, nil
	}
	s.ClusterIP = svc.Spec.ClusterIP
	if t.Pod.Spec.DNSPolicy == corev1.DNSNone {
		ip, ok := askedClusterIP(t.Pod.Spec.DNSConfig, svc)
		if !ok {
			s.Skipped = fmt.Sprintf("skipped: the pod (dnsPolicy None) names its own nameservers, neither the Service's ClusterIP %s nor a node-local cache's link-local address", strings.Join(clusterIPs(svc), " or "))
			return s, nil
		}
		s.ClusterIP = ip
	}
	if td := svc.Spec.TrafficDistribution; td != nil {
		s.TrafficDistribution = *td
	}
	// The replicas at their addresses of the family the pod asks the Service in (a dual-stack
	// Service has an EndpointSlice of each).
	eps, err := cmdutil.ReadyEndpointsOf(ctx, o.Client, ns, name, addressType(s.ClusterIP))
	if err != nil {
		s.Skipped = "skipped: " + err.Error()
		return s, nil
	}
	s.PodZone = o.nodeZone(ctx, t.Pod.Spec.NodeName)
	var reps []probes.DNSReplica
	for _, e := range eps {
		if e.Addr == "" || len(reps) == probes.MaxDNSReplicas {
			continue
		}
		reps = append(reps, probes.DNSReplica{Address: e.Addr, Pod: e.Pod, Node: e.Node, Zone: e.Zone})
		if e.Zone != "" && e.Zone == s.PodZone {
			s.SameZoneReplicas++
		}
	}
	s.ReadyReplicas = len(reps)
	s.CrossZoneShare, s.ShareBasis = crossZoneShare(s, reps)
	return s, reps
}

// askedClusterIP says whether a pod with dnsPolicy None still asks the cluster DNS first, and
// at which of the Service's ClusterIPs: its first nameserver is one of them (either family of
// a dual-stack Service), or link-local (a node-local cache's address, which stands for the
// primary).
func askedClusterIP(c *corev1.PodDNSConfig, svc *corev1.Service) (string, bool) {
	if c == nil || len(c.Nameservers) == 0 {
		return "", false
	}
	a, err := netip.ParseAddr(c.Nameservers[0])
	if err != nil {
		return "", false
	}
	for _, ip := range clusterIPs(svc) {
		if b, err := netip.ParseAddr(ip); err == nil && a.Unmap() == b.Unmap() {
			return ip, true
		}
	}
	return svc.Spec.ClusterIP, a.IsLinkLocalUnicast()
}

// clusterIPs are a Service's ClusterIPs, primary first.
func clusterIPs(svc *corev1.Service) []string {
	if len(svc.Spec.ClusterIPs) > 0 {
		return svc.Spec.ClusterIPs
	}
	return []string{svc.Spec.ClusterIP}
}

// addressType is the EndpointSlice address type of ip's family ("" when it is no address).
func addressType(ip string) discoveryv1.AddressType {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return ""
	case a.Unmap().Is4():
		return discoveryv1.AddressTypeIPv4
	}
	return discoveryv1.AddressTypeIPv6
}

// nodeZone is the node's zone label ("" when it has none or cannot be read).
func (o *DNSOptions) nodeZone(ctx context.Context, node string) string {
	n, err := o.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return n.Labels[corev1.LabelTopologyZone]
}

// crossZoneShare is the share of the pod's queries through the Service that reach a replica in
// another zone, from the replicas' zones and the Service's traffic distribution, and why.
func crossZoneShare(s *report.DNSService, reps []probes.DNSReplica) (float64, string) {
	if len(reps) == 0 {
		return -1, "the Service has no ready replica"
	}
	if s.PodZone == "" {
		return -1, "the pod's zone is unknown (its node has no " + corev1.LabelTopologyZone + " label, or reading the node was not allowed)"
	}
	other := 0
	for _, r := range reps {
		if r.Zone == "" {
			return -1, "replica " + r.Pod + " has no zone in the Service's EndpointSlice"
		}
		if r.Zone != s.PodZone {
			other++
		}
	}
	zoneLocal := s.TrafficDistribution == "PreferClose" || s.TrafficDistribution == "PreferSameZone" || s.TrafficDistribution == "PreferSameNode"
	zoneLocal = zoneLocal && !fault.On(fault.ZoneHintsIgnored)
	switch {
	case other == 0:
		return 0, fmt.Sprintf("every ready replica is in %s", s.PodZone)
	case zoneLocal && s.SameZoneReplicas > 0:
		return 0, fmt.Sprintf("trafficDistribution %s keeps them in %s, where %d of the %d ready replicas are", s.TrafficDistribution, s.PodZone, s.SameZoneReplicas, len(reps))
	case zoneLocal:
		return 1, fmt.Sprintf("trafficDistribution %s finds no ready replica in %s", s.TrafficDistribution, s.PodZone)
	default:
		return float64(other) / float64(len(reps)), fmt.Sprintf("without a traffic distribution the Service spreads them evenly over its %d ready replicas, %d of them in other zones", len(reps), other)
	}
}

// finishNameserverView checks the view against what the agent found (the pod's nameserver may be
// a node-local cache rather than the Service) and projects --lookups-per-second.
func (o *DNSOptions) finishNameserverView(ctx context.Context, s *report.DNSService, t *session.Target, res *probes.DNSResult) {
	if s == nil || s.Skipped != "" || res == nil || len(res.Config.Nameservers) == 0 {
		return
	}
	cachePod, lookErr := o.nodeLocalCachePod(ctx, s.Namespace, t.Pod.Spec.NodeName)
	s.NodeLocalCache = nodeLocalView(s, res.Config.Nameservers[0], cachePod, lookErr)
	nodeLocalWhatIf(s.NodeLocalCache, s, t.Pod.Spec.NodeName, res.ReplicaView)
	switch s.NodeLocalCache.State {
	case report.NodeLocalInUse:
		s.CrossZoneShare = -1
		s.ShareBasis = "a node-local cache answers the pod's queries: they reach the replicas only on its misses"
		return
	case report.NodeLocalUnknown:
		if ns := res.Config.Nameservers[0]; ns != s.ClusterIP {
			s.CrossZoneShare = -1
			s.ShareBasis = fmt.Sprintf("the pod's nameserver %s is not the Service's ClusterIP %s", ns, s.ClusterIP)
			return
		}
	}
	if o.LookupsPerSecond > 0 && s.CrossZoneShare >= 0 && len(res.Names) > 0 && len(res.Names[0].Variants) > 0 {
		s.LookupsPerSecond = o.LookupsPerSecond
		s.CrossZoneQueriesPerSecond = o.LookupsPerSecond * float64(res.Names[0].Variants[0].Queries) * s.CrossZoneShare
	}
}
