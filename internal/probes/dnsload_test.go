package probes

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// cappedDNS is a loopback DNS server of a known capacity: it answers in arrival order, each
// answer cost after the previous one's or its query's arrival (a schedule kept from arrival
// times, so that a late wake-up does not lower its rate), with rcode. It returns its address.
func cappedDNS(t *testing.T, cost time.Duration, rcode byte) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	type arrival struct {
		b    []byte
		from net.Addr
		at   time.Time
	}
	queue := make(chan arrival, 100000)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 512)
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			queue <- arrival{buf[:n], from, time.Now()}
		}
	}()
	go func() {
		var free time.Time
		for a := range queue {
			if a.at.After(free) {
				free = a.at
			}
			free = free.Add(cost)
			time.Sleep(time.Until(free))
			a.b[2] |= 0x80
			a.b[3] = a.b[3]&0xf0 | rcode
			_, _ = pc.WriteTo(a.b, a.from)
		}
	}()
	return pc.LocalAddr().String()
}

// loadOnPort runs the ramp against a server on a loopback port instead of 53.
func loadOnPort(t *testing.T, addr string, ceiling float64, budget time.Duration) v1alpha1.DNSServerLoad {
	t.Helper()
	mix, err := packMix([]DNSLoadQuery{{Name: "a.example.", Type: "A"}, {Name: "a.example.", Type: "AAAA"}, {Name: "b.example.", Type: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	// A p99 budget well above a late wake-up of the test's server on a busy machine (tens of
	// milliseconds while other packages' tests run): only a growing queue exceeds it.
	r := ramp{server: addr, mix: mix, ceiling: ceiling, p99: 100 * time.Millisecond, until: time.Now().Add(budget)}
	return r.run(context.Background())
}

// A server that answers 1,000 queries per second: the ramp's knee is within its resolution
// below that, the step above it degraded, every passing step answered in full.
func TestDNSLoadFindsTheKnee(t *testing.T) {
	s := loadOnPort(t, cappedDNS(t, time.Millisecond, 0), 20000, time.Minute)
	if s.Limit != v1alpha1.LoadLimitDegraded || s.SustainedQPS < 850 || s.SustainedQPS > 1050 {
		t.Fatalf("sustained %.0f q/s (%s), want the knee of a 1,000 q/s server: %+v", s.SustainedQPS, s.Limit, s.Steps)
	}
	t.Logf("knee %.0f q/s after %d steps", s.SustainedQPS, len(s.Steps))
	for _, st := range s.Steps {
		if st.Degraded == "" && (st.Lost > int(0.01*float64(st.Sent)) || st.P99Micros > 100000 || st.Answered != st.Sent-st.Lost) {
			t.Errorf("a passing step that should not: %+v", st)
		}
		if st.OfferedQPS > 1150 && st.Degraded == "" {
			t.Errorf("%.0f q/s passed on a 1,000 q/s server: %+v", st.OfferedQPS, st)
		}
	}
}

// The ceiling is never exceeded, and a ramp that reaches it says the knee is above it.
func TestDNSLoadStopsAtTheCeiling(t *testing.T) {
	s := loadOnPort(t, cappedDNS(t, 100*time.Microsecond, 0), 600, time.Minute)
	if s.Limit != v1alpha1.LoadLimitCeiling || s.SustainedQPS < 0.95*600 || s.SustainedQPS > 600 {
		t.Fatalf("sustained %.0f q/s (%s), want the ceiling 600 reached: %+v", s.SustainedQPS, s.Limit, s.Steps)
	}
	for _, st := range s.Steps {
		if st.OfferedQPS > 600 || st.SentQPS > 600*1.05 {
			t.Errorf("a step above the ceiling: %+v", st)
		}
	}
}

// A server answering REFUSED ends the ramp at its first step.
func TestDNSLoadStopsAtErrors(t *testing.T) {
	s := loadOnPort(t, cappedDNS(t, 0, 5), 20000, time.Minute)
	if s.Limit != v1alpha1.LoadLimitErrors || len(s.Steps) != 1 || s.SustainedQPS != 0 || s.Steps[0].Errors == 0 {
		t.Fatalf("%s after %d steps, want errors after one: %+v", s.Limit, len(s.Steps), s.Steps)
	}
}

// A budget too short for a step ends the ramp before it sends anything.
func TestDNSLoadKeepsToItsBudget(t *testing.T) {
	s := loadOnPort(t, cappedDNS(t, 0, 0), 20000, time.Second)
	if s.Limit != v1alpha1.LoadLimitBudget || len(s.Steps) != 0 {
		t.Fatalf("%s after %d steps, want the duration cap before any", s.Limit, len(s.Steps))
	}
}

// The ramp's rates: doubling until a step fails, then narrowing geometrically.
func TestDNSLoadNextRate(t *testing.T) {
	for _, tc := range []struct {
		good, bad, ceiling, want float64
		limit                    string
	}{
		{250, 0, 20000, 500, ""},
		{16000, 0, 20000, 20000, ""},
		{20000, 0, 20000, 0, v1alpha1.LoadLimitCeiling},
		{1000, 2000, 20000, 1414.2135623730951, ""},
		{1000, 1040, 20000, 0, v1alpha1.LoadLimitDegraded},
		{0, 250, 20000, 125, ""},
		{0, 31.25, 20000, 0, v1alpha1.LoadLimitDegraded},
	} {
		got, limit := nextRate(tc.good, tc.bad, tc.ceiling)
		if got != tc.want || limit != tc.limit {
			t.Errorf("nextRate(%g, %g, %g) = %g %q, want %g %q", tc.good, tc.bad, tc.ceiling, got, limit, tc.want, tc.limit)
		}
	}
}
