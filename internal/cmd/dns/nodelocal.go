package dns

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// NodeLocalDNSLabel selects NodeLocal DNSCache's pods, as its upstream manifest labels them.
const NodeLocalDNSLabel = "k8s-app=node-local-dns"

// nodeLocalCachePod finds the node-local DNS cache's running pod on node, in the namespace of the
// cluster DNS Service. It returns "" when there is none, and an error when it may not look.
func (o *DNSOptions) nodeLocalCachePod(ctx context.Context, namespace, node string) (string, error) {
	pods, err := o.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: NodeLocalDNSLabel,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return "", fmt.Errorf("listing pods %s in %s: %w", NodeLocalDNSLabel, namespace, access.ForbiddenOr(err))
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p.Name, nil
		}
	}
	return "", nil
}

// nodeLocalView says whether a node-local cache answers the pod's queries: its nameserver is
// link-local (the cache's own address), or the node runs the cache, which then answers the
// Service's ClusterIP on the node (NodeLocal DNSCache's iptables mode). cachePod and lookErr
// are what nodeLocalCachePod found before the run.
func nodeLocalView(s *report.DNSService, nameserver, cachePod string, lookErr error) *report.NodeLocalDNS {
	n := &report.NodeLocalDNS{Pod: cachePod, Address: nameserver}
	addr, err := netip.ParseAddr(nameserver)
	switch {
	case err == nil && addr.IsLinkLocalUnicast():
		n.State = report.NodeLocalInUse
		n.Basis = fmt.Sprintf("the pod's nameserver %s is link-local: a cache on its node", nameserver)
	case nameserver != s.ClusterIP:
		n.State = report.NodeLocalUnknown
		n.Basis = fmt.Sprintf("the pod's nameserver %s is neither link-local nor the Service's ClusterIP %s", nameserver, s.ClusterIP)
	case cachePod != "":
		n.State = report.NodeLocalInUse
		n.Basis = fmt.Sprintf("its node runs %s/%s (%s), which answers the Service's ClusterIP %s on the node (NodeLocal DNSCache's iptables mode)", s.Namespace, cachePod, NodeLocalDNSLabel, s.ClusterIP)
	case lookErr != nil:
		n.State = report.NodeLocalUnknown
		n.Basis = "the pod asks the Service's ClusterIP; whether a cache on its node intercepts it is unknown: " + lookErr.Error()
	default:
		n.State = report.NodeLocalNotInUse
		n.Basis = fmt.Sprintf("the pod asks the Service's ClusterIP %s and its node runs no %s pod", s.ClusterIP, NodeLocalDNSLabel)
	}
	return n
}

// nodeLocalWhatIf fills in, for a pod without a node-local cache, what answering on its node
// would change: a replica on the pod's node asked directly against the Service (or, without
// one, the fastest replica in the pod's zone).
func nodeLocalWhatIf(n *report.NodeLocalDNS, s *report.DNSService, node string, v *probes.DNSReplicaView) {
	if n.State != report.NodeLocalNotInUse || v == nil || v.Nameserver.Latency.Count == 0 {
		return
	}
	n.ServiceP50Micros = v.Nameserver.Latency.P50Micros
	var best *probes.DNSReplicaLatency
	for i, r := range v.Replicas {
		if r.Latency.Count == 0 {
			continue
		}
		if r.Node == node {
			best, n.SameNode = &v.Replicas[i], true
			break
		}
		if r.Zone != "" && r.Zone == s.PodZone && (best == nil || r.Latency.P50Micros < best.Latency.P50Micros) {
			best = &v.Replicas[i]
		}
	}
	if best != nil {
		n.NearestReplica, n.NearestP50Micros = best.Pod, best.Latency.P50Micros
	}
}
