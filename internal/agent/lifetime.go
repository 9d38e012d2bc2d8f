package agent

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// ExitGrace is how long an agent may take to shut down cleanly after its not-after time before
// the process exits whatever a goroutine is blocked on.
const ExitGrace = 3 * time.Second

// ExitCodeHard is the exit status of an agent that had to be ended by its hard deadline.
const ExitCodeHard = 3

// DefaultMemoryLimit bounds the agent's heap (GOMEMLIMIT) unless the environment sets one.
const DefaultMemoryLimit = 96 << 20

// notAfter turns the flags into one absolute time: --not-after wins, else now + --deadline.
func notAfter(abs string, rel time.Duration, now time.Time) (time.Time, error) {
	if abs != "" {
		t, err := time.Parse(time.RFC3339, abs)
		if err != nil {
			return time.Time{}, fmt.Errorf("--not-after %q: want an RFC 3339 time: %w", abs, err)
		}
		return t, nil
	}
	if rel <= 0 {
		return time.Time{}, fmt.Errorf("--deadline %s: want a positive duration", rel)
	}
	return now.Add(rel), nil
}

// ErrTooLate means the agent started after its not-after time, e.g. because its image was
// pulled long after the run ended.
var ErrTooLate = fmt.Errorf("started after its not-after time: the run it belonged to is over")

// hardExit ends the process at t + ExitGrace whatever is still running, after emitting an exit
// event. It returns a function that disarms it.
func hardExit(t time.Time, em *Emitter) (stop func()) {
	timer := time.AfterFunc(time.Until(t)+ExitGrace, func() {
		em.Emit(Event{Type: EventExit, Message: "hard deadline reached"})
		os.Exit(ExitCodeHard)
	})
	return func() { timer.Stop() }
}

// limitMemory sets the Go memory limit unless GOMEMLIMIT already did.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
}

// lease ends a context unless it is renewed within its period. The first period starts when
// the lease is made, so that an agent nobody ever talks to ends soon.
type lease struct {
	mu     sync.Mutex
	period time.Duration
	timer  *time.Timer
}

// newLease cancels ctx's derived context with reason when a period passes without renew.
func newLease(ctx context.Context, period time.Duration, expire func()) *lease {
	l := &lease{period: period}
	if period <= 0 {
		return l
	}
	l.timer = time.AfterFunc(period, expire)
	context.AfterFunc(ctx, func() { l.timer.Stop() })
	return l
}

// renew extends the lease by one period from now.
func (l *lease) renew() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Reset(l.period)
	}
}

// idle waits, holding no port, until the process is told to stop (SIGTERM, SIGINT) or ctx ends.
// An agent in a pod that always restarts (a DaemonSet's) idles once its run is over instead of
// exiting: it would be started again, and again after every exit, until its pod is deleted.
func idle(ctx context.Context, em *Emitter, why string) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	em.Emit(Event{Type: EventProgress, Message: why + "; no port is open: idle until stopped"})
	debug.FreeOSMemory()
	<-ctx.Done()
}
