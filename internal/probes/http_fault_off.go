//go:build !netbench_faults

package probes

import "context"

// extraRoundTrip exists only in a build with the tag netbench_faults (http_fault_on.go).
func extraRoundTrip(context.Context, string) (string, func(), error) {
	panic("fault http-extra-rtt in a build without the tag netbench_faults")
}
