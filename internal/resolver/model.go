package resolver

import (
	"fmt"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Kind names a stub resolver implementation: v1alpha1.ResolverKind, a type of the reports'
// schema.
type Kind = v1alpha1.ResolverKind

// The resolvers modelled.
const (
	Glibc = v1alpha1.ResolverGlibc // glibc 2.3x getaddrinfo (nss dns), AF_UNSPEC
	Musl  = v1alpha1.ResolverMusl  // musl 1.2 getaddrinfo, AF_UNSPEC
	Go    = v1alpha1.ResolverGo    // Go's pure resolver (net.Resolver, PreferGo or CGO_ENABLED=0)
)

// Kinds lists every modelled resolver.
var Kinds = []Kind{Glibc, Musl, Go}

// ParseKind accepts a resolver name.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown resolver %q (want glibc, musl or go)", s)
}

// Rcode is the outcome of one query as the walk sees it: v1alpha1.Rcode, a type of the
// reports' schema.
type Rcode = v1alpha1.Rcode

// Outcomes of a query.
const (
	NoError  = v1alpha1.RcodeNoError  // with at least one address
	NoData   = v1alpha1.RcodeNoData   // NOERROR without an address of the asked type
	NXDomain = v1alpha1.RcodeNXDomain // the name does not exist
	ServFail = v1alpha1.RcodeServFail
)

// Query types sent for an AF_UNSPEC lookup.
const (
	TypeA    = "A"
	TypeAAAA = "AAAA"
)

// What one lookup asks for (Config.LookupFamily): A and AAAA, A only, AAAA only.
const (
	LookupBoth = v1alpha1.LookupBoth
	LookupIPv4 = v1alpha1.LookupIPv4
	LookupIPv6 = v1alpha1.LookupIPv6
)

// Answerer returns the outcome of a query for name (fully qualified, with the final dot).
type Answerer func(name, qtype string) Rcode

// Step is one candidate name tried during a lookup, with the queries sent for it.
type Step struct {
	Name string `json:"name"`
	// Queries counts the queries sent per type, retries included.
	Queries map[string]int `json:"queries"`
	// Rcodes is the final outcome per type.
	Rcodes map[string]Rcode `json:"rcodes"`
}

// Walk is the model's account of one lookup.
type Walk struct {
	Resolver Kind   `json:"resolver"`
	Name     string `json:"name"`
	Steps    []Step `json:"steps"`
	// Answered is the candidate that produced addresses, "" when the lookup failed.
	Answered string `json:"answered,omitempty"`
}

// QueryCount is the number of queries the lookup sent.
func (w Walk) QueryCount() int {
	n := 0
	for _, s := range w.Steps {
		for _, c := range s.Queries {
			n += c
		}
	}
	return n
}

// NXDomainCount is the number of NXDOMAIN answers the lookup received.
func (w Walk) NXDomainCount() int {
	n := 0
	for _, s := range w.Steps {
		for t, rc := range s.Rcodes {
			if rc == NXDomain {
				n += s.Queries[t]
			}
		}
	}
	return n
}

func fqdn(n string) string {
	if strings.HasSuffix(n, ".") {
		return n
	}
	return n + "."
}

func search(c Config) []string {
	if len(c.Search) == 0 && c.LocalDomain != "" {
		return []string{c.LocalDomain}
	}
	return c.Search
}

// Candidates is the order in which the resolver tries names for a lookup of name (before any
// answer stops it), fully qualified.
func Candidates(k Kind, c Config, name string) []string {
	trailing := strings.HasSuffix(name, ".")
	base := strings.TrimSuffix(name, ".")
	dots := strings.Count(base, ".")
	if fault.On(fault.NdotsOffByOne) {
		dots-- // a name is tried as is first with more than ndots dots, not with at least ndots
	}
	var out []string
	suffixed := func(list []string) {
		for _, s := range list {
			s = strings.TrimSuffix(s, ".")
			if s == "" {
				continue
			}
			out = append(out, base+"."+s+".")
		}
	}
	switch k {
	case Musl:
		// musl: enough dots (or a trailing dot) means the name as is, and nothing else;
		// otherwise every search domain, then the name as is.
		if trailing || dots >= c.Ndots {
			return []string{fqdn(base)}
		}
		suffixed(c.Search)
		return append(out, fqdn(base))
	case Go:
		if trailing {
			return []string{fqdn(base)}
		}
		if dots >= c.Ndots {
			out = append(out, fqdn(base))
		}
		suffixed(search(c))
		if dots < c.Ndots {
			out = append(out, fqdn(base))
		}
		return out
	default: // glibc res_search
		asIsFirst := trailing || dots >= c.Ndots
		if asIsFirst {
			out = append(out, fqdn(base))
		}
		// Search only names without a trailing dot (glibc: RES_DEFNAMES/RES_DNSRCH are on).
		if !trailing {
			suffixed(search(c))
		}
		if !asIsFirst {
			out = append(out, fqdn(base))
		}
		return out
	}
}

// Simulate walks a lookup of name the way resolver k does against answers, and returns every
// query it would send, retries included, until an answer stops it.
func Simulate(k Kind, c Config, name string, answer Answerer) Walk {
	w := Walk{Resolver: k, Name: name}
	ns := max(len(c.Nameservers), 1)
	attempts := max(c.Attempts, 1)
	for _, cand := range Candidates(k, c, name) {
		st := Step{Name: cand, Queries: map[string]int{}, Rcodes: map[string]Rcode{}}
		for _, t := range c.QueryTypes() {
			rc := answer(cand, t)
			st.Rcodes[t] = rc
			st.Queries[t] = 1
			if rc == ServFail {
				st.Queries[t] = servFailSends(k, attempts, ns)
			}
		}
		w.Steps = append(w.Steps, st)
		answered, stop := Stops(k, st.Rcodes)
		if answered {
			w.Answered = cand
		}
		if answered || stop {
			return w
		}
	}
	return w
}

// Stops says, from the outcomes of one candidate's queries, whether the lookup got its
// addresses and whether the resolver stops walking anyway.
func Stops(k Kind, rcodes map[string]Rcode) (answered, stop bool) {
	for _, rc := range rcodes {
		answered = answered || rc == NoError
	}
	return answered, k == Musl && stopsMusl(rcodes)
}

// servFailSends is how many times a query answered SERVFAIL is sent.
func servFailSends(k Kind, attempts, nameservers int) int {
	switch k {
	case Musl:
		// musl sends to every nameserver at each of `attempts` retry intervals, and resends
		// at once after a SERVFAIL while a budget of 2 × the queries in flight lasts; then it
		// waits for the timeout and gives up on the lookup.
		return attempts * (nameservers + 2)
	default:
		// glibc and Go try each nameserver in turn, `attempts` rounds.
		return attempts * nameservers
	}
}

// stopsMusl: musl continues its search list only after NXDOMAIN; NODATA ends the lookup with
// "no address", SERVFAIL (no usable answer before the timeout) with "try again".
func stopsMusl(rcodes map[string]Rcode) bool {
	for _, rc := range rcodes {
		if rc != NXDomain {
			return true
		}
	}
	return false
}

// TCPResends returns the query types resolver k sends again over TCP when the UDP answers to
// the types in truncated came back with the TC bit: glibc resends both of the candidate's
// queries on one connection (send_vc takes the pair), Go and musl (1.2.4 and later; earlier
// musl keeps the truncated answer) only the truncated ones.
func TCPResends(k Kind, truncated []string) []string {
	if len(truncated) == 0 {
		return nil
	}
	if k == Glibc {
		return []string{TypeA, TypeAAAA}
	}
	return truncated
}
