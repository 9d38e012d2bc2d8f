package probes

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/resolver"
)

// DNSSpec configures the active DNS amplification probe: every name is looked up the way the
// resolver walks it, with real queries to the configured nameserver.
type DNSSpec struct {
	Names    []string
	Resolver resolver.Kind
	Config   resolver.Config
	// Repeats is the number of warm lookups timed per name and per what-if (default 20).
	Repeats int
	// WhatIfNdots adds what-ifs with these ndots values (1 and 2 are always there).
	WhatIfNdots []int
	// Timeout per query (default: the resolver's timeout, at most 2 s).
	Timeout time.Duration
	// Replicas are the servers behind the nameserver, each asked the same query directly.
	Replicas []DNSReplica
}

// DNSQuery is one query of a cold lookup's timeline.
type DNSQuery struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// SentMicros is when it was sent, from the start of the lookup; RTTMicros how long the
	// answer took.
	SentMicros float64        `json:"sentMicros"`
	RTTMicros  float64        `json:"rttMicros"`
	Rcode      resolver.Rcode `json:"rcode"`
}

// DNSVariant is one way of looking a name up (as configured, or a what-if).
type DNSVariant struct {
	Label string `json:"label"`
	// Lookup is the name as the application passes it (a trailing dot for that what-if).
	Lookup string `json:"lookup"`
	Ndots  int    `json:"ndots"`
	// Queries the resolver sends for one lookup, retries included; NXDomains how many of
	// them come back NXDOMAIN; AnsweredBy the candidate that answered ("" = lookup failed).
	Queries    int    `json:"queries"`
	NXDomains  int    `json:"nxdomains"`
	AnsweredBy string `json:"answeredBy,omitempty"`
	// Amplification is Queries ÷ 2 (the minimum: one A and one AAAA query).
	Amplification float64 `json:"amplification"`
	// Warm is the latency of whole lookups (every candidate, as the resolver walks them) over
	// Repeats runs, with caches warm.
	Warm Latency `json:"warm"`
}

// DNSName is the report for one name.
type DNSName struct {
	Name string `json:"name"`
	// Timeline is the cold lookup, query by query.
	Timeline []DNSQuery   `json:"timeline"`
	Variants []DNSVariant `json:"variants"`
}

// DNSResult is the outcome of the DNS probe.
type DNSResult struct {
	Resolver   resolver.Kind   `json:"resolver"`
	Nameserver string          `json:"nameserver"`
	Config     resolver.Config `json:"config"`
	Repeats    int             `json:"repeats"`
	Names      []DNSName       `json:"names"`
	// ReplicaView is the nameserver and each replica behind it asked the same query (when the
	// replicas were given).
	ReplicaView *DNSReplicaView `json:"replicaView,omitempty"`
}

// dnsClient sends queries and remembers each candidate's outcome.
type dnsClient struct {
	c      *dns.Client
	server string
	mu     sync.Mutex
	memo   map[string]resolver.Rcode
}

func (d *dnsClient) query(ctx context.Context, name, qtype string) (resolver.Rcode, time.Duration, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, map[string]uint16{resolver.TypeA: dns.TypeA, resolver.TypeAAAA: dns.TypeAAAA}[qtype])
	m.RecursionDesired = true
	r, rtt, err := d.c.ExchangeContext(ctx, m, d.server)
	if err != nil {
		return "", rtt, err
	}
	rc := resolver.NoData
	switch r.Rcode {
	case dns.RcodeNameError:
		rc = resolver.NXDomain
	case dns.RcodeSuccess:
		for _, a := range r.Answer {
			if t := a.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
				rc = resolver.NoError
			}
		}
	default:
		rc = resolver.ServFail
	}
	d.mu.Lock()
	d.memo[name+"/"+qtype] = rc
	d.mu.Unlock()
	return rc, rtt, nil
}

