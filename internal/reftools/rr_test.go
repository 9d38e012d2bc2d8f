package reftools

import (
	"math"
	"os"
	"testing"
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
	if r.Sent != 16716 || r.Received != 16716 || r.P50Micros != 25.768 || math.Abs(r.PerSecond-16716/0.550) > 0.01 {
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
