package v1alpha1

import (
	"strconv"
	"strings"
)

// ResolverKind names a stub resolver implementation.
type ResolverKind string

// The resolvers modelled.
const (
	ResolverGlibc ResolverKind = "glibc" // glibc 2.3x getaddrinfo (nss dns), AF_UNSPEC
	ResolverMusl  ResolverKind = "musl"  // musl 1.2 getaddrinfo, AF_UNSPEC
	ResolverGo    ResolverKind = "go"    // Go's pure resolver (net.Resolver, PreferGo or CGO_ENABLED=0)
)

// Rcode is the outcome of one query as the walk sees it.
type Rcode string

// Outcomes of a query.
const (
	RcodeNoError  Rcode = "NOERROR"  // with at least one address
	RcodeNoData   Rcode = "NODATA"   // NOERROR without an address of the asked type
	RcodeNXDomain Rcode = "NXDOMAIN" // the name does not exist
	RcodeServFail Rcode = "SERVFAIL"
)

// ResolverConfig is what a stub resolver reads from /etc/resolv.conf.
type ResolverConfig struct {
	Nameservers []string `json:"nameservers"`
	Search      []string `json:"search"`
	Ndots       int      `json:"ndots"`
	Attempts    int      `json:"attempts"`
	// TimeoutSeconds per attempt.
	TimeoutSeconds int `json:"timeoutSeconds"`
	// SingleRequest sends A and AAAA one after the other instead of together (glibc, Go).
	SingleRequest bool `json:"singleRequest,omitempty"`
	// SingleRequestReopen (glibc) also sends the second query from a new socket; UseVC (glibc)
	// asks over TCP.
	SingleRequestReopen bool `json:"singleRequestReopen,omitempty"`
	UseVC               bool `json:"useVC,omitempty"`
	Rotate              bool `json:"rotate,omitempty"`
	// LocalDomain is the search list glibc and Go fall back to when resolv.conf has none: the
	// domain part of the host name (usually empty in a pod).
	LocalDomain string `json:"localDomain,omitempty"`
	// LookupFamily is what one lookup of the application asks for, not read from resolv.conf
	// but from how it calls the resolver (dns --lookup-family): "" both (AF_UNSPEC: A and
	// AAAA), "4" IPv4 alone (A: getaddrinfo with AF_INET, Go's ip4/tcp4), "6" IPv6 alone
	// (AAAA: AF_INET6, Go's ip6/tcp6).
	LookupFamily string `json:"lookupFamily,omitempty"`
}

// The lookup families (ResolverConfig.LookupFamily).
const (
	LookupBoth = ""
	LookupIPv4 = "4"
	LookupIPv6 = "6"
)

// LookupFamilyLabel names a lookup family's what-if: "A only", "AAAA only", "A and AAAA".
func LookupFamilyLabel(f string) string {
	label := strings.Join(ResolverConfig{LookupFamily: f}.QueryTypes(), " and ")
	if f != LookupBoth {
		label += " only"
	}
	return label
}

// QueryTypes are the query types one lookup sends for each candidate name, in the order the
// resolvers send them: A then AAAA, or the one of LookupFamily.
func (c ResolverConfig) QueryTypes() []string {
	switch c.LookupFamily {
	case LookupIPv4:
		return []string{"A"}
	case LookupIPv6:
		return []string{"AAAA"}
	}
	return []string{"A", "AAAA"}
}

// String renders the configuration as resolv.conf text.
func (c ResolverConfig) String() string {
	var b strings.Builder
	if len(c.Search) > 0 {
		b.WriteString("search " + strings.Join(c.Search, " ") + "\n")
	}
	for _, n := range c.Nameservers {
		b.WriteString("nameserver " + n + "\n")
	}
	opts := []string{"ndots:" + strconv.Itoa(c.Ndots), "attempts:" + strconv.Itoa(c.Attempts), "timeout:" + strconv.Itoa(c.TimeoutSeconds)}
	switch {
	case c.SingleRequestReopen:
		opts = append(opts, "single-request-reopen")
	case c.SingleRequest:
		opts = append(opts, "single-request")
	}
	if c.UseVC {
		opts = append(opts, "use-vc")
	}
	if c.Rotate {
		opts = append(opts, "rotate")
	}
	b.WriteString("options " + strings.Join(opts, " ") + "\n")
	return b.String()
}