// walk looks name up once for real, candidate by candidate, A and AAAA together (or one after
// the other with single-request), stopping where the resolver would. It returns the timeline.
func (d *dnsClient) walk(ctx context.Context, k resolver.Kind, c resolver.Config, name string) ([]DNSQuery, error) {
	start := time.Now()
	var tl []DNSQuery
	for _, cand := range resolver.Candidates(k, c, name) {
		rcodes := map[string]resolver.Rcode{}
		types := []string{resolver.TypeA, resolver.TypeAAAA}
		res := make([]DNSQuery, len(types))
		errs := make([]error, len(types))
		var wg sync.WaitGroup
		for i, t := range types {
			run := func() {
				sent := time.Since(start)
				rc, rtt, err := d.query(ctx, cand, t)
				res[i] = DNSQuery{Name: cand, Type: t, SentMicros: round3(float64(sent) / 1e3), RTTMicros: round3(float64(rtt) / 1e3), Rcode: rc}
				errs[i] = err
			}
			if c.SingleRequest {
				run()
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); run() }()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return tl, fmt.Errorf("%s %s to %s: %w", types[i], cand, d.server, err)
			}
			rcodes[types[i]] = res[i].Rcode
		}
		sort.Slice(res, func(i, j int) bool { return res[i].SentMicros < res[j].SentMicros })
		tl = append(tl, res...)
		if answered, stop := resolver.Stops(k, rcodes); answered || stop {
			break
		}
	}
	return tl, nil
}

// answerer answers the model from what the server said, asking it for names not seen yet.
func (d *dnsClient) answerer(ctx context.Context) resolver.Answerer {
	return func(name, qtype string) resolver.Rcode {
		d.mu.Lock()
		rc, ok := d.memo[name+"/"+qtype]
		d.mu.Unlock()
		if ok {
			return rc
		}
		rc, _, err := d.query(ctx, name, qtype)
		if err != nil {
			return resolver.ServFail
		}
		return rc
	}
}

// DNSAmplification runs the DNS probe.
func DNSAmplification(ctx context.Context, spec DNSSpec) (*DNSResult, error) {
	if len(spec.Names) == 0 {
		return nil, fmt.Errorf("dns probe: no names")
	}
	if len(spec.Config.Nameservers) == 0 {
		return nil, fmt.Errorf("dns probe: resolv.conf has no nameserver")
	}
	if spec.Repeats <= 0 {
		spec.Repeats = 20
	}
	if spec.Timeout <= 0 {
		spec.Timeout = min(time.Duration(max(spec.Config.TimeoutSeconds, 1))*time.Second, 2*time.Second)
	}
	server := net.JoinHostPort(spec.Config.Nameservers[0], "53")
	d := &dnsClient{c: &dns.Client{Net: "udp", Timeout: spec.Timeout}, server: server, memo: map[string]resolver.Rcode{}}
	res := &DNSResult{Resolver: spec.Resolver, Nameserver: server, Config: spec.Config, Repeats: spec.Repeats}

	ndots := []int{1, 2}
	for _, n := range spec.WhatIfNdots {
		if n != spec.Config.Ndots && !slices.Contains(ndots, n) {
			ndots = append(ndots, n)
		}
	}
	for _, name := range spec.Names {
		out := DNSName{Name: name}
		tl, err := d.walk(ctx, spec.Resolver, spec.Config, name)
		if err != nil {
			return nil, err
		}
		out.Timeline = tl
		type variant struct {
			label, lookup string
			cfg           resolver.Config
		}
		vs := []variant{{"as configured", name, spec.Config}}
		if !strings.HasSuffix(name, ".") {
			vs = append(vs, variant{"trailing dot", name + ".", spec.Config})
		}
		for _, n := range ndots {
			if n == spec.Config.Ndots {
				continue
			}
			c := spec.Config
			c.Ndots = n
			vs = append(vs, variant{"ndots:" + strconv.Itoa(n), name, c})
		}
		for _, v := range vs {
			w := resolver.Simulate(spec.Resolver, v.cfg, v.lookup, d.answerer(ctx))
			var samples []time.Duration
			for i := 0; i < spec.Repeats; i++ {
				t0 := time.Now()
				if _, err := d.walk(ctx, spec.Resolver, v.cfg, v.lookup); err != nil {
					return nil, err
				}
				samples = append(samples, time.Since(t0))
			}
			out.Variants = append(out.Variants, DNSVariant{
				Label: v.label, Lookup: v.lookup, Ndots: v.cfg.Ndots,
				Queries: w.QueryCount(), NXDomains: w.NXDomainCount(), AnsweredBy: w.Answered,
				Amplification: float64(w.QueryCount()) / 2, Warm: LatencyFromSamples(samples),
			})
		}
		res.Names = append(res.Names, out)
	}
	if len(spec.Replicas) > 0 {
		res.ReplicaView = timeReplicas(ctx, d.c, spec.Config.Nameservers[0], spec.Replicas, replicaQuery(res), spec.Repeats)
	}
	return res, ctx.Err()
}
