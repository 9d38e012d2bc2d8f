package probes

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/resolver"
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
	Queries   int               `json:"queries"`
	Responses int               `json:"responses"`
	NXDomains int               `json:"nxdomains"`
	NXShare   float64           `json:"nxdomainShare"`
	Names     []DNSObservedName `json:"names"`
}

type capturedQuery struct {
	at    time.Time
	id    uint16
	name  string
	qtype string
	rcode resolver.Rcode // "" until the response is seen
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

// groupLookups folds queries into lookups: a query continues the open lookup whose next
// candidate (in the resolver's order) it is, or starts a lookup of the name it is the first
// candidate of (the name as is when nothing fits).
func groupLookups(queries []*capturedQuery, k resolver.Kind, c resolver.Config) []DNSObservedName {
	type lookup struct {
		base  string
		cands []string
		pos   int
		seen  map[string]bool // types answered at the current position
		done  bool
	}
	byName := map[string]*DNSObservedName{}
	answers := map[string]resolver.Rcode{}
	var openLookups []*lookup
	stat := func(base string) *DNSObservedName {
		s := byName[base]
		if s == nil {
			s = &DNSObservedName{Name: base}
			byName[base] = s
		}
		return s
	}
	// A query continues a lookup if it is for the lookup's current candidate (its other type,
	// or a retry) or, unless the lookup got its answer, for the next candidate.
	continues := func(l *lookup, name string) bool {
		return (l.pos < len(l.cands) && l.cands[l.pos] == name) || (!l.done && l.pos+1 < len(l.cands) && l.cands[l.pos+1] == name)
	}
	for _, q := range queries {
		if q.rcode != "" {
			answers[q.name+"/"+q.qtype] = q.rcode
		}
		var cur *lookup
		for _, l := range openLookups {
			if continues(l, q.name) {
				cur = l
				break
			}
		}
		if cur == nil {
			// The name as the application wrote it: with the trailing dot unless the resolver
			// would have tried it as is first anyway.
			base := q.name
			if b := strings.TrimSuffix(q.name, "."); resolver.Candidates(k, c, b)[0] == q.name {
				base = b
			}
			for _, s := range c.Search {
				if b, ok := strings.CutSuffix(q.name, "."+strings.TrimSuffix(s, ".")+"."); ok {
					if cands := resolver.Candidates(k, c, b); len(cands) > 0 && cands[0] == q.name {
						base = b
						break
					}
				}
			}
			cur = &lookup{base: base, cands: resolver.Candidates(k, c, base), seen: map[string]bool{}}
			openLookups = append(openLookups, cur)
			stat(base).Lookups++
		}
		if cur.pos+1 < len(cur.cands) && cur.cands[cur.pos+1] == q.name {
			cur.pos++
			cur.seen = map[string]bool{}
		}
		st := stat(cur.base)
		st.Queries++
		switch q.rcode {
		case resolver.NXDomain:
			st.NXDomains++
		case resolver.NoError:
			st.AnsweredBy = q.name
			cur.done = true
		}
		if q.rcode != "" && q.rcode != resolver.ServFail {
			cur.seen[q.qtype] = true
		}
		if k == resolver.Musl && q.rcode == resolver.NoData {
			cur.done = true // musl ends the walk at NODATA
		}
		if cur.pos == len(cur.cands)-1 {
			cur.done = true // the last candidate: nothing follows but its other type
		}
		// A finished lookup leaves once its candidate has both answers.
		kept := openLookups[:0]
		for _, l := range openLookups {
			if !(l.done && l.seen[resolver.TypeA] && l.seen[resolver.TypeAAAA]) {
				kept = append(kept, l)
			}
		}
		openLookups = kept
	}
	answer := func(name, qtype string) resolver.Rcode {
		if rc, ok := answers[name+"/"+qtype]; ok {
			return rc
		}
		return resolver.NXDomain
	}
	var out []DNSObservedName
	for _, s := range byName {
		if s.Lookups > 0 {
			s.QueriesPerLookup = round3(float64(s.Queries) / float64(s.Lookups))
		}
		s.TrailingDotQueries = resolver.Simulate(k, c, strings.TrimSuffix(s.Name, ".")+".", answer).QueryCount()
		c1 := c
		c1.Ndots = 1
		s.Ndots1Queries = resolver.Simulate(k, c1, s.Name, answer).QueryCount()
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queries != out[j].Queries {
			return out[i].Queries > out[j].Queries
		}
		return out[i].Name < out[j].Name
	})
	return out
}
