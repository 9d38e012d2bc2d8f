package ladder

import (
	"net"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// clusterIP is one of a Service's ClusterIPs; suffix ends its probes' names: none for the
// primary, the family's for a dual-stack Service's second (path.V6Suffix, or -v4).
type clusterIP struct{ ip, suffix string }

// clusterIPs are a Service's ClusterIPs, primary first (none for a headless Service), or its
// ClusterIP of family (--ip-family 4 or 6) alone.
func clusterIPs(svc *corev1.Service, family string) []clusterIP {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []clusterIP
	for i, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil { // "", None
			continue
		}
		c := clusterIP{ip: a.String()}
		switch {
		case family == path.Family4 || family == path.Family6:
			// --ip-family 4|6: that family's ClusterIP alone, under the plain names.
			if a.Unmap().Is4() != (family == path.Family4) {
				continue
			}
		case i > 0:
			c.suffix = V4Suffix
			if a.Unmap().Is6() {
				c.suffix = path.V6Suffix
			}
		}
		out = append(out, c)
	}
	return out
}

// V4Suffix ends the names of the probes through an IPv6-primary dual-stack Service's IPv4
// ClusterIP.
const V4Suffix = v1alpha1.IPv4ProbeSuffix

// direct are the endpoint agents' own addresses by pod, of like's family: the spread probe's
// handshakes straight to them are set beside those through the Service (the dataplane's cost
// per endpoint).
func (sr *serviceRun) direct(like string) map[string]string {
	want, _ := netip.ParseAddr(like)
	out := map[string]string{}
	for i, p := range sr.pods {
		if i >= len(sr.measured) {
			break
		}
		for _, s := range session.PodIPs(p) {
			if a, err := netip.ParseAddr(s); err == nil && a.Unmap().Is4() == want.Unmap().Is4() {
				out[sr.measured[i].Pod] = net.JoinHostPort(a.Unmap().String(), strconv.Itoa(sr.agentPort))
				break
			}
		}
	}
	return out
}

// addressTypes are the EndpointSlice address types of a Service's families ("" for any, when
// the Service does not say).
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	if len(svc.Spec.IPFamilies) == 0 {
		return []discoveryv1.AddressType{""}
	}
	out := make([]discoveryv1.AddressType, len(svc.Spec.IPFamilies))
	for i, f := range svc.Spec.IPFamilies {
		out[i] = discoveryv1.AddressType(f)
	}
	return out
}
