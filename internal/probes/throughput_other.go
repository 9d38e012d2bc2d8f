//go:build !linux

package probes

import (
	"context"
	"errors"
	"time"
)

func (s *streamState) sampleTCPInfo() {}

func (s *streamState) markAcked() {}

func sendAll(context.Context, []*streamState, time.Time) error {
	return errors.New("the throughput probe runs on Linux only")
}
