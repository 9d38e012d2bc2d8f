package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// PhaseTimer records the wall time of a run's phases in its report.
type PhaseTimer struct {
	timing *report.Timing
	last   time.Time
}

func NewPhaseTimer(timing *report.Timing, start time.Time) *PhaseTimer {
	return &PhaseTimer{timing: timing, last: start}
}

func (p *PhaseTimer) Phase(name string) {
	now := time.Now()
	p.timing.Phases = append(p.timing.Phases, report.Phase{Name: name, Seconds: report.Round1(now.Sub(p.last).Seconds())})
	p.last = now
}

// ChooseMode checks, before anything is created, that the user may do everything the run
// needs, and picks the agents' mode: auto takes temporary pods where ephemeral containers are
// not allowed. note says why auto chose pods.
func (o *CommonOptions) ChooseMode(ctx context.Context, requested string, namespaces ...string) (mode, note string, err error) {
	mode = requested
	if mode == session.ModeAuto {
		mode = session.ModeEphemeral
	}
	err = access.CheckPermissions(ctx, o.Client, namespaces, access.NeededPermissions(mode == session.ModePod))
	var pe *access.PermissionError
	if err != nil && requested == session.ModeAuto && errors.As(err, &pe) {
		if perr := access.CheckPermissions(ctx, o.Client, namespaces, access.NeededPermissions(true)); perr == nil {
			return session.ModePod, fmt.Sprintf("ephemeral containers not allowed (%v): used temporary pods instead", err), nil
		}
	}
	return mode, "", err
}

// NewSession starts a session for one run with a fresh id and token.
func (o *CommonOptions) NewSession(mode string) *session.Session {
	s := session.NewSession(o.Client, o.NewRunID(), randomID()+randomID()+randomID()+randomID(), o.Image, mode, o.StartTimeout)
	s.Resources = o.Resources
	s.PullSecrets = o.PullSecrets
	s.DryRun = o.DryRun
	s.Now = o.ServerNow
	s.Logf = func(format string, args ...any) { klog.V(2).Infof(format, args...) }
	if o.ConfigureSession != nil {
		o.ConfigureSession(s)
	}
	return s
}

// ErrInterrupted is wrapped by the error of a run cancelled by the user (Ctrl-C, SIGTERM).
var ErrInterrupted = errors.New("interrupted")

// Finish closes the session and says what an interrupted or failed run left behind.
func (o *CommonOptions) Finish(ctx context.Context, s *session.Session, err error) error {
	cerr := s.Close()
	if ctx.Err() != nil {
		if cerr != nil {
			return fmt.Errorf("%w (run %s): %w", ErrInterrupted, s.RunID, cerr)
		}
		if s.DryRun {
			return fmt.Errorf("%w: a dry run, nothing was created", ErrInterrupted)
		}
		return fmt.Errorf("%w: every agent of run %s told to stop, temporary pods deleted", ErrInterrupted, s.RunID)
	}
	if err != nil && cerr != nil {
		return fmt.Errorf("%w; and %w", err, cerr)
	}
	if err != nil {
		return err
	}
	return cerr
}

// serverClock tracks the offset of the API server's clock from ours, from the Date header of
// its answers, so that agents' not-after times are on the clock of the cluster.
type serverClock struct {
	next   http.RoundTripper
	offset atomic.Int64 // nanoseconds to add to the local clock
}

func (c *serverClock) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			// The header has whole seconds: keep the offset only when it is beyond that.
			if off := time.Until(d); off > 2*time.Second || off < -2*time.Second {
				c.offset.Store(int64(off))
			} else {
				c.offset.Store(0)
			}
		}
	}
	return resp, err
}

func (c *serverClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }
