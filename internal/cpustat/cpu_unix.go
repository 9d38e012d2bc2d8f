//go:build unix

package cpustat

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user + system, every thread) this process has used so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSS is the largest resident set this process has had, in bytes (getrusage's ru_maxrss:
// the kernel's high-water mark of its memory in RAM; KiB on Linux).
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
