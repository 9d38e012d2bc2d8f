//go:build !linux

package probes

import (
	"context"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// ObserveDNS captures packets on Linux only, where the agent runs.
func ObserveDNS(context.Context, time.Duration, resolver.Kind, resolver.Config) (*DNSObservation, error) {
	return nil, ErrCaptureNotPermitted
}
