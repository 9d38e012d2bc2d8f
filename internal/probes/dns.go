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

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
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
	// Race is how many lookups the race check does (0: none).
	Race int
	// WhatIfLookupFamily adds the what-if of lookups asking for another family:
	// WhatIfBothFamilies (A and AAAA), "4" (A only) or "6" (AAAA only); "" none.
	WhatIfLookupFamily string
}

// WhatIfBothFamilies is DNSSpec.WhatIfLookupFamily for lookups of both families (A and AAAA):
// its empty value means no what-if.
const WhatIfBothFamilies = "both"

// whatIfConfig is the configuration of the lookup-family what-if, and whether there is one (none
// asked, or the same family as configured).
func (spec DNSSpec) whatIfConfig() (resolver.Config, bool) {
	c := spec.Config
	switch spec.WhatIfLookupFamily {
	case "":
		return c, false
	case WhatIfBothFamilies:
		c.LookupFamily = resolver.LookupBoth
	default:
		c.LookupFamily = spec.WhatIfLookupFamily
	}
	return c, c.LookupFamily != spec.Config.LookupFamily
}

// DNSQuery is v1alpha1.DNSQuery, a type of the reports' schema.
type DNSQuery = v1alpha1.DNSQuery

// DNSVariant is v1alpha1.DNSVariant, a type of the reports' schema.
type DNSVariant = v1alpha1.DNSVariant

// DNSName is v1alpha1.DNSName, a type of the reports' schema.
type DNSName = v1alpha1.DNSName

// DNSResult is v1alpha1.DNSResult, a type of the reports' schema.
type DNSResult = v1alpha1.DNSResult

// dnsClient sends queries and remembers each candidate's outcome.
type dnsClient struct {
	c      *dns.Client
	server string
	mu     sync.Mutex
	memo   map[string]dnsOutcome
}

// dnsOutcome is what the server said to one candidate and type: the final rcode (over TCP when
// the UDP answer was truncated) and whether the UDP answer was.
type dnsOutcome struct {
	rc        resolver.Rcode
	truncated bool
	// cname is the name the answer's CNAME for the question points to: a search candidate
	// answered with a CNAME to another candidate is the server walking the search path itself.
	cname string
}

// query asks over UDP, or over conn (TCP) when it is not nil, and remembers the outcome.
func (d *dnsClient) query(ctx context.Context, conn *dns.Conn, name, qtype string) (dnsOutcome, time.Duration, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, map[string]uint16{resolver.TypeA: dns.TypeA, resolver.TypeAAAA: dns.TypeAAAA}[qtype])
	m.RecursionDesired = true
	var r *dns.Msg
	var rtt time.Duration
	var err error
	if conn != nil {
		r, rtt, err = d.c.ExchangeWithConnContext(ctx, m, conn)
	} else {
		r, rtt, err = d.c.ExchangeContext(ctx, m, d.server)
	}
	if err != nil {
		return dnsOutcome{}, rtt, err
	}
	out := dnsOutcome{rc: rcodeOf(r), truncated: r.Truncated && conn == nil, cname: cnameOf(r, name)}
	d.mu.Lock()
	if conn != nil {
		out.truncated = d.memo[name+"/"+qtype].truncated
	}
	d.memo[name+"/"+qtype] = out
	d.mu.Unlock()
	return out, rtt, nil
}

// walk looks name up once for real, candidate by candidate, A and AAAA together (or one after
// the other with single-request), resending over TCP what the resolver resends after a
// truncated answer, stopping where the resolver would. It returns the timeline.
func (d *dnsClient) walk(ctx context.Context, k resolver.Kind, c resolver.Config, name string) ([]DNSQuery, error) {
	start := time.Now()
	var tl []DNSQuery
	for _, cand := range resolver.Candidates(k, c, name) {
		res, err := d.askUDP(ctx, start, c.SingleRequest, cand, c.QueryTypes())
		if err != nil {
			return tl, err
		}
		tl = append(tl, res...)
		rcodes := map[string]resolver.Rcode{}
		var truncated []string
		for _, q := range res {
			rcodes[q.Type] = q.Rcode
			if q.Truncated {
				truncated = append(truncated, q.Type)
			}
		}
		if resend := resolver.TCPResends(k, truncated); len(resend) > 0 {
			tcp, err := d.askTCP(ctx, start, cand, resend)
			tl = append(tl, tcp...)
			if err != nil {
				return tl, err
			}
			for _, q := range tcp {
				rcodes[q.Type] = q.Rcode
			}
		}
		if answered, stop := resolver.Stops(k, rcodes); answered || stop {
			break
		}
	}
	return tl, nil
}

// askUDP sends cand's queries of the given types (A and AAAA, or one) over UDP, together or one
// after the other, and returns them in the order sent.
func (d *dnsClient) askUDP(ctx context.Context, start time.Time, sequential bool, cand string, types []string) ([]DNSQuery, error) {
	res := make([]DNSQuery, len(types))
	errs := make([]error, len(types))
	var wg sync.WaitGroup
	for i, t := range types {
		run := func() {
			sent := time.Since(start)
			out, rtt, err := d.query(ctx, nil, cand, t)
			res[i] = DNSQuery{Name: cand, Type: t, SentMicros: micros(sent.Seconds()), RTTMicros: micros(rtt.Seconds()), Rcode: out.rc, Truncated: out.truncated}
			errs[i] = err
		}
		if sequential {
			run()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s %s to %s: %w", types[i], cand, d.server, err)
		}
	}
	sort.Slice(res, func(i, j int) bool { return res[i].SentMicros < res[j].SentMicros })
	return res, nil
}

