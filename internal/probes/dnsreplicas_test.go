package probes

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// dnsServer answers every A query on addr:53 (UDP) after delay; it needs root for port 53. It
// returns the median of how long it really slept (a loaded machine oversleeps).
func dnsServer(t *testing.T, addr string, delay time.Duration) func() time.Duration {
	t.Helper()
	var mu sync.Mutex
	var slept []time.Duration
	serveDNS(t, addr, "udp", func(w dns.ResponseWriter, r *dns.Msg) {
		t0 := time.Now()
		time.Sleep(delay)
		mu.Lock()
		slept = append(slept, time.Since(t0))
		mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(r)
		rr, _ := dns.NewRR(r.Question[0].Name + " 5 IN A 10.0.0.1")
		m.Answer = append(m.Answer, rr)
		_ = w.WriteMsg(m)
	})
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		s := slices.Clone(slept)
		slices.Sort(s)
		if len(s) == 0 {
			return 0
		}
		return s[len(s)/2]
	}
}

// serveDNS serves h on addr:53 over network ("udp" or "tcp") until the test ends.
func serveDNS(t *testing.T, addr, network string, h dns.HandlerFunc) {
	t.Helper()
	started := make(chan struct{})
	s := &dns.Server{Addr: addr + ":53", Net: network, Handler: h, NotifyStartedFunc: func() { close(started) }}
	errs := make(chan error, 1)
	go func() { errs <- s.ListenAndServe() }()
	select {
	case <-started:
	case err := <-errs:
		t.Fatalf("DNS server on %s/%s: %v", addr, network, err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
}

// Each replica is asked directly and timed apart from the others: a replica 2 ms slower than
// the rest shows those 2 ms, the warm-up round is not counted, and a replica that never answers
// is given up after 3 queries.
func TestTimeReplicas(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: DNS servers on port 53 of loopback addresses")
	}
	dnsServer(t, "127.0.0.2", 0)
	dnsServer(t, "127.0.0.3", 0)
	slept := dnsServer(t, "127.0.0.4", 2*time.Millisecond)
	c := &dns.Client{Net: "udp", Timeout: 100 * time.Millisecond}
	replicas := []DNSReplica{{Address: "127.0.0.3", Zone: "zone-a"}, {Address: "127.0.0.4", Zone: "zone-b"}, {Address: "127.0.0.5", Zone: "zone-c"}}
	v := timeReplicas(context.Background(), c, "127.0.0.2", replicas, "kubernetes.default.svc.cluster.local", "A", 20)
	if v.Query != "kubernetes.default.svc.cluster.local." || v.Nameserver.Address != "127.0.0.2" || len(v.Replicas) != 3 {
		t.Fatalf("view %+v", v)
	}
	near, far, dead := v.Replicas[0], v.Replicas[1], v.Replicas[2]
	if near.Latency.Count != 20 || far.Latency.Count != 20 || v.Nameserver.Latency.Count != 20 {
		t.Errorf("counts %d %d %d, want 20 each (the warm-up round left out)", v.Nameserver.Latency.Count, near.Latency.Count, far.Latency.Count)
	}
	// The far one is slower by what its server really slept (2 ms, more on a loaded machine),
	// once: not less, and not twice (a query timed twice, the warm-up counted).
	want := float64(slept().Microseconds())
	if d := far.Latency.P50Micros - near.Latency.P50Micros; d < 1900 || d > want+1000 {
		t.Errorf("far p50 %.0f µs, near %.0f µs: want the far one slower by its server's sleep (p50 %.0f µs)", far.Latency.P50Micros, near.Latency.P50Micros, want)
	}
	if dead.Errors != 3 || dead.Latency.Count != 0 || far.Zone != "zone-b" {
		t.Errorf("dead replica %+v, far %+v", dead, far)
	}
}

// The replicas are asked the type the application's lookups ask first: AAAA for a lookup of
// IPv6 addresses alone (--lookup-family 6), A otherwise.
func TestTimeReplicasAsksTheLookupsType(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: DNS servers on port 53 of loopback addresses")
	}
	var mu sync.Mutex
	asked := map[string]int{}
	serveDNS(t, "127.0.0.6", "udp", func(w dns.ResponseWriter, r *dns.Msg) {
		mu.Lock()
		asked[dns.TypeToString[r.Question[0].Qtype]]++
		mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(r)
		_ = w.WriteMsg(m)
	})
	c := &dns.Client{Net: "udp", Timeout: 100 * time.Millisecond}
	for _, qtype := range []string{"AAAA", "A"} {
		v := timeReplicas(context.Background(), c, "127.0.0.6", nil, "kubernetes.default.svc.cluster.local", qtype, 5)
		mu.Lock()
		if v.QueryType != qtype || asked[qtype] != 6 || len(asked) != 1 {
			t.Errorf("asked for %s: the view says %q, the server saw %v (want 6 %s, the warm-up with them)", qtype, v.QueryType, asked, qtype)
		}
		clear(asked)
		mu.Unlock()
	}
}

func TestReplicaQuery(t *testing.T) {
	r := &DNSResult{Names: []DNSName{{Name: "kubernetes.default", Variants: []DNSVariant{{AnsweredBy: "kubernetes.default.svc.cluster.local."}}}}}
	if q := replicaQuery(r); q != "kubernetes.default.svc.cluster.local." {
		t.Errorf("query %q", q)
	}
	r.Names[0].Variants[0].AnsweredBy = ""
	if q := replicaQuery(r); q != "kubernetes.default." {
		t.Errorf("query %q when nothing answered", q)
	}
}
