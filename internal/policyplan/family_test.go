package policyplan

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// On dual-stack pods each probe is judged at the addresses of its family: a policy that admits
// the client's IPv4 range alone blocks the IPv6 twins of --ip-family both (and the plain probes
// of --ip-family 6), one that admits its IPv6 range alone the IPv4 probes.
func TestPlanPathJudgesIPBlocksPerFamily(t *testing.T) {
	client := dualStack(fakecluster.AppPod("client", "10.0.0.4", map[string]string{"app": "client"}), "fd00::4")
	web := dualStack(fakecluster.AppPod("web", "10.0.0.5", map[string]string{"app": "web"}), "fd00::5")
	probes := []agent.ProbeSpec{{Kind: agent.ProbeICMP, Name: "icmp"}, {Kind: agent.ProbeICMP, Name: "icmp-v6"}}
	v4, v6 := netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")
	for _, tc := range []struct {
		name    string
		from    string
		addrs   []netip.Addr
		blocked map[string]bool
	}{
		{"IPv4 range admitted, both families", "10.0.0.0/8", []netip.Addr{v4, v6}, map[string]bool{"icmp-v6": true}},
		{"IPv6 range admitted, both families", "fd00::/64", []netip.Addr{v4, v6}, map[string]bool{"icmp": true}},
		{"IPv4 range admitted, --ip-family 6", "10.0.0.0/8", []netip.Addr{v6}, map[string]bool{"icmp": true, "icmp-v6": true}},
		{"IPv6 range admitted, --ip-family 6", "fd00::/64", []netip.Addr{v6}, map[string]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			only := fakecluster.Netpol("from-range", fakecluster.MatchLabels(web.Labels), fakecluster.IngressOnly)
			only.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: tc.from}}}}}
			cs, o, _ := policyCluster(t, []*corev1.Pod{client, web}, only)
			s := testSession(cs, session.ModeEphemeral)
			sc := o.ReadPolicies(context.Background(), "shop")
			sc.apiServer = nil // the API server's reach is another test's
			pp := PlanPath(sc, s, &session.Target{Namespace: "shop", Pod: client}, &session.Target{Namespace: "shop", Pod: web}, probes, nil, 8080, 0, tc.addrs)
			for _, p := range probes {
				if pp.Skip[p.Name] != tc.blocked[p.Name] {
					t.Errorf("%s: blocked %v, want %v (%+v)", p.Name, pp.Skip[p.Name], tc.blocked[p.Name], pp.Check.Blocked)
				}
			}
		})
	}
}

func dualStack(p *corev1.Pod, ip6 string) *corev1.Pod {
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}, {IP: ip6}}
	return p
}
