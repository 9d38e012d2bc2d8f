package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
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
