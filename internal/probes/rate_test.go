package probes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// rateServer serves tcp-rr and tcp-crr connections on loopback for token "tok".
func rateServer(t *testing.T) string {
	return magicServer(t, RateMagic, "tok", func(c net.Conn, r *bufio.Reader, admit func(string) error) error {
		return ServeRate(context.Background(), c, r, admit)
	})
}

// Every transaction of a closed loop is counted and timed: the rate equals the clients ÷ the
// mean latency (Little's law, no gaps between transactions) within 5 %, and the percentiles
// are exact.
//
// A client whose thread another process preempts between two transactions leaves a gap that
// is not ours (on a 2-CPU machine with six busy processes: up to 5.9 % of a round, median 1.8 %);
// such gaps only ever lower the rate, while a transaction left uncounted does in every round.
// So a rate below the law's is judged on the best of up to three rounds; one above it (a
// transaction counted twice, or timed short) fails at once.
func TestRateProbesOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		clients int // one alone waits in blocking reads
	}{{v1alpha1.ProbeTCPRR, 4}, {v1alpha1.ProbeTCPRR, 1}, {v1alpha1.ProbeTCPCRR, 4}} {
		kind := tc.kind
		t.Run(fmt.Sprintf("%s/%d", kind, tc.clients), func(t *testing.T) {
			waitForNoWaiters(t)
			spec := RateSpec{Token: "tok", Connections: tc.clients, Duration: 300 * time.Millisecond, RequestBytes: 100, ResponseBytes: 2000}
			run := map[string]func(context.Context, RateSpec) (*RateResult, error){v1alpha1.ProbeTCPRR: TCPRR, v1alpha1.ProbeTCPCRR: TCPCRR}[kind]
			var r *RateResult
			for round := range 3 {
				// A server of its own each round: tcp-crr's closed connections stay in
				// TIME-WAIT towards the last one's port, within the port budget.
				spec.Address = rateServer(t)
				var err error
				if r, err = run(context.Background(), spec); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d transactions, %.0f/s, Little's law %.0f/s, p50 %.1f µs", kind, r.Transactions, r.PerSecond, r.LittleLawPerSecond, r.Latency.P50Micros)
				if r.Errors != 0 || r.Transactions < 100 || r.Latency.Count != r.Transactions || r.Latency.PercentilesFrom != 0 {
					t.Fatalf("want many transactions, no errors, exact percentiles: %+v", r)
				}
				if r.PerSecond > 1.05*r.LittleLawPerSecond {
					t.Fatalf("%.0f/s done, Little's law says %.0f/s: more than 5 %% above it", r.PerSecond, r.LittleLawPerSecond)
				}
				if r.PerSecond >= 0.95*r.LittleLawPerSecond {
					break
				}
				if round == 2 {
					t.Errorf("%.0f/s done, Little's law says %.0f/s: more than 5 %% apart in each of 3 rounds", r.PerSecond, r.LittleLawPerSecond)
				}
			}
			if r.DurationSeconds < 0.3 || r.DurationSeconds > 0.5 {
				t.Errorf("ran %.3f s, want just over 0.3 s", r.DurationSeconds)
			}
			// One tcp-rr client waits in blocking reads on Linux (it detaches after its first
			// transaction, before the server can from its third); tcp-crr and several never do.
			want := v1alpha1.WaitPoller
			if kind == v1alpha1.ProbeTCPRR && tc.clients == 1 && runtime.GOOS == "linux" {
				want = v1alpha1.WaitBlockingRead
			}
			if r.ClientWait != want {
				t.Errorf("client waited in %q, want %q (GOMAXPROCS %d)", r.ClientWait, want, runtime.GOMAXPROCS(0))
			}
			if kind == v1alpha1.ProbeTCPCRR {
				if r.Connect == nil || r.Connect.Count != r.Transactions || r.Connect.P50Micros >= r.Latency.P50Micros {
					t.Errorf("connect times %+v: one per connection, each shorter than its transaction (p50 %.1f µs)", r.Connect, r.Latency.P50Micros)
				}
				if p := r.Ports; p == nil || p.RangeSize <= 0 || p.PeakHeld < int(r.Transactions) || p.PeakHeld > p.Budget {
					t.Errorf("ports %+v after %d connections: every closed one is held (TIME-WAIT), within the budget", p, r.Transactions)
				}
			}
		})
	}
}

