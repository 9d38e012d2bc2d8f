package probes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/resolver"
)

// Queries as a resolver sends them for a sequence of lookups fold back into those lookups.
func TestGroupLookups(t *testing.T) {
	c := resolver.ParseResolvConf("search ns.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n")
	answer := func(name, _ string) resolver.Rcode {
		switch name {
		case "example.com.", "kubernetes.default.svc.cluster.local.":
			return resolver.NoError
		}
		return resolver.NXDomain
	}
	var qs []*capturedQuery
	lookup := func(name string) {
		for _, st := range resolver.Simulate(resolver.Glibc, c, name, answer).Steps {
			for _, typ := range []string{resolver.TypeA, resolver.TypeAAAA} {
				for i := 0; i < st.Queries[typ]; i++ {
					qs = append(qs, &capturedQuery{name: st.Name, qtype: typ, rcode: st.Rcodes[typ]})
				}
			}
		}
	}
	for i := 0; i < 3; i++ {
		lookup("example.com")
		lookup("kubernetes.default")
		lookup("missing.example.")
	}
	got := groupLookups(qs, resolver.Glibc, c)
	want := []DNSObservedName{
		{Name: "example.com", Lookups: 3, Queries: 24, QueriesPerLookup: 8, NXDomains: 18, AnsweredBy: "example.com.", TrailingDotQueries: 2, Ndots1Queries: 2},
		{Name: "kubernetes.default", Lookups: 3, Queries: 12, QueriesPerLookup: 4, NXDomains: 6, AnsweredBy: "kubernetes.default.svc.cluster.local.", TrailingDotQueries: 2, Ndots1Queries: 6},
		{Name: "missing.example.", Lookups: 3, Queries: 6, QueriesPerLookup: 2, NXDomains: 6, TrailingDotQueries: 2, Ndots1Queries: 2},
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b DNSObservedName) bool { return strings.Compare(a.Name, b.Name) < 0 })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
