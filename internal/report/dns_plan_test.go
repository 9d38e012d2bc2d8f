package report

import (
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// A name whose answer is resent over TCP costs 4 queries with the trailing dot: the fix says 4,
// not 2; and a name the server searched for is looked up by the name it exists as.
func TestPlanDNSFixesCountsWhatTheWireNeeds(t *testing.T) {
	r := &probes.DNSResult{Names: []probes.DNSName{
		{Name: "big.example.com", Variants: []probes.DNSVariant{
			{Label: "as configured", Queries: 10, AnsweredBy: "big.example.com.", TCPQueries: 2, Truncated: 1},
			{Label: "trailing dot", Queries: 4, AnsweredBy: "big.example.com.", TCPQueries: 2, Truncated: 1}}},
		{Name: "example.com", Variants: []probes.DNSVariant{
			{Label: "as configured", Queries: 2, AnsweredBy: "example.com.ns.svc.cluster.local.", ServerSearch: "example.com."},
			{Label: "trailing dot", Queries: 2, AnsweredBy: "example.com."}}},
	}}
	fixes, _ := PlanDNSFixes(r, "", "ns", nil)
	if f := fixes[0]; f.FixedQueries != 4 || !strings.Contains(f.Fix, `"big.example.com."`) {
		t.Errorf("big.example.com fix %+v: want 10 → 4", f)
	}
	if f := fixes[1]; f.FixedQueries != 2 || !strings.HasPrefix(f.Fix, "none needed") {
		t.Errorf("example.com fix %+v: the server's search already makes it 2", f)
	}
}
