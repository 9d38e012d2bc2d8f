package probes

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// autopathServer answers as CoreDNS with autopath does for a pod of namespace ns: the first
// search candidate of any name gets the answer of the first candidate that exists, behind a
// CNAME to it; the other candidates are answered as they are. Only x.test. exists (A only).
func autopathServer(t *testing.T, addr string) {
	t.Helper()
	first := ".ns.svc.cluster.local."
	serveDNS(t, addr, "udp", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		target := q.Name
		if base, ok := strings.CutSuffix(q.Name, first); ok {
			target = base + "."
			if target != "x.test." {
				target = q.Name // nothing exists: the plain NXDOMAIN
			} else {
				rr, _ := dns.NewRR(q.Name + " 5 IN CNAME " + target)
				m.Answer = append(m.Answer, rr)
			}
		}
		switch {
		case target != "x.test.":
			m.Answer, m.Rcode = nil, dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR(target + " 5 IN A 10.0.0.7")
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})
}

// When the server walks the search path itself, the count is what the resolver really sends
// (one candidate, 2 queries), and the report says which name the server answered for and what
// the resolver would have sent without it (3 search domains: 6 NXDOMAIN, then 2).
func TestDNSServerSideSearch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a DNS server on port 53 of a loopback address")
	}
	autopathServer(t, "127.0.0.7")
	cfg := resolver.Config{Nameservers: []string{"127.0.0.7"}, Search: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Ndots: 5, TimeoutSeconds: 1, Attempts: 1}
	r, err := DNSAmplification(context.Background(), DNSSpec{Names: []string{"x.test", "y.test"}, Resolver: resolver.Glibc, Config: cfg, Repeats: 2, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	x := r.Names[0].Variants[0]
	if x.Queries != 2 || x.ServerSearch != "x.test." || x.ClientSideQueries != 8 || x.AnsweredBy != "x.test.ns.svc.cluster.local." {
		t.Errorf("x.test as configured %+v: want 2 queries, the server answering for x.test. (8 without)", x)
	}
	if dot := r.Names[0].Variants[1]; dot.Label != "trailing dot" || dot.ServerSearch != "" || dot.Queries != 2 {
		t.Errorf("x.test. %+v: no search, no server-side search", dot)
	}
	if y := r.Names[1].Variants[0]; y.Queries != 8 || y.ServerSearch != "" || y.ClientSideQueries != 0 {
		t.Errorf("y.test (exists nowhere) %+v: want 8 queries, no server-side search", y)
	}
}
