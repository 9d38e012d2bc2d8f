package dns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
)

// ErrDNSBlocked: a NetworkPolicy stops the pod's DNS queries, so every lookup would time out.
var ErrDNSBlocked = errors.New("a NetworkPolicy blocks the pod's DNS")

// checkDNSPolicy says, before anything starts, whether the policies of the pod's namespace let
// its queries out to the cluster DNS (UDP port 53 to at least one replica, or to the Service's
// address when the replicas are unknown). Without permission to list them it says nothing.
func (o *DNSOptions) checkDNSPolicy(ctx context.Context, t *session.Target, s *report.DNSService, reps []probes.DNSReplica) error {
	if s.ClusterIP == "" {
		return nil // the pod does not ask the cluster DNS, or it cannot be read
	}
	sc := o.ReadPolicies(ctx, t.Namespace)
	if sc.Skipped != "" {
		return nil
	}
	dnsNS := map[string]string{corev1.LabelMetadataName: s.Namespace}
	if n, err := o.Client.CoreV1().Namespaces().Get(ctx, s.Namespace, metav1.GetOptions{}); err == nil {
		dnsNS = n.Labels
	}
	var blockers []string
	for _, to := range o.dnsEndpoints(ctx, s, reps, dnsNS) {
		v := netpolicy.Check(sc.Policies, netpolicy.Flow{From: sc.EndpointOf(t.Pod, to.IP), To: to, Protocol: corev1.ProtocolUDP, Port: 53})
		if v.Egress.Allowed {
			return nil
		}
		blockers = v.Egress.Selecting
	}
	if len(blockers) == 0 {
		return nil
	}
	return fmt.Errorf("NetworkPolicy %s selects %s/%s and allows no DNS egress (UDP port 53) to the cluster DNS %s/%s (%s): every lookup would time out; nothing was started (allow egress to it on port 53, UDP and TCP): %w",
		strings.Join(text.Unique(blockers), ", "), t.Namespace, t.Pod.Name, s.Namespace, s.Name, s.ClusterIP, ErrDNSBlocked)
}

// dnsEndpoints are the DNS replicas as policies see them (pods with their labels), or the
// Service's address when no replica can be read.
func (o *DNSOptions) dnsEndpoints(ctx context.Context, s *report.DNSService, reps []probes.DNSReplica, nsLabels map[string]string) []netpolicy.Endpoint {
	var out []netpolicy.Endpoint
	for _, r := range reps {
		ip, _ := netip.ParseAddr(r.Address)
		e := netpolicy.Endpoint{IP: ip}
		if p, err := o.Client.CoreV1().Pods(s.Namespace).Get(ctx, r.Pod, metav1.GetOptions{}); err == nil {
			e.Pod, e.NamespaceLabels = p, nsLabels
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		ip, _ := netip.ParseAddr(s.ClusterIP)
		out = append(out, netpolicy.Endpoint{IP: ip})
	}
	return out
}
