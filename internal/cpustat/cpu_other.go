//go:build !unix

package cpustat

import "time"

// ProcessCPU is not measured on this platform.
func ProcessCPU() time.Duration { return 0 }

// PeakRSS is not measured on this platform.
func PeakRSS() int64 { return 0 }
