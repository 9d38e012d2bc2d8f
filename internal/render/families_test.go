package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Each IPv4 figure stands beside its IPv6 twin's, with IPv6 minus IPv4; a figure without a
// twin, and a run of one family, add no table.
func TestFamiliesSideBySide(t *testing.T) {
	rtt := func(name string, p50 float64) *v1alpha1.ProbeResult {
		return &v1alpha1.ProbeResult{Name: name, Kind: v1alpha1.ProbeICMP, RTT: &v1alpha1.RTTResult{Sent: 20, Received: 20, RTT: v1alpha1.Latency{Count: 20, P50Micros: p50, P99Micros: p50 + 100}}}
	}
	tcp := func(name string, bps float64) *v1alpha1.ProbeResult {
		return &v1alpha1.ProbeResult{Name: name, Kind: v1alpha1.ProbeTCP, Throughput: &v1alpha1.ThroughputResult{Streams: 1, BitsPerSecondReceived: bps}}
	}
	r := &report.PathReport{Probes: []*v1alpha1.ProbeResult{rtt("icmp", 2000), tcp("tcp-1", 4e9), rtt("tcp-rtt", 500), rtt("icmp-v6", 2100), tcp("tcp-1-v6", 3e9)}}
	var b bytes.Buffer
	writeFamilies(&b, r)
	out := b.String()
	for _, want := range []string{"icmp.p50  2.00 ms  2.10 ms  +100 µs (+5.0 %)", "tcp-1.gbps  4.00 Gbit/s  3.00 Gbit/s  -1.00 Gbit/s (-25.0 %)"} {
		if !strings.Contains(strings.Join(strings.Fields(out), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tcp-rtt") {
		t.Errorf("a figure without an IPv6 twin is in the table:\n%s", out)
	}
	b.Reset()
	writeFamilies(&b, &report.PathReport{Probes: r.Probes[:3]})
	if b.Len() != 0 {
		t.Errorf("one family, yet a table:\n%s", b.String())
	}
}
