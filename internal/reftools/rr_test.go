package reftools

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The parsers read what sockperf 3.7 and irtt 0.9.0 (Debian 12) printed on loopback.
func TestParseSockperf(t *testing.T) {
	out, err := os.ReadFile("testdata/sockperf-ping-pong.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseSockperf(string(out))
	if err != nil {
		t.Fatal(err)
	}
	// The valid duration's line, not the total run's (which includes the warm-up).
	if r.Sent != 16716 || r.Received != 16716 || r.P50Micros != 25.768 || math.Abs(r.PerSecond-16716/0.550) > 0.01 || r.Answered != 29663 {
		t.Errorf("got %+v", r)
	}
	if _, err := parseSockperf("sockperf: Test ended\n"); err == nil {
		t.Error("no error for output without results")
	}
}

func TestParseIrtt(t *testing.T) {
	out, err := os.ReadFile("testdata/irtt-client.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseIrtt(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.P50Micros != 121.482 || r.Sent != 161 || r.Received != 161 || r.LossPercent != 0 || r.IPDVMicros != 65.526 {
		t.Errorf("got %+v", r)
	}
	if _, err := parseIrtt([]byte(`{"stats":{"packets_sent":5,"packets_received":0}}`)); err == nil {
		t.Error("no error for a run without answers")
	}
}

// PingDuring keeps ping's time-stamped replies; Between takes the median of those in a window.
func TestPingDuringAndBetween(t *testing.T) {
	out := "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n" +
		"[1700000000.100000] 64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.250 ms\n" +
		"[1700000000.110000] 64 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=20.5 ms\n" +
		"[1700000000.120000] 64 bytes from 10.0.0.2: icmp_seq=3 ttl=64 time=19.5 ms\n" +
		"[1700000000.130000] From 10.0.0.1 icmp_seq=4 Destination Host Unreachable\n" +
		"[1700000000.140000] 64 bytes from 10.0.0.2: icmp_seq=5 ttl=64 time=0.300 ms\n"
	var args []string
	printed := filepath.Join(t.TempDir(), "printed")
	fake := func(name string, a ...string) *exec.Cmd {
		args = append([]string{name}, a...)
		return exec.Command("sh", "-c", `printf '%s' "$0"; : > "$1"; exec sleep 30`, out, printed)
	}
	replies, err := PingDuring(fake, "10.0.0.2", 10*time.Millisecond, func() {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(printed); err == nil {
				return // the replies are out
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ping", "-D", "-n", "-i", "0.010", "10.0.0.2"}; !slices.Equal(args, want) {
		t.Errorf("ran %q, want %q", args, want)
	}
	if len(replies) != 4 {
		t.Fatalf("%d replies, want 4: %v", len(replies), replies)
	}
	at := func(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }
	if m, n := replies.Between(at(1700000000.105), at(1700000000.125)); n != 2 || m != 20000 {
		t.Errorf("window of two: median %v µs of %d, want 20000 of 2", m, n)
	}
	if m, n := replies.Between(at(1700000001), at(1700000002)); n != 0 || !math.IsNaN(m) {
		t.Errorf("empty window: %v of %d", m, n)
	}
}

// dnsperf 2.10 -v (Debian 12) against a loopback server at 200 q/s for 1 s: its counts, and
// the p99 of its 200 per-query latencies (the 198th smallest, 828 µs); judged by the ramp's
// criteria, and refused when dnsperf fell short of the rate or the server failed.
func TestParseDNSPerf(t *testing.T) {
	out, err := os.ReadFile("testdata/dnsperf-verbose.txt")
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseDNSPerf(out, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Sent != 200 || d.Completed != 200 || d.Lost != 0 || d.Failures != 0 || math.Abs(d.P99Micros-828) > 1e-6 {
		t.Errorf("parsed %+v", d)
	}
	if err := d.Fault(0.95); err != nil {
		t.Errorf("a run at its rate: %v", err)
	}
	l := &v1alpha1.DNSLoad{MaxLossRatio: 0.01, P99BudgetMicros: 200000, MinPaceRatio: 0.95}
	if why := d.Degraded(l); why != "" {
		t.Errorf("sustained run judged degraded: %s", why)
	}
	for budget, want := range map[float64]string{800: "p99", 828: ""} {
		l.P99BudgetMicros = budget
		if why := d.Degraded(l); why != want {
			t.Errorf("p99 budget %.0f µs: %q, want %q", budget, why, want)
		}
	}
	l.P99BudgetMicros = 200000
	for _, tc := range []struct {
		d    DNSPerf
		want string
	}{
		{DNSPerf{Rate: 200, Seconds: 2, Sent: 400, Completed: 379, P99Micros: 100}, "pace"},
		{DNSPerf{Rate: 200, Seconds: 2, Sent: 400, Completed: 380, P99Micros: 100}, ""},
		{DNSPerf{Rate: 200, Seconds: 2, Sent: 400, Completed: 395, Lost: 5, P99Micros: 100}, "loss"},
	} {
		if why := tc.d.Degraded(l); why != tc.want {
			t.Errorf("%v: %q, want %q", tc.d, why, tc.want)
		}
	}
	if err := (DNSPerf{Rate: 200, Seconds: 1, Sent: 189}).Fault(0.95); err == nil {
		t.Error("189 of 200 queries sent: want the generator named")
	}
	failed, err := parseDNSPerf([]byte(strings.Replace(string(out), "NXDOMAIN 133 (66.50%)", "NXDOMAIN 130 (65.00%), SERVFAIL 2 (1.00%), REFUSED 1 (0.50%)", 1)), 200, 1)
	if err != nil || failed.Failures != 3 || failed.Fault(0.95) == nil {
		t.Errorf("SERVFAIL and REFUSED answers: %+v %v", failed, err)
	}
	if _, err := parseDNSPerf([]byte("dnsperf: bad option"), 200, 1); err == nil {
		t.Error("no statistics: want an error")
	}
}
