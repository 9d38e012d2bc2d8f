//go:build !netbench_faults

package probes

import "time"

// bucketPercentiles exists only in a build with the tag netbench_faults (samples_fault_on.go).
func bucketPercentiles([]time.Duration, Latency) Latency {
	panic("fault latency-from-buckets in a build without the tag netbench_faults")
}
