//go:build netbench_faults

package probes

import (
	"time"

	"fortio.org/fortio/stats"
)

// bucketPercentiles is the fault latency-from-buckets (internal/fault): l's percentiles are
// replaced by those fortio interpolates in its histogram of the same samples at a 10 µs
// resolution, whose buckets are 10 ms wide between 10 and 20 ms.
func bucketPercentiles(samples []time.Duration, l Latency) Latency {
	h := stats.NewHistogram(0, 10e-6)
	for _, d := range samples {
		h.Record(d.Seconds())
	}
	for _, p := range h.Export().CalcPercentiles([]float64{50, 90, 99, 99.9}).Percentiles {
		v := micros(p.Value)
		switch p.Percentile {
		case 50:
			l.P50Micros = v
		case 90:
			l.P90Micros = v
		case 99:
			l.P99Micros = v
		case 99.9:
			l.P999Micros = v
		}
	}
	return l
}