// A wrong token, or sizes past the bound, get no transaction: the error says why.
func TestRateProbesRefused(t *testing.T) {
	addr := rateServer(t)
	_, err := TCPRR(context.Background(), RateSpec{Address: addr, Token: "nope", Duration: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Errorf("wrong token: %v", err)
	}
	_, err = TCPCRR(context.Background(), RateSpec{Address: addr, Token: "nope", Duration: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Errorf("tcp-crr, wrong token: %v", err)
	}
	_, err = TCPRR(context.Background(), RateSpec{Address: addr, Token: "tok", RequestBytes: MaxRateBytes + 1, Duration: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "before accepting") {
		t.Errorf("oversized request: %v", err)
	}
}

// The port budget counts open connections and those closed within TIME-WAIT's 60 s, and
// refuses past the budget; a connection that never connected gives its port back at once.
func TestPortBudget(t *testing.T) {
	p := &portBudget{size: 10, budget: 3}
	for i := range 3 {
		if !p.take() {
			t.Fatalf("take %d refused within the budget", i)
		}
	}
	if p.take() {
		t.Fatal("a fourth port taken past the budget of 3")
	}
	p.release(false)
	if !p.take() {
		t.Fatal("a port that never connected was not given back")
	}
	p.release(true)
	if p.take() {
		t.Fatal("a port in TIME-WAIT was given back")
	}
	p.closedAt[0] = time.Now().Add(-timeWaitLen - time.Second)
	if !p.take() || p.peak != 3 {
		t.Fatalf("a port past TIME-WAIT not given back, or peak %d != 3", p.peak)
	}
}

// The budget stops a tcp-crr loop before its connections hold it, and says so.
func TestTCPCRRStopsAtThePortBudget(t *testing.T) {
	addr := rateServer(t)
	if timeWaitSockets() < 0 {
		t.Skip("no /proc/net/sockstat here")
	}
	old := portRangeOverride
	portRangeOverride = 100 // a budget of 50: nothing else is in TIME-WAIT towards this new server
	t.Cleanup(func() { portRangeOverride = old })
	r, err := TCPCRR(context.Background(), RateSpec{Address: addr, Token: "tok", Connections: 2, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stopped == "" || r.Ports.PeakHeld > r.Ports.Budget || r.Transactions > int64(r.Ports.Budget) || r.DurationSeconds > 4 {
		t.Errorf("want the loop stopped at its budget: %+v, ports %+v", r, r.Ports)
	}
}

// A pod without ports to spare (a previous round's still in TIME-WAIT) gets no tcp-crr
// transaction and no failure: ErrStoppedFirst, with the reason.
func TestTCPCRRWithoutPortsToSpare(t *testing.T) {
	addr := rateServer(t)
	old := portRangeOverride
	portRangeOverride = 1
	t.Cleanup(func() { portRangeOverride = old })
	_, err := TCPCRR(context.Background(), RateSpec{Address: addr, Token: "tok", Duration: 200 * time.Millisecond})
	if !errors.Is(err, ErrStoppedFirst) || !strings.Contains(err.Error(), "ephemeral ports") {
		t.Errorf("want ErrStoppedFirst naming the ports: %v", err)
	}
}

// The port budget subtracts the TIME-WAIT sockets towards the probe's own server only: a port
// in TIME-WAIT is held towards its peer, and connect(2) gives it again towards another (the
// matrix's next pairs from the same agent).
func TestPortBudgetCountsTimeWaitTowardsTheServer(t *testing.T) {
	a, b := rateServer(t), rateServer(t)
	if _, ok := timeWaitTo(netip.MustParseAddrPort(a)); !ok {
		t.Skip("no /proc/net/tcp here")
	}
	r, err := TCPCRR(context.Background(), RateSpec{Address: a, Token: "tok", Connections: 2, Duration: 5 * time.Second, MaxTransactions: 30})
	if err != nil {
		t.Fatal(err)
	}
	if r.Transactions != 30 || !r.Capped || r.Stopped != "" {
		t.Errorf("want the loop ended at its cap of 30: %d transactions, capped %v, stopped %q", r.Transactions, r.Capped, r.Stopped)
	}
	// The last connections reach TIME-WAIT once the server's FIN arrives (FIN-WAIT-2 before).
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n, _ := timeWaitTo(netip.MustParseAddrPort(a)); n >= 30 {
			break
		}
	}
	toA, toB := newPortBudget(a, 0), newPortBudget(b, 0)
	if toA.twToDst < 30 || toB.twToDst != 0 || toB.budget != toB.size/2 || toA.budget != toA.size/2-toA.twToDst {
		t.Errorf("TIME-WAIT towards %s %d (want ≥ 30), towards %s %d (want 0); budgets %d and %d of a range of %d",
			a, toA.twToDst, b, toB.twToDst, toA.budget, toB.budget, toA.size)
	}
	// A matrix agent's ceiling holds the whole pod's TIME-WAIT, whatever the peers (the pod's
	// count as this budget read it: other tests' sockets come and go meanwhile).
	ceiling := toB.twBefore + 10
	if c := newPortBudget(b, ceiling); c.budget != ceiling-c.twBefore {
		t.Errorf("a ceiling of %d TIME-WAIT sockets with %d in the pod: budget %d, want %d", ceiling, c.twBefore, c.budget, ceiling-c.twBefore)
	}
}

// /proc/net/tcp and tcp6 print each address's 32-bit words in host order, and the port in hex.
func TestCountTimeWait(t *testing.T) {
	table := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A1B2 0100007F:1F90 06 00000000:00000000 03:00001234 00000000     0        0 0 3 0000000000000000
   1: 0100007F:A1B3 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000
   2: 0100007F:A1B4 0200007F:1F90 06 00000000:00000000 03:00001234 00000000     0        0 0 3 0000000000000000
   3: 0000000000000000FFFF00000100007F:A1B5 0000000000000000FFFF00000100007F:1F90 06 00000000:00000000 03:00001234 00000000 0 0 0 3 0
   4: 000080FE00000000FF005452D3F9E4FE:A1B6 0000DCFD00000000000000000200000A:1F90 06 00000000:00000000 03:00001234 00000000 0 0 0 3 0
`)
	for dst, want := range map[string]int{"127.0.0.1:8080": 2, "127.0.0.2:8080": 1, "127.0.0.1:8081": 0, "[fddc::a00:2]:8080": 1, "[fddc::200:a]:8080": 0} {
		if got := countTimeWait(table, netip.MustParseAddrPort(dst)); got != want {
			t.Errorf("towards %s: %d, want %d", dst, got, want)
		}
	}
	ap, ok := procAddr("0000DCFD00000000000000000200000A:1F90")
	if !ok || ap.String() != "[fddc::a00:2]:8080" {
		t.Errorf("IPv6 address read as %v (%v), want [fddc::a00:2]:8080", ap, ok)
	}
}
