package probes

import (
	"errors"
	"time"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// ErrCaptureNotPermitted means the process may not open a packet socket (it needs CAP_NET_RAW).
var ErrCaptureNotPermitted = errors.New("capturing packets needs CAP_NET_RAW")

// DNSObservedName is what the pod's own lookups of one name cost on the wire.
type DNSObservedName struct {
	// Name is the name the application looked up (its candidates folded together).
	Name    string `json:"name"`
	Lookups int    `json:"lookups"`
	Queries int    `json:"queries"`
	// QueriesPerLookup is Queries ÷ Lookups; NXDomains the NXDOMAIN answers among them.
	QueriesPerLookup float64 `json:"queriesPerLookup"`
	NXDomains        int     `json:"nxdomains"`
	AnsweredBy       string  `json:"answeredBy,omitempty"`
	// Truncated counts UDP answers with the TC bit; TCPQueries the queries sent over TCP
	// (counted in Queries: the resolver's resends after a truncated answer).
	Truncated  int `json:"truncated,omitempty"`
	TCPQueries int `json:"tcpQueries,omitempty"`
	// FixedByTrailingDot and FixedByNdots say what the model predicts per lookup with a trailing
	// dot and with ndots 1 (from the answers seen).
	TrailingDotQueries int `json:"trailingDotQueries"`
	Ndots1Queries      int `json:"ndots1Queries"`
}

// DNSObservation summarises the pod's real DNS traffic over a time window.
type DNSObservation struct {
	Seconds float64 `json:"seconds"`
	// Start and End bound the capture window (wall clock).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Queries and Responses counted on the wire (UDP and TCP port 53, every interface of the
	// pod), NXDomains among the responses.
	Queries   int     `json:"queries"`
	Responses int     `json:"responses"`
	NXDomains int     `json:"nxdomains"`
	NXShare   float64 `json:"nxdomainShare"`
	// TCPQueries and TCPResponses are the messages among them carried over TCP (reassembled
	// from the segments they span); Truncated the UDP responses with the TC bit.
	TCPQueries   int               `json:"tcpQueries,omitempty"`
	TCPResponses int               `json:"tcpResponses,omitempty"`
	Truncated    int               `json:"truncated,omitempty"`
	Names        []DNSObservedName `json:"names"`
	// Overflow counts queries left out of Names because a bound was reached (open lookups,
	// queries awaiting answers, distinct names); zero means every query was grouped.
	Overflow int `json:"overflow,omitempty"`
}

func rcodeOf(m *dns.Msg) resolver.Rcode {
	switch m.Rcode {
	case dns.RcodeNameError:
		return resolver.NXDomain
	case dns.RcodeSuccess:
		for _, a := range m.Answer {
			if t := a.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
				return resolver.NoError
			}
		}
		return resolver.NoData
	}
	return resolver.ServFail
}
