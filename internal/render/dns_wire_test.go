package render

import (
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// A lookup that went over TCP gets its own timeline with a transport column and the truncated
// answer marked; the counts say how many queries were resent and that musl's depend on its version.
func TestWriteTruncationAndTimelines(t *testing.T) {
	names := []probes.DNSName{
		{Name: "a.example", Timeline: []probes.DNSQuery{{Name: "a.example.ns.", Type: "A", Rcode: resolver.NXDomain}, {Name: "a.example.ns.", Type: "AAAA", Rcode: resolver.NXDomain}, {Name: "a.example.", Type: "A", Rcode: resolver.NoError}}},
		{Name: "big.example", Timeline: []probes.DNSQuery{
			{Name: "big.example.", Type: "A", SentMicros: 10, RTTMicros: 300, Rcode: resolver.NoError, Truncated: true},
			{Name: "big.example.", Type: "A", SentMicros: 400, RTTMicros: 900, Rcode: resolver.NoError, Transport: "tcp"},
		}, Variants: []probes.DNSVariant{{Label: "as configured", Queries: 3, Truncated: 1, TCPQueries: 1}}},
	}
	var b strings.Builder
	writeTimelines(&b, names)
	out := b.String()
	for _, want := range []string{
		"Timeline of one cold lookup of a.example\n", "query  type  answer after", // the most queries, no transport column
		"Timeline of one cold lookup of big.example\n", "over  answer after", "udp        300 µs  NOERROR (truncated)", "tcp        900 µs              NOERROR",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timelines lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(strings.Split(out, "big.example")[0], "over") {
		t.Errorf("a timeline without TCP has a transport column:\n%s", out)
	}
	b.Reset()
	writeTruncation(&b, &probes.DNSResult{Resolver: resolver.Musl, Names: names})
	if want := "big.example (as configured): truncated UDP answers (over 512 bytes) 1, queries sent again over TCP 1 (counted above) (musl 1.2.4 and later; earlier musl keeps the truncated answer)\n"; !strings.Contains(b.String(), want) || strings.Contains(b.String(), "a.example") {
		t.Errorf("truncation lines:\n%s\nwant %q alone", b.String(), want)
	}
}

// A name the server searched for gets one line saying so, with what the resolver alone sends.
func TestWriteServerSearch(t *testing.T) {
	names := []probes.DNSName{{Name: "example.com", Variants: []probes.DNSVariant{
		{Label: "as configured", Queries: 2, AnsweredBy: "example.com.ns.svc.cluster.local.", ServerSearch: "example.com.", ClientSideQueries: 8},
		{Label: "trailing dot", Queries: 2, AnsweredBy: "example.com."},
	}}}
	var b strings.Builder
	writeServerSearch(&b, names)
	want := "  example.com (as configured): the server walked the search path itself (CoreDNS autopath): it answered example.com.ns.svc.cluster.local. with a CNAME to example.com. — 2 queries on the wire, where the resolver alone would send 8\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// The node-local cache's line, and the what-if without one: on the pod's node, or the zone's best.
func TestWriteNodeLocal(t *testing.T) {
	for _, tc := range []struct {
		c    report.NodeLocalDNS
		want string
	}{
		{report.NodeLocalDNS{State: report.NodeLocalInUse, Basis: "the pod's nameserver 169.254.20.10 is link-local: a cache on its node"},
			"  NodeLocal DNSCache: in use — the pod's nameserver 169.254.20.10 is link-local: a cache on its node\n"},
		{report.NodeLocalDNS{State: report.NodeLocalNotInUse, Basis: "no cache", ServiceP50Micros: 2100, NearestReplica: "coredns-a", NearestP50Micros: 400, SameNode: true},
			"  NodeLocal DNSCache: not in use — no cache\n  what if: replica coredns-a on this node answered in p50 400 µs, the Service in 2.10 ms (−1.70 ms per query): a node-local cache answers at least as close\n"},
		{report.NodeLocalDNS{State: report.NodeLocalNotInUse, Basis: "no cache", ServiceP50Micros: 2100, NearestReplica: "coredns-b", NearestP50Micros: 600},
			"  NodeLocal DNSCache: not in use — no cache\n  what if: no replica runs on this node to measure a node-local cache by; the fastest in the pod's zone, coredns-b, answered in p50 600 µs, the Service in 2.10 ms (−1.50 ms per query)\n"},
	} {
		var b strings.Builder
		writeNodeLocal(&b, &tc.c)
		if b.String() != tc.want {
			t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
		}
	}
}
