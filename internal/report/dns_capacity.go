package report

import (
	"fmt"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// DNSCapacity is v1alpha1.DNSCapacity, a type of the reports' schema.
type DNSCapacity = v1alpha1.DNSCapacity

// PlanDNSCapacity converts the nameserver's sustained rate into lookups per second: now, at the
// load mix's queries per lookup, and after the fixes (the patch's ndots, fully qualified names),
// at theirs. nodeLocal says the pod's nameserver is NodeLocal DNSCache.
func PlanDNSCapacity(r *v1alpha1.DNSResult, fixes []DNSFix, patch *Patch, nodeLocal bool) *DNSCapacity {
	if r == nil || r.Load == nil || len(r.Load.Servers) == 0 || r.Load.Lookups == 0 {
		return nil
	}
	l, ns := r.Load, r.Load.Servers[0]
	c := &DNSCapacity{Server: ns.Address, SustainedQPS: ns.SustainedQPS, LowerBound: ns.Limit != v1alpha1.LoadLimitDegraded}
	lookups := float64(l.Lookups)
	at := func(fix string, queries float64) v1alpha1.LookupsAt {
		return v1alpha1.LookupsAt{Fix: fix, QueriesPerLookup: queries / lookups, LookupsPerSecond: ns.SustainedQPS * lookups / queries}
	}
	c.Now = at("as configured", float64(len(l.Mix)))
	if patch != nil && patch.QueriesAfter > 0 && patch.QueriesAfter < patch.QueriesBefore {
		c.Fixed = append(c.Fixed, at(fmt.Sprintf("ndots:%d", patch.Ndots), scaled(len(l.Mix), patch.QueriesAfter, patch.QueriesBefore)))
	}
	before, after := 0, 0
	for _, f := range fixes {
		before, after = before+f.Queries, after+f.FixedQueries
	}
	if after > 0 && after < before {
		c.Fixed = append(c.Fixed, at("fully qualified names", scaled(len(l.Mix), after, before)))
	}
	if nodeLocal {
		c.Notes = append(c.Notes, "the pod's nameserver is NodeLocal DNSCache: the nameserver's figure is the node cache's, not CoreDNS's; the replicas were loaded directly, as NodeLocal's upstream")
	}
	if len(l.Servers) > 1 {
		c.Notes = append(c.Notes, "the replicas' figures are each one replica's alone, asked directly")
	}
	return c
}

// scaled is the load mix's query count scaled by a fix's ratio of queries (the mix holds UDP
// queries only; the fix counts are the lookups' own, TCP resends included).
func scaled(mix, after, before int) float64 {
	return float64(mix) * float64(after) / float64(before)
}
