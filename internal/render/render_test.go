package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The line under the request table says what the percentiles are: observed latencies, a sample
// of them, or (in an earlier version's report) interpolations in a histogram.
func TestPercentileBasis(t *testing.T) {
	for _, tc := range []struct {
		name string
		lats []namedLatency
		want string
	}{
		{"exact", []namedLatency{{"http", probes.Latency{Count: 300}}},
			"  percentiles: the latency some request had (nearest rank over every request, nanosecond clock)\n"},
		{"sampled", []namedLatency{{"http", probes.Latency{Count: 300}}, {"http-max", probes.Latency{Count: 2000000, PercentilesFrom: 1 << 20}}},
			"  percentiles: the latency some request had (nearest rank over every request, nanosecond clock)\n" +
				"  percentiles from a sample: http-max: a uniform sample of 1048576 of its 2000000 requests\n"},
		{"only sampled", []namedLatency{{"http-max", probes.Latency{Count: 2000000, PercentilesFrom: 1 << 20}}},
			"  percentiles from a sample: http-max: a uniform sample of 1048576 of its 2000000 requests\n"},
		{"bucketed", []namedLatency{{"grpc", probes.Latency{Count: 300, ResolutionMicros: 10}}},
			"  percentiles interpolated in a histogram whose buckets widen with the value: grpc (finest bucket 10.0 µs)\n"},
	} {
		var b strings.Builder
		percentileBasis(&b, tc.lats)
		if diff := cmp.Diff(tc.want, b.String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// A ladder's human report names each round whose rate probe stopped early or met an error, by
// rung and round: its table shows medians only (once, such a stop was in -o json alone).
func TestLadderRateStops(t *testing.T) {
	stopped := &v1alpha1.ProbeResult{Name: "tcp-crr", Rate: &v1alpha1.RateResult{Kind: v1alpha1.ProbeTCPCRR, Stopped: "the port budget (1000 ports) was used up"}}
	failed := &v1alpha1.ProbeResult{Name: "udp-rr", Rate: &v1alpha1.RateResult{Kind: v1alpha1.ProbeUDPRR, FirstError: "read: connection refused"}}
	clean := &v1alpha1.ProbeResult{Name: "tcp-rr", Rate: &v1alpha1.RateResult{Kind: v1alpha1.ProbeTCPRR}}
	rungs := []*report.LadderRung{
		{Name: "same-node", Results: []v1alpha1.LadderRound{{Round: 1, Probes: []*v1alpha1.ProbeResult{clean}}}},
		{Name: "cross-zone", Results: []v1alpha1.LadderRound{{Round: 1, Probes: []*v1alpha1.ProbeResult{clean}}, {Round: 2, Probes: []*v1alpha1.ProbeResult{stopped, failed, {Name: "icmp"}}}}},
	}
	var b strings.Builder
	writeLadderRateStops(&b, rungs)
	want := "  cross-zone, round 2, tcp-crr: stopped early: the port budget (1000 ports) was used up\n" +
		"  cross-zone, round 2, udp-rr: first error: read: connection refused\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A rate probe's notes say how often per transaction each agent's node's CPUs stopped idle,
// for the sides that counted; none where neither did.
func TestIdleEntriesPerTransaction(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	rate := &v1alpha1.RateResult{Kind: v1alpha1.ProbeTCPRR, Transactions: 200}
	both := &v1alpha1.ProbeResult{Name: "tcp-rr", Rate: rate, Validity: &v1alpha1.Validity{
		Client: &v1alpha1.CPUUse{NodeIdleEntries: n(32)}, Server: &v1alpha1.CPUUse{NodeIdleEntries: n(190)}}}
	clientOnly := &v1alpha1.ProbeResult{Name: "udp-rr", Rate: rate, Validity: &v1alpha1.Validity{
		Client: &v1alpha1.CPUUse{NodeIdleEntries: n(0)}, Server: &v1alpha1.CPUUse{}}}
	none := &v1alpha1.ProbeResult{Name: "tcp-crr", Rate: rate, Validity: &v1alpha1.Validity{Client: &v1alpha1.CPUUse{}}}
	var b strings.Builder
	for _, r := range []*v1alpha1.ProbeResult{both, clientOnly, none, {Name: "x", Rate: rate}} {
		writeIdleEntries(&b, r)
	}
	const what = ": CPU idle entries per transaction (summed over every CPU of the node, whatever ran on it: at most this many of its waits paid a CPU's wake-up, time the path does not cost): "
	want := "  tcp-rr" + what + "client's node 0.16, server's node 0.95\n" +
		"  udp-rr" + what + "client's node 0.00\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
