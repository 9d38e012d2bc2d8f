package probes

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// raceServer answers A and AAAA on addr:53 after raceHold, but drops an AAAA query that arrives
// from a source port whose earlier query is still unanswered — what the conntrack race does to
// the second of two queries sent at once from one socket through a DNAT. It returns how many it
// dropped.
func raceServer(t *testing.T, addr string) *atomic.Int64 {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr+":53")
	if err != nil {
		t.Fatalf("listening on %s:53: %v", addr, err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	var mu sync.Mutex
	pending := map[string]int{}
	dropped := new(atomic.Int64)
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			mu.Lock()
			if q.Question[0].Qtype == dns.TypeAAAA && pending[from.String()] > 0 {
				dropped.Add(1)
				mu.Unlock()
				continue
			}
			pending[from.String()]++
			mu.Unlock()
			time.AfterFunc(raceHold, func() {
				r := new(dns.Msg)
				r.SetReply(q)
				b, _ := r.Pack()
				mu.Lock()
				pending[from.String()]--
				mu.Unlock()
				_, _ = pc.WriteTo(b, from)
			})
		}
	}()
	return dropped
}

// raceHold is how long the race server holds an answer: the window in which a second query from
// the same source is dropped. 2 ms once, and under make test's load (2 cores, every package's
// tests at once) one of 16 AAAAs sent with their A reached the server after its A was answered.
const raceHold = 50 * time.Millisecond

// Lookups done as each resolver sends them: glibc's and musl's A and AAAA at once from one
// socket lose the AAAA every time here and wait out a timeout (glibc 1 s, musl 1 s ÷ 2 attempts),
// the retry answered; with single-request-reopen, single-request or Go's separate sockets none
// is lost. For glibc the check measures the fix too.
func TestDNSRaceCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a DNS server on port 53 of a loopback address")
	}
	dropped := raceServer(t, "127.0.0.8")
	conf := func(opts string) resolver.Config {
		return resolver.ParseResolvConf("nameserver 127.0.0.8\noptions timeout:1 attempts:2 " + opts + "\n")
	}
	const n = 16
	for _, tc := range []struct {
		name      string
		k         resolver.Kind
		c         resolver.Config
		mode      RaceMode
		slow      int
		minTook   time.Duration
		fix       bool
		fixedSlow int
	}{
		{"glibc", resolver.Glibc, conf(""), RaceTogether, n, time.Second, true, 0},
		{"musl", resolver.Musl, conf(""), RaceTogether, n, 500 * time.Millisecond, false, 0},
		{"glibc single-request-reopen", resolver.Glibc, conf("single-request-reopen"), RaceReopen, 0, 0, false, 0},
		{"glibc single-request", resolver.Glibc, conf("single-request"), RaceSequential, 0, 0, false, 0},
		{"go", resolver.Go, conf(""), RaceSeparate, 0, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runRace(context.Background(), tc.k, tc.c, "127.0.0.8:53", "race.test.", n)
			m := r.Measured
			t.Logf("%s: %d lookups, %d slow, %d lost, p50 %.0f µs, max %.0f µs", m.Mode, m.Lookups, m.Slow, m.Lost, m.Latency.P50Micros, m.Latency.MaxMicros)
			if m.Mode != tc.mode || m.Lookups != n || m.Slow != tc.slow || m.Lost != tc.slow || m.Failed != 0 {
				t.Errorf("measured %+v: want %s, %d lookups, %d slow and lost", m, tc.mode, n, tc.slow)
			}
			if tc.slow > 0 && time.Duration(m.Latency.MinMicros*1e3) < tc.minTook {
				t.Errorf("fastest lookup %.0f µs: a lost query waits at least %s", m.Latency.MinMicros, tc.minTook)
			}
			if (r.Fix != nil) != tc.fix || (r.Fix != nil && (r.Fix.Mode != RaceReopen || r.Fix.Slow != tc.fixedSlow || r.Fix.Lookups != n)) {
				t.Errorf("fix %+v: want one with single-request-reopen: %t", r.Fix, tc.fix)
			}
		})
	}
	if dropped.Load() < 2*n {
		t.Errorf("the server dropped %d queries", dropped.Load())
	}
}
