// Package probes holds the measurement engines of kubectl-netbench. Every engine is a
// function of a typed spec that returns a typed result; nothing here knows about Kubernetes.
package probes

import (
	"math"
	"slices"
	"time"

	"fortio.org/fortio/stats"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// drawResolution is the finest bucket of Latency.Histogram, which is for drawing only: its
// buckets are fortio's, which widen with the value (10 ms wide from 10 to 20 ms). Percentiles
// never come from it.
const drawResolution = 10 * time.Microsecond

// Latency is v1alpha1.Latency, a type of the reports' schema.
type Latency = v1alpha1.Latency

// Bucket is v1alpha1.Bucket, a type of the reports' schema.
type Bucket = v1alpha1.Bucket

func micros(seconds float64) float64 { return math.Round(seconds*1e9) / 1e3 }

// LatencyFromSamples computes exact statistics from every sample. Percentiles use the
// nearest-rank method, so every reported percentile is a value that was really observed.
func LatencyFromSamples(samples []time.Duration) Latency {
	s := slices.Clone(samples)
	slices.Sort(s)
	return latencyOfSorted(s)
}

// latencyOfSorted is LatencyFromSamples of samples already in ascending order.
func latencyOfSorted(s []time.Duration) Latency {
	if len(s) == 0 {
		return Latency{}
	}
	var sum, sumSq float64
	h := stats.NewHistogram(0, drawResolution.Seconds())
	for _, d := range s {
		us := float64(d) / 1e3
		sum += us
		sumSq += us * us
		h.Record(d.Seconds())
	}
	n := float64(len(s))
	avg := sum / n
	variance := sumSq/n - avg*avg
	if variance < 0 {
		variance = 0
	}
	l := Latency{
		Count:        int64(len(s)),
		MinMicros:    round3(float64(s[0]) / 1e3),
		AvgMicros:    round3(avg),
		P50Micros:    round3(float64(nearestRank(s, 50)) / 1e3),
		P90Micros:    round3(float64(nearestRank(s, 90)) / 1e3),
		P99Micros:    round3(float64(nearestRank(s, 99)) / 1e3),
		P999Micros:   round3(float64(nearestRank(s, 99.9)) / 1e3),
		MaxMicros:    round3(float64(s[len(s)-1]) / 1e3),
		StdDevMicros: round3(math.Sqrt(variance)),
	}
	for _, b := range h.Export().Data {
		if b.Count > 0 {
			l.Histogram = append(l.Histogram, Bucket{StartMicros: micros(b.Start), EndMicros: micros(b.End), Count: b.Count})
		}
	}
	return l
}

// nearestRank is the smallest sample at or below which p % of the samples lie. The rank is
// counted in integers (p in tenths of a percent): in floating point, 99.9/100·1000 is a hair
// above 999 and its ceiling would give the maximum instead of the 999th of 1000.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	perMille := int64(math.Round(p * 10))
	rank := int((perMille*int64(len(sorted)) + 999) / 1000)
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

func round3(v float64) float64 { return math.Round(v*1e3) / 1e3 }
