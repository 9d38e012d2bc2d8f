package session

import (
	"net/netip"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// ProbeAddr is the DST address whose family a probe labelled label measures, of addrs (DST's
// addresses a run measures, one per family, the IPv6 twins' second): an --ip-family both run's
// IPv6 twin (named *-v6) the second, any other probe the first; none without addrs.
func ProbeAddr(label string, addrs []netip.Addr) netip.Addr {
	switch {
	case len(addrs) > 1 && strings.HasSuffix(label, v1alpha1.IPv6ProbeSuffix):
		return addrs[1]
	case len(addrs) > 0:
		return addrs[0]
	}
	return netip.Addr{}
}
