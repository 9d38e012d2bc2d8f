package probes

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// bigServer serves big.test. with 40 A records (about 680 bytes) on addr:53 over UDP and TCP,
// truncated to 512 bytes over UDP as real servers do; every other name is NXDOMAIN. It counts
// the queries per transport.
func bigServer(t *testing.T, addr string) map[string]*atomic.Int64 {
	t.Helper()
	counts := map[string]*atomic.Int64{"udp": new(atomic.Int64), "tcp": new(atomic.Int64)}
	for _, network := range []string{"udp", "tcp"} {
		serveDNS(t, addr, network, func(w dns.ResponseWriter, r *dns.Msg) {
			counts[network].Add(1)
			m := new(dns.Msg)
			m.SetReply(r)
			q := r.Question[0]
			switch {
			case q.Name != "big.test.":
				m.Rcode = dns.RcodeNameError
			case q.Qtype == dns.TypeA:
				for i := 1; i <= 40; i++ {
					rr, _ := dns.NewRR(fmt.Sprintf("big.test. 5 IN A 10.0.1.%d", i))
					m.Answer = append(m.Answer, rr)
				}
			}
			if network == "udp" {
				m.Truncate(dns.MinMsgSize)
			}
			_ = w.WriteMsg(m)
		})
	}
	return counts
}

// A truncated UDP answer is resent over TCP the way each resolver does (glibc both queries of
// the candidate, Go only the truncated one): the timeline shows the TC answer and the TCP
// queries, and the counts include them — as many as the server saw per lookup.
func TestDNSTruncatedAnswerRetriedOverTCP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a DNS server on port 53 of a loopback address")
	}
	counts := bigServer(t, "127.0.0.6")
	cfg := resolver.Config{Nameservers: []string{"127.0.0.6"}, Search: []string{"ns.svc.cluster.local"}, Ndots: 5, TimeoutSeconds: 1, Attempts: 1}
	for k, want := range map[resolver.Kind][2]int{resolver.Glibc: {6, 2}, resolver.Go: {5, 1}} {
		counts["udp"].Store(0)
		counts["tcp"].Store(0)
		r, err := DNSAmplification(context.Background(), DNSSpec{Names: []string{"big.test"}, Resolver: k, Config: cfg, Repeats: 3, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var tc, tcp int
		for _, q := range r.Names[0].Timeline {
			if q.Truncated {
				tc++
			}
			if q.Transport == "tcp" {
				tcp++
				if q.Rcode == resolver.ServFail || q.Name != "big.test." {
					t.Errorf("%s: TCP query %+v", k, q)
				}
			}
		}
		if tc != 1 || tcp != want[1] || len(r.Names[0].Timeline) != want[0] {
			t.Errorf("%s timeline %+v: want %d queries, 1 truncated, %d over TCP", k, r.Names[0].Timeline, want[0], want[1])
		}
		v := r.Names[0].Variants[0]
		if v.Label != "as configured" || v.Queries != want[0] || v.Truncated != 1 || v.TCPQueries != want[1] || v.AnsweredBy != "big.test." {
			t.Errorf("%s as configured: %+v; want %d queries, 1 truncated, %d over TCP", k, v, want[0], want[1])
		}
		// The cold walk, 3 warm ones and the model's questions: the server saw whole lookups'
		// worth of TCP queries, and one TCP query per UDP query truncated (Go) or per pair (glibc).
		if n := counts["tcp"].Load(); n%int64(want[1]) != 0 || n < 4*int64(want[1]) {
			t.Errorf("%s: the server saw %d TCP and %d UDP queries", k, counts["tcp"].Load(), counts["udp"].Load())
		}
	}
}

// framed is m packed with its 2-byte length, as DNS over TCP carries it.
func framed(t *testing.T, name string, id uint16) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.Id = id
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{byte(len(b) >> 8), byte(len(b))}, b...)
}

// Messages come back whole and once each, however the segments cut them: split anywhere,
// two in one segment, retransmitted in whole or in part; a gap loses only what it cut.
func TestTCPReassembly(t *testing.T) {
	flow := tcpFlow{netip.MustParseAddrPort("10.0.0.1:40000"), netip.MustParseAddrPort("10.96.0.10:53")}
	a, b, c := framed(t, "a.test.", 1), framed(t, "b.test.", 2), framed(t, "c.test.", 3)
	stream := append(append(append([]byte(nil), a...), b...), c...)
	const isn = 0xfffffff0 // sequence numbers wrap inside the stream
	seg := func(from, to int) tcpSegment {
		return tcpSegment{flow: flow, seq: uint32(isn + 1 + from), payload: stream[from:to]}
	}
	ids := func(msgs [][]byte) []uint16 {
		var out []uint16
		for _, b := range msgs {
			var m dns.Msg
			if err := m.Unpack(b); err != nil {
				t.Fatalf("a reassembled message does not unpack: %v", err)
			}
			out = append(out, m.Id)
		}
		return out
	}
	r := newTCPReassembler()
	var got []uint16
	got = append(got, ids(r.Segment(tcpSegment{flow: flow, seq: isn, syn: true}))...)
	for _, s := range []tcpSegment{seg(0, 1), seg(1, 7), seg(0, 7), seg(5, len(a)+3), seg(len(a)+3, len(stream))} {
		got = append(got, ids(r.Segment(s))...)
	}
	got = append(got, ids(r.Segment(seg(0, len(stream))))...) // everything again
	if diff := cmp.Diff([]uint16{1, 2, 3}, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}

	r = newTCPReassembler()
	r.Segment(tcpSegment{flow: flow, seq: isn, syn: true})
	got = ids(r.Segment(seg(0, 5)))
	got = append(got, ids(r.Segment(seg(len(a), len(stream))))...) // a's tail was lost
	if diff := cmp.Diff([]uint16{2, 3}, got); diff != "" || r.Lost != 1 {
		t.Errorf("after a gap, lost %d (-want +got):\n%s", r.Lost, diff)
	}
	r.Segment(tcpSegment{flow: flow, seq: uint32(isn + 1 + len(stream)), end: true})
	if len(r.streams) != 0 {
		t.Errorf("%d streams kept after FIN", len(r.streams))
	}
}

