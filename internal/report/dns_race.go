package report

import (
	"encoding/json"
	"fmt"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// DNSOption is one of a pod template's dnsConfig options, as the API has it.
type DNSOption struct {
	Name  string  `json:"name"`
	Value *string `json:"value,omitempty"`
}

// DNSOptionsPatch is a kubectl patch that sets option name (to value, or bare when value is "")
// in owner's pod template and keeps the template's other options: dnsConfig.options is replaced
// whole by a strategic merge, so the patch carries all of them.
func DNSOptionsPatch(namespace, owner string, current []DNSOption, name, value string) string {
	opts := []DNSOption{}
	for _, o := range current {
		if o.Name != name {
			opts = append(opts, o)
		}
	}
	set := DNSOption{Name: name}
	if value != "" {
		set.Value = &value
	}
	opts = append(opts, set)
	body := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"dnsConfig": map[string]any{"options": opts}}}}}
	b, _ := json.Marshal(body) // maps and strings only: cannot fail
	return fmt.Sprintf("kubectl patch -n %s %s --type=strategic -p '%s'", namespace, owner, b)
}

// PlanRaceFix turns the race check into advice that fits the resolver.
func PlanRaceFix(r *v1alpha1.DNSResult, owner, namespace string, current []DNSOption) *RaceAdvice {
	if r == nil || r.Race == nil {
		return nil
	}
	m, fix := r.Race.Measured, r.Race.Fix
	switch {
	case m.Mode == v1alpha1.RaceTCP:
		return &RaceAdvice{Advice: "the resolver asks over TCP (use-vc): no UDP race to check"}
	case m.Mode == v1alpha1.RaceSeparate:
		return &RaceAdvice{Advice: "Go's resolver sends A and AAAA from separate sockets: not exposed to the race"}
	case r.Resolver == v1alpha1.ResolverMusl:
		return &RaceAdvice{Advice: fmt.Sprintf("musl sends A and AAAA at once from one socket and has no option to change that (no single-request, no single-request-reopen, no use-vc): %d of %d lookups waited out a timeout; a node-local DNS cache (no DNAT between the pod and its nameserver) avoids the race", m.Slow, m.Lookups)}
	case m.Mode != v1alpha1.RaceTogether:
		return &RaceAdvice{Advice: fmt.Sprintf("%s is set: A and AAAA are not sent at once from one socket; %d of %d lookups waited out a timeout", m.Mode, m.Slow, m.Lookups)}
	case fix == nil:
		return &RaceAdvice{Advice: fmt.Sprintf("%d of %d lookups waited out a timeout", m.Slow, m.Lookups)}
	case m.Slow == 0:
		return &RaceAdvice{Advice: fmt.Sprintf("no lookup waited out a timeout: nothing to fix (with single-request-reopen, measured the same way: %d of %d)", fix.Slow, fix.Lookups)}
	}
	a := &RaceAdvice{Advice: fmt.Sprintf("set options single-request-reopen (glibc sends AAAA after A's answer, from a new socket): measured the same way, %d of %d lookups waited out a timeout instead of %d of %d", fix.Slow, fix.Lookups, m.Slow, m.Lookups)}
	if owner != "" {
		a.Command = DNSOptionsPatch(namespace, owner, current, "single-request-reopen", "")
	}
	return a
}
