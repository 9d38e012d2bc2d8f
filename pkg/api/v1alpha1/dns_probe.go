package v1alpha1

import "time"

// DNSProbeResult is the DNS probe's result with what the agent found in the pod.
type DNSProbeResult struct {
	*DNSResult
	// ResolvConf is the resolv.conf as read from ResolvConfPath (the application container's
	// own view where readable); Detection says how the resolver was chosen.
	ResolvConf     string `json:"resolvConf"`
	ResolvConfPath string `json:"resolvConfPath"`
	Detection      string `json:"detection"`
	// Observed is the passive capture (--observe); ObserveSkipped why there is none.
	Observed       *DNSObservation `json:"observed,omitempty"`
	ObserveSkipped string          `json:"observeSkipped,omitempty"`
}

// DNSResult is the outcome of the DNS probe.
type DNSResult struct {
	Resolver   ResolverKind   `json:"resolver"`
	Nameserver string         `json:"nameserver"`
	Config     ResolverConfig `json:"config"`
	Repeats    int            `json:"repeats"`
	Names      []DNSName      `json:"names"`
	// ReplicaView is the nameserver and each replica behind it asked the same query (when the
	// replicas were given).
	ReplicaView *DNSReplicaView `json:"replicaView,omitempty"`
	// Race is the race check (--race).
	Race *DNSRace `json:"race,omitempty"`
	// Load is the capacity ramp (dns --load).
	Load *DNSLoad `json:"load,omitempty"`
}

// DNSName is the report for one name.
type DNSName struct {
	Name string `json:"name"`
	// Timeline is the cold lookup, query by query.
	Timeline []DNSQuery   `json:"timeline"`
	Variants []DNSVariant `json:"variants"`
}

// DNSQuery is one query of a cold lookup's timeline.
type DNSQuery struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// SentMicros is when it was sent, from the start of the lookup; RTTMicros how long the
	// answer took.
	SentMicros float64 `json:"sentMicros"`
	RTTMicros  float64 `json:"rttMicros"`
	Rcode      Rcode   `json:"rcode"`
	// Transport is "tcp" for a query resent over TCP after a truncated answer ("" = UDP);
	// Truncated marks a UDP answer with the TC bit (too large for 512 bytes).
	Transport string `json:"transport,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// DNSVariant is one way of looking a name up (as configured, or a what-if).
type DNSVariant struct {
	Label string `json:"label"`
	// Lookup is the name as the application passes it (a trailing dot for that what-if).
	Lookup string `json:"lookup"`
	Ndots  int    `json:"ndots"`
	// Queries the resolver sends for one lookup, retries and TCP resends included; NXDomains
	// how many of them come back NXDOMAIN; AnsweredBy the candidate that answered ("" = lookup
	// failed); Truncated the UDP answers too large for 512 bytes and TCPQueries the queries the
	// resolver sends again over TCP because of them (counted in Queries).
	Queries    int `json:"queries"`
	Truncated  int `json:"truncated,omitempty"`
	TCPQueries int `json:"tcpQueries,omitempty"`
	// ServerSearch is the name the server answered for when it walked the search path itself
	// (CoreDNS autopath: the first candidate's answer is a CNAME to it); ClientSideQueries is
	// then what the resolver would send if the server did not (each candidate asked in turn).
	ServerSearch      string `json:"serverSearch,omitempty"`
	ClientSideQueries int    `json:"clientSideQueries,omitempty"`
	NXDomains         int    `json:"nxdomains"`
	AnsweredBy        string `json:"answeredBy,omitempty"`
	// Amplification is Queries over the minimum: one query of each type the lookup asks (2 for
	// A and AAAA).
	Amplification float64 `json:"amplification"`
	// Warm is the latency of whole lookups (every candidate, as the resolver walks them) over
	// Repeats runs, with caches warm.
	Warm Latency `json:"warm"`
}

// DNSReplica is one server behind the pod's nameserver (a CoreDNS pod behind kube-dns), to be
// asked directly.
type DNSReplica struct {
	Address string `json:"address"`
	Pod     string `json:"pod,omitempty"`
	Node    string `json:"node,omitempty"`
	Zone    string `json:"zone,omitempty"`
}

// DNSReplicaLatency is how fast one replica (or the nameserver itself) answered the same query.
type DNSReplicaLatency struct {
	DNSReplica
	Latency Latency `json:"latency"`
	// Errors counts queries that got no answer within the timeout.
	Errors int `json:"errors,omitempty"`
}

// DNSReplicaView is the same query asked of the nameserver and of each replica behind it, in
// turns, with caches warm.
type DNSReplicaView struct {
	// Query is the name asked: the first name's answering candidate; QueryType its type, the
	// first the application's lookups ask (A, or AAAA for --lookup-family 6; absent: A).
	Query      string              `json:"query"`
	QueryType  string              `json:"queryType,omitempty"`
	Nameserver DNSReplicaLatency   `json:"nameserver"`
	Replicas   []DNSReplicaLatency `json:"replicas"`
}

// RaceMode is how a resolver sends a lookup's A and AAAA queries over UDP.
type RaceMode string

// The ways resolvers send A and AAAA.
const (
	// RaceTogether: both at once from one socket (glibc by default, musl): through a Service's
	// DNAT the second can lose the conntrack race and be dropped.
	RaceTogether RaceMode = "together"
	// RaceSequential: one socket, AAAA once A is answered (glibc single-request).
	RaceSequential RaceMode = "single-request"
	// RaceReopen: AAAA once A is answered, from a new socket (glibc single-request-reopen).
	RaceReopen RaceMode = "single-request-reopen"
	// RaceSeparate: both at once, each from its own socket (Go).
	RaceSeparate RaceMode = "separate sockets"
	// RaceTCP: over TCP (glibc use-vc): no UDP race; not measured.
	RaceTCP RaceMode = "use-vc"
)

// DNSRaceRun is one series of lookups done one way.
type DNSRaceRun struct {
	Mode RaceMode `json:"mode"`
	// Lookups done (fewer than asked when the time budget ran out); Slow those that waited out
	// a timeout (a query lost); Lost the queries without an answer within their timeout;
	// Failed the lookups still without both answers after every attempt.
	Lookups int     `json:"lookups"`
	Slow    int     `json:"slow"`
	Lost    int     `json:"lost"`
	Failed  int     `json:"failed,omitempty"`
	Latency Latency `json:"latency"`
}

// DNSRace is the race check: lookups of one name done exactly as the resolver does them, and,
// where an option changes how it sends them, the same with that option.
type DNSRace struct {
	Name           string `json:"name"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	Attempts       int    `json:"attempts"`
	// Concurrency is how many lookups run at once, each with its own sockets, as independent
	// threads of an application would.
	Concurrency int         `json:"concurrency"`
	Measured    DNSRaceRun  `json:"measured"`
	Fix         *DNSRaceRun `json:"fix,omitempty"`
}

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
	// TrailingDotQueries and Ndots1Queries are what the model predicts per lookup with a trailing
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
