package probes

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func us(v ...int) []time.Duration {
	var out []time.Duration
	for _, x := range v {
		out = append(out, time.Duration(x)*time.Microsecond)
	}
	return out
}

func TestLatencyFromSamples(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted on purpose
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    Latency
	}{
		{name: "empty", samples: nil, want: Latency{}},
		{
			name:    "one sample is every percentile",
			samples: us(250),
			want:    Latency{Count: 1, MinMicros: 250, AvgMicros: 250, P50Micros: 250, P90Micros: 250, P99Micros: 250, P999Micros: 250, MaxMicros: 250},
		},
		{
			name:    "nearest rank over 1..100 µs",
			samples: us(hundred...),
			want: Latency{Count: 100, MinMicros: 1, AvgMicros: 50.5, P50Micros: 50, P90Micros: 90, P99Micros: 99, P999Micros: 100,
				MaxMicros: 100, StdDevMicros: 28.866},
		},
		{
			name:    "sub-microsecond precision is kept",
			samples: []time.Duration{1500 * time.Nanosecond, 2500 * time.Nanosecond},
			want: Latency{Count: 2, MinMicros: 1.5, AvgMicros: 2, P50Micros: 1.5, P90Micros: 2.5, P99Micros: 2.5, P999Micros: 2.5,
				MaxMicros: 2.5, StdDevMicros: 0.5},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LatencyFromSamples(tc.samples)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Latency{}, "Histogram")); diff != "" {
				t.Errorf("LatencyFromSamples (-want +got):\n%s", diff)
			}
			var n int64
			for _, b := range got.Histogram {
				n += b.Count
			}
			if n != got.Count {
				t.Errorf("histogram holds %d samples, want %d", n, got.Count)
			}
		})
	}
}

// Nearest rank in integers: of 1000 samples the p99.9 is the 999th, of 2000 the 1998th, and of
// 300 (below 1000) the last; the p50 of 4 is the 2nd.
func TestNearestRankCountsInIntegers(t *testing.T) {
	samples := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(i + 1)
		}
		return s
	}
	for _, tc := range []struct {
		n    int
		p    float64
		want time.Duration
	}{{1000, 99.9, 999}, {2000, 99.9, 1998}, {300, 99.9, 300}, {1000, 99, 990}, {100, 90, 90}, {4, 50, 2}, {1, 50, 1}, {3000, 99.9, 2997}} {
		if got := nearestRank(samples(tc.n), tc.p); got != tc.want {
			t.Errorf("p%v of 1..%d: got %d, want %d", tc.p, tc.n, got, tc.want)
		}
	}
}
