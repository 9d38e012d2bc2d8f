package dns

import (
	"fmt"
	"net/netip"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// checkLookupFamily accepts --lookup-family both, 4 or 6 (both is kept as ""), and refuses the
// race check for lookups of one family: they send one query, so A and AAAA cannot race.
func (o *DNSOptions) checkLookupFamily() error {
	switch o.LookupFamily {
	case "both", "":
		o.LookupFamily = v1alpha1.LookupBoth
	case v1alpha1.LookupIPv4, v1alpha1.LookupIPv6:
		if o.Race > 0 {
			return fmt.Errorf("--race with --lookup-family %s: a lookup of one family sends one query per name, so there is no A/AAAA race to check (leave out --race, or use --lookup-family both)", o.LookupFamily)
		}
	default:
		return fmt.Errorf("--lookup-family %q: want both, 4 or 6", o.LookupFamily)
	}
	return nil
}

// whatIfFamily is the lookup family of the what-if set beside lookups of family: for lookups
// of both, the pod's primary family alone (what an application that dials that family, or
// getaddrinfo with AI_ADDRCONFIG in a single-stack pod, sends); for lookups of one, both.
func whatIfFamily(family string, podIPs []string) string {
	if family != v1alpha1.LookupBoth {
		return probes.WhatIfBothFamilies
	}
	for _, ip := range podIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			if a.Unmap().Is4() {
				return v1alpha1.LookupIPv4
			}
			return v1alpha1.LookupIPv6
		}
	}
	return v1alpha1.LookupIPv4
}