// askTCP resends cand's queries of the given types over one TCP connection, one after the other.
func (d *dnsClient) askTCP(ctx context.Context, start time.Time, cand string, types []string) ([]DNSQuery, error) {
	tcp := *d.c
	tcp.Net = "tcp"
	conn, err := tcp.DialContext(ctx, d.server)
	if err != nil {
		return nil, fmt.Errorf("TCP to %s after a truncated answer: %w", d.server, err)
	}
	defer conn.Close()
	var res []DNSQuery
	for _, t := range types {
		sent := time.Since(start)
		out, rtt, err := d.query(ctx, conn, cand, t)
		if err != nil {
			return res, fmt.Errorf("%s %s over TCP to %s: %w", t, cand, d.server, err)
		}
		res = append(res, DNSQuery{Name: cand, Type: t, SentMicros: micros(sent.Seconds()), RTTMicros: micros(rtt.Seconds()), Rcode: out.rc, Transport: "tcp"})
	}
	return res, nil
}

// answerer answers the model from what the server said, asking it for names not seen yet (over
// TCP again when the UDP answer is truncated).
func (d *dnsClient) answerer(ctx context.Context) resolver.Answerer {
	return func(name, qtype string) resolver.Rcode {
		o, ok := d.outcome(name, qtype)
		if ok {
			return o.rc
		}
		o, _, err := d.query(ctx, nil, name, qtype)
		if err == nil && o.truncated {
			_, err = d.askTCP(ctx, time.Now(), name, []string{qtype})
			o, _ = d.outcome(name, qtype)
		}
		if err != nil {
			return resolver.ServFail
		}
		return o.rc
	}
}

// cnameOf returns the target of the answer's CNAME for name, "" without one.
func cnameOf(m *dns.Msg, name string) string {
	for _, rr := range m.Answer {
		if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, name) {
			return strings.ToLower(c.Target)
		}
	}
	return ""
}

// serverSearch says whether the server answered candidate cand of a lookup of name with a CNAME
// to a later candidate (CoreDNS autopath), and which one.
func (d *dnsClient) serverSearch(k resolver.Kind, c resolver.Config, name, cand string) (string, bool) {
	cands := resolver.Candidates(k, c, name)
	i := slices.Index(cands, cand)
	for _, t := range []string{resolver.TypeA, resolver.TypeAAAA} {
		if o, ok := d.outcome(cand, t); ok && o.cname != "" && i >= 0 && slices.Contains(cands[i+1:], o.cname) {
			return o.cname, true
		}
	}
	return "", false
}

// clientSideCount is the count of queries the resolver would send for the walk w if the server
// did not search: the candidates it answered for later ones are NXDOMAIN, the rest as asked.
func (d *dnsClient) clientSideCount(ctx context.Context, k resolver.Kind, c resolver.Config, w resolver.Walk) (found string, queries int) {
	searched := map[string]bool{}
	for _, st := range w.Steps {
		if to, ok := d.serverSearch(k, c, w.Name, st.Name); ok {
			searched[st.Name], found = true, to
		}
	}
	if found == "" {
		return "", 0
	}
	answer := d.answerer(ctx)
	walk := resolver.Simulate(k, c, w.Name, func(name, qtype string) resolver.Rcode {
		if searched[name] {
			return resolver.NXDomain
		}
		return answer(name, qtype)
	})
	return found, walk.QueryCount()
}

func (d *dnsClient) outcome(name, qtype string) (dnsOutcome, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o, ok := d.memo[name+"/"+qtype]
	return o, ok
}

// tcpResends counts, for a modelled walk, the UDP answers that came truncated and the queries
// the resolver sends again over TCP because of them.
func (d *dnsClient) tcpResends(k resolver.Kind, w resolver.Walk) (truncated, resent int) {
	for _, st := range w.Steps {
		var types []string
		for t := range st.Queries {
			if o, _ := d.outcome(st.Name, t); o.truncated {
				types = append(types, t)
			}
		}
		truncated += len(types)
		resent += len(resolver.TCPResends(k, types))
	}
	return truncated, resent
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
	d := &dnsClient{c: &dns.Client{Net: "udp", Timeout: spec.Timeout}, server: server, memo: map[string]dnsOutcome{}}
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
		if c, ok := spec.whatIfConfig(); ok {
			vs = append(vs, variant{v1alpha1.LookupFamilyLabel(c.LookupFamily), name, c})
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
			truncated, resent := d.tcpResends(spec.Resolver, w)
			queries := w.QueryCount() + resent
			searched, clientSide := d.clientSideCount(ctx, spec.Resolver, v.cfg, w)
			out.Variants = append(out.Variants, DNSVariant{
				Label: v.label, Lookup: v.lookup, Ndots: v.cfg.Ndots,
				Queries: queries, NXDomains: w.NXDomainCount(), AnsweredBy: w.Answered,
				Truncated: truncated, TCPQueries: resent, ServerSearch: searched, ClientSideQueries: clientSide,
				Amplification: float64(queries) / float64(len(v.cfg.QueryTypes())), Warm: LatencyFromSamples(samples),
			})
		}
		res.Names = append(res.Names, out)
	}
	if len(spec.Replicas) > 0 {
		res.ReplicaView = timeReplicas(ctx, d.c, spec.Config.Nameservers[0], spec.Replicas, replicaQuery(res), spec.Config.QueryTypes()[0], spec.Repeats)
	}
	if spec.Race > 0 && len(spec.Config.QueryTypes()) > 1 { // one type per lookup: nothing to race
		res.Race = runRace(ctx, spec.Resolver, spec.Config, server, replicaQuery(res), min(spec.Race, MaxRaceLookups))
	}
	return res, ctx.Err()
}
