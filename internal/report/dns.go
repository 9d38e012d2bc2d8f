package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// PlanDNSFixes picks the cheapest fix per name and the ndots that sends the fewest queries while
// every name that resolved still resolves from the same answer.
func PlanDNSFixes(r *v1alpha1.DNSResult, owner, namespace string, options []DNSOption) ([]DNSFix, *Patch) {
	var fixes []DNSFix
	byNdots := map[int]int{}
	current := 0
	ok := map[int]bool{}
	for _, n := range r.Names {
		conf := variant(n, "as configured")
		if conf == nil {
			continue
		}
		current += conf.Queries
		// The least a lookup costs: one query of each type it asks (A and AAAA, or one), and
		// what a too large answer adds over TCP — what the trailing-dot what-if measured.
		types := r.Config.QueryTypes()
		least, minimum := len(types), "one "+strings.Join(types, " and one ")+" query"
		if dot := variant(n, "trailing dot"); dot != nil && dot.AnsweredBy != "" {
			least = dot.Queries
		}
		f := DNSFix{Name: n.Name, Queries: conf.Queries, Fix: "none needed: the minimum (" + minimum + ")", FixedQueries: conf.Queries}
		if least > len(types) {
			f.Fix = "none needed: the minimum (" + minimum + ", and what its large answer resends over TCP)"
		}
		if conf.Queries > least && conf.AnsweredBy != "" {
			f.Fix = fmt.Sprintf("look up %q (fully qualified, with the trailing dot)", resolvedName(*conf))
			f.FixedQueries = least
		} else if other := otherFamily(n, r.Config); conf.AnsweredBy == "" && other != nil && other.AnsweredBy != "" {
			f.Fix = fmt.Sprintf("the name has no %s address (asking %s, %s answered): the application asks for a family the name does not have",
				strings.Join(types, " or "), other.Label, other.AnsweredBy)
		} else if conf.AnsweredBy == "" && conf.Queries > len(types) {
			f.Fix = "the name does not resolve: every candidate was tried; fix the name"
		}
		fixes = append(fixes, f)
		for _, v := range n.Variants {
			if !strings.HasPrefix(v.Label, "ndots:") && v.Label != "as configured" {
				continue
			}
			if _, seen := ok[v.Ndots]; !seen {
				ok[v.Ndots] = true
			}
			byNdots[v.Ndots] += v.Queries
			// A what-if must keep every name's answer.
			if resolvedName(v) != resolvedName(*conf) {
				ok[v.Ndots] = false
			}
		}
	}
	best := r.Config.Ndots
	var ndots []int
	for n := range byNdots {
		ndots = append(ndots, n)
	}
	sort.Ints(ndots)
	for _, n := range ndots {
		if ok[n] && byNdots[n] < byNdots[best] {
			best = n
		}
	}
	if best == r.Config.Ndots || owner == "" {
		return fixes, nil
	}
	p := &Patch{Ndots: best, QueriesBefore: current, QueriesAfter: byNdots[best]}
	p.Command = DNSOptionsPatch(namespace, owner, options, "ndots", strconv.Itoa(best))
	for _, n := range r.Names {
		v := variant(n, fmt.Sprintf("ndots:%d", best))
		conf := variant(n, "as configured")
		if v == nil || conf == nil {
			continue
		}
		if dots := strings.Count(strings.TrimSuffix(n.Name, "."), "."); dots >= best && conf.AnsweredBy != "" && conf.AnsweredBy != strings.TrimSuffix(n.Name, ".")+"." && !strings.HasSuffix(n.Name, ".") {
			p.SideEffects = append(p.SideEffects, fmt.Sprintf("%s has %d dot(s) ≥ ndots %d: it is first sent as is, an extra query that leaves the cluster for the upstream DNS before the search list finds %s", n.Name, dots, best, conf.AnsweredBy))
		}
	}
	return fixes, p
}

// resolvedName is the name whose addresses a lookup got: the candidate that answered, or the
// name the server answered it for when it walked the search path itself.
func resolvedName(v v1alpha1.DNSVariant) string {
	if v.ServerSearch != "" {
		return v.ServerSearch
	}
	return v.AnsweredBy
}

// otherFamily is the what-if of another lookup family than c's, if the run made one.
func otherFamily(n v1alpha1.DNSName, c v1alpha1.ResolverConfig) *v1alpha1.DNSVariant {
	for _, f := range []string{v1alpha1.LookupBoth, v1alpha1.LookupIPv4, v1alpha1.LookupIPv6} {
		if f != c.LookupFamily {
			if v := variant(n, v1alpha1.LookupFamilyLabel(f)); v != nil {
				return v
			}
		}
	}
	return nil
}

func variant(n v1alpha1.DNSName, label string) *v1alpha1.DNSVariant {
	for i := range n.Variants {
		if n.Variants[i].Label == label {
			return &n.Variants[i]
		}
	}
	return nil
}
