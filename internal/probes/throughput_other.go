//go:build !linux

package probes

import (
	"context"
	"errors"
	"time"
)

func (s *streamState) sampleTCPInfo() {}

func sendAll(context.Context, []*streamState, time.Time) error {
	return errors.New("the throughput probe runs on Linux only")
}

// ProcessCPU is not measured outside Linux.
func ProcessCPU() time.Duration { return 0 }

// ProcessPeakRSS is not measured on this platform.
func ProcessPeakRSS() int64 { return 0 }

func processCPU() time.Duration { return 0 }
