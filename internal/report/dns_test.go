package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

func v(label string, ndots, queries int, answered string) probes.DNSVariant {
	return probes.DNSVariant{Label: label, Ndots: ndots, Queries: queries, AnsweredBy: answered}
}

func TestPlanDNSFixes(t *testing.T) {
	r := &probes.DNSResult{Config: resolver.Config{Ndots: 5}, Names: []probes.DNSName{
		{Name: "kubernetes.default", Variants: []probes.DNSVariant{
			v("as configured", 5, 4, "kubernetes.default.svc.cluster.local."), v("trailing dot", 5, 2, ""),
			v("ndots:1", 1, 6, "kubernetes.default.svc.cluster.local."), v("ndots:2", 2, 4, "kubernetes.default.svc.cluster.local.")}},
		{Name: "example.com", Variants: []probes.DNSVariant{
			v("as configured", 5, 8, "example.com."), v("trailing dot", 5, 2, "example.com."),
			v("ndots:1", 1, 2, "example.com."), v("ndots:2", 2, 8, "example.com.")}},
		{Name: "api.internal.example.com", Variants: []probes.DNSVariant{
			v("as configured", 5, 8, ""), v("trailing dot", 5, 2, ""),
			v("ndots:1", 1, 8, ""), v("ndots:2", 2, 8, "")}},
	}}
	fixes, patch := PlanDNSFixes(r, "deployment/web", "shop", nil)
	want := []DNSFix{
		{Name: "kubernetes.default", Queries: 4, Fix: `look up "kubernetes.default.svc.cluster.local." (fully qualified, with the trailing dot)`, FixedQueries: 2},
		{Name: "example.com", Queries: 8, Fix: `look up "example.com." (fully qualified, with the trailing dot)`, FixedQueries: 2},
		{Name: "api.internal.example.com", Queries: 8, Fix: "the name does not resolve: every candidate was tried; fix the name", FixedQueries: 8},
	}
	if diff := cmp.Diff(want, fixes); diff != "" {
		t.Errorf("fixes (-want +got):\n%s", diff)
	}
	if patch == nil || patch.Ndots != 1 || patch.QueriesBefore != 20 || patch.QueriesAfter != 16 {
		t.Fatalf("patch %+v, want ndots 1, 20 → 16 queries", patch)
	}
	if !strings.Contains(patch.Command, `kubectl patch -n shop deployment/web --type=strategic`) || !strings.Contains(patch.Command, `{"name":"ndots","value":"1"}`) {
		t.Errorf("command %s", patch.Command)
	}
	if len(patch.SideEffects) != 1 || !strings.Contains(patch.SideEffects[0], "kubernetes.default has 1 dot(s)") {
		t.Errorf("side effects %v, want the extra upstream query of kubernetes.default", patch.SideEffects)
	}
	// No owner to patch: the per-name fixes only.
	if _, p := PlanDNSFixes(r, "", "shop", nil); p != nil {
		t.Errorf("a pod without an owner got a patch: %+v", p)
	}
}

// A lookup of one family (AAAA only) of a name that has an IPv4 address alone fails, but the
// name exists: the fix says the application asks for a family the name lacks, not that the
// name is wrong.
func TestPlanDNSFixesOneFamily(t *testing.T) {
	r := &probes.DNSResult{Config: resolver.Config{Ndots: 5, LookupFamily: resolver.LookupIPv6}, Names: []probes.DNSName{
		{Name: "kubernetes.default", Variants: []probes.DNSVariant{
			v("as configured", 5, 4, ""), v("trailing dot", 5, 1, ""), v("A and AAAA", 5, 4, "kubernetes.default.svc.cluster.local.")}},
		{Name: "nothing.here", Variants: []probes.DNSVariant{
			v("as configured", 5, 4, ""), v("trailing dot", 5, 1, ""), v("A and AAAA", 5, 8, "")}},
	}}
	fixes, _ := PlanDNSFixes(r, "", "shop", nil)
	if len(fixes) != 2 || !strings.Contains(fixes[0].Fix, "no AAAA address (asking A and AAAA, kubernetes.default.svc.cluster.local. answered)") ||
		fixes[1].Fix != "the name does not resolve: every candidate was tried; fix the name" {
		t.Errorf("fixes %+v", fixes)
	}
}