// However many connections a pod opens, the reassembly keeps at most maxTCPStreams.
func TestTCPReassemblyBounded(t *testing.T) {
	r := newTCPReassembler()
	for i := range 3 * maxTCPStreams {
		src := netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), uint16(i))
		r.Segment(tcpSegment{flow: tcpFlow{src, netip.MustParseAddrPort("10.96.0.10:53")}, seq: 1, payload: []byte{0, 200, 1}})
	}
	if len(r.streams) > maxTCPStreams || r.Lost != 2*maxTCPStreams {
		t.Errorf("%d streams kept, %d lost", len(r.streams), r.Lost)
	}
}

// Unfinished messages of the largest size on every stream the table holds (what segments
// nobody asked for can send): the bytes buffered stay within maxTCPTotal, and a message that
// then arrives whole on a stream of its own still comes back.
func TestTCPReassemblyBytesBounded(t *testing.T) {
	r := newTCPReassembler()
	dst := netip.MustParseAddrPort("10.96.0.10:53")
	junk := append([]byte{0xff, 0xff}, make([]byte, 60000)...)
	for i := range maxTCPStreams {
		src := netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), uint16(i))
		r.Segment(tcpSegment{flow: tcpFlow{src, dst}, seq: 1, payload: junk})
		if r.buffered > maxTCPTotal {
			t.Fatalf("%d bytes buffered after %d streams, bound %d", r.buffered, i+1, maxTCPTotal)
		}
	}
	held := 0
	for _, st := range r.streams {
		held += len(st.buf)
	}
	if held != r.buffered || held > maxTCPTotal {
		t.Errorf("streams hold %d bytes, counted %d, bound %d", held, r.buffered, maxTCPTotal)
	}
	flow := tcpFlow{netip.MustParseAddrPort("10.0.0.1:40000"), dst}
	msgs := r.Segment(tcpSegment{flow: flow, seq: 1, payload: framed(t, "a.test.", 7)})
	if len(msgs) != 1 {
		t.Errorf("a whole message after the flood: %d messages back", len(msgs))
	}
	t.Logf("%d streams, %d bytes buffered, %d given up", len(r.streams), r.buffered, r.Lost)
}

// A glibc lookup whose A answer came truncated: the TC answer, then both queries again over
// TCP, fold into one lookup of 6 queries (1 truncated, 2 over TCP).
func TestFoldTruncatedThenTCP(t *testing.T) {
	w := newWire(resolver.Glibc)
	q := func(tcp bool, id uint16, name, typ string) {
		if tcp {
			w.f.QueryTCP(w.at, id, name, typ)
		} else {
			w.f.Query(w.at, id, name, typ)
		}
	}
	for round := range 3 {
		base := uint16(round * 10)
		q(false, base+1, "big.test.ns.svc.cluster.local.", resolver.TypeA)
		q(false, base+2, "big.test.ns.svc.cluster.local.", resolver.TypeAAAA)
		w.tick(time.Millisecond)
		w.f.Answer(w.at, base+1, "big.test.ns.svc.cluster.local.", resolver.TypeA, resolver.NXDomain)
		w.f.Answer(w.at, base+2, "big.test.ns.svc.cluster.local.", resolver.TypeAAAA, resolver.NXDomain)
		for _, s := range []string{"svc.cluster.local.", "cluster.local."} {
			q(false, base+3, "big.test."+s, resolver.TypeA)
			q(false, base+4, "big.test."+s, resolver.TypeAAAA)
			w.tick(time.Millisecond)
			w.f.Answer(w.at, base+3, "big.test."+s, resolver.TypeA, resolver.NXDomain)
			w.f.Answer(w.at, base+4, "big.test."+s, resolver.TypeAAAA, resolver.NXDomain)
		}
		q(false, base+5, "big.test.", resolver.TypeA)
		q(false, base+6, "big.test.", resolver.TypeAAAA)
		w.tick(time.Millisecond)
		w.f.Truncated(w.at, base+5, "big.test.", resolver.TypeA)
		w.f.Answer(w.at, base+6, "big.test.", resolver.TypeAAAA, resolver.NoData)
		q(true, base+7, "big.test.", resolver.TypeA)
		q(true, base+8, "big.test.", resolver.TypeAAAA)
		w.tick(time.Millisecond)
		w.f.Answer(w.at, base+7, "big.test.", resolver.TypeA, resolver.NoError)
		w.f.Answer(w.at, base+8, "big.test.", resolver.TypeAAAA, resolver.NoData)
		w.tick(time.Second)
	}
	n := byName(w.f.Names())["big.test"]
	if n.Lookups != 3 || n.Queries != 30 || n.Truncated != 3 || n.TCPQueries != 6 || n.AnsweredBy != "big.test." || len(w.f.Names()) != 1 {
		t.Errorf("folded %+v (all %d names): want 3 lookups of 10 queries, 1 truncated and 2 over TCP each", n, len(w.f.Names()))
	}
}
