package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/egress"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// checkEgress accepts an egress probe: a destination URL and nothing of the agent server's.
func checkEgress(p ProbeSpec) error {
	switch {
	case p.Host != "" || p.Address != "":
		return errors.New("an egress probe measures its URL alone, with no agent server")
	case p.Count > egress.MaxCount:
		return fmt.Errorf("count %d: want up to %d new connections", p.Count, egress.MaxCount)
	case p.IntervalMillis < 0 || p.IntervalMillis > 60000:
		return fmt.Errorf("interval %gms: want up to 60 s", p.IntervalMillis)
	}
	if err := egress.CheckDownload(p.URL, downloadOf(p)); err != nil {
		return err
	}
	if _, err := egress.RootCAs([]byte(p.RootCAs)); err != nil {
		return err
	}
	return egress.Check(p.URL)
}

// runEgress measures the probe's URL from here, with the system's roots and resolver.
func runEgress(ctx context.Context, p ProbeSpec) (*v1alpha1.EgressResult, error) {
	roots, err := egress.RootCAs([]byte(p.RootCAs))
	if err != nil {
		return nil, err
	}
	return egress.Measure(ctx, egress.Spec{Target: p.URL, Count: p.Count, RootCAs: roots,
		Interval: time.Duration(p.IntervalMillis * float64(time.Millisecond)), Download: downloadOf(p)})
}

// downloadOf is how long an egress probe reads one answer's body (DurationSeconds; 0: none).
func downloadOf(p ProbeSpec) time.Duration {
	return time.Duration(p.DurationSeconds * float64(time.Second))
}
