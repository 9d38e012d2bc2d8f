package agent

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/vethpair"
)

// Through a slow link with a deep queue (HTB at 20 Mbit/s over a 1 MB FIFO on the client's
// veth), the tcp probe reports what crossed the link while it sent: within 10 % of the link's
// rate, though the server's sink counts more in all (what the send buffers and the queue still
// held at the end drains after it: counted over the send time it read 32 Mbit/s here).
func TestThroughputThroughASlowLink(t *testing.T) {
	if why := vethpair.Available(); why != "" {
		t.Skip("veth test skipped: " + why)
	}
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs tc (iproute2)")
	}
	p, err := vethpair.New("nbs", 43)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const rate = 20e6 // bits per second on the wire, headers included
	for _, c := range [][]string{
		{"qdisc", "add", "dev", "nbsa", "root", "handle", "1:", "htb", "default", "1"},
		{"class", "add", "dev", "nbsa", "parent", "1:", "classid", "1:1", "htb", "rate", "20mbit", "ceil", "20mbit"},
		{"qdisc", "add", "dev", "nbsa", "parent", "1:1", "bfifo", "limit", "1000000"},
	} {
		if out, err := exec.Command("tc", append([]string{"-n", p.NSA}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("tc %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	s := startServer(t, p.NSB, "tok-slow", time.Minute)
	job := Job{APIVersion: APIVersion, Host: p.AddrB, Port: s.port, Token: "tok-slow", Done: true,
		Probes: []ProbeSpec{{Kind: ProbeTCP, Name: "tcp-4", Streams: 4, DurationSeconds: 3}}}
	events, err := runJob(t, p.NSA, job, 0)
	if err != nil {
		t.Fatalf("agent run: %v (events %+v)", err, events)
	}
	r := results(events)["tcp-4"]
	if r == nil || r.Throughput == nil {
		t.Fatalf("no throughput result: %+v", events)
	}
	tp := r.Throughput
	sinkRate := float64(tp.BytesReceived) * 8 / tp.DurationSeconds
	t.Logf("%.2f Mbit/s delivered while sending (%d bytes in %.3f s); the sink counted %d bytes in all (%.2f Mbit/s over the send time); sent %d",
		tp.BitsPerSecondReceived/1e6, tp.BytesDelivered, tp.DurationSeconds, tp.BytesReceived, sinkRate/1e6, tp.BytesSent)
	// TCP payload is at most 1448 of each 1514-byte frame's bytes HTB counts: 95.6 % of the rate.
	if got := tp.BitsPerSecondReceived; got < 0.85*rate || got > 1.0*rate {
		t.Errorf("throughput %.2f Mbit/s through a %.0f Mbit/s link: want 85-100 %% of it", got/1e6, rate/1e6)
	}
	if tp.BytesReceived < tp.BytesDelivered {
		t.Errorf("the sink counted %d bytes, fewer than the %d acknowledged", tp.BytesReceived, tp.BytesDelivered)
	}
	s.waitExit(t, 5*time.Second)
}
