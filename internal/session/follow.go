package session

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// followServer records what a ready server says until it exits or the session closes.
func (a *Agent) followServer() {
	err := a.Follow(a.s.bg, a.serverEvent)
	if err != nil && a.s.bg.Err() == nil {
		a.s.Logf("following the %s: %v", a, err)
	}
}

// serverEvent keeps what a ready server says: its last error, and why it ended.
func (a *Agent) serverEvent(ev agent.Event) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch ev.Type {
	case agent.EventError:
		a.serverNote = text.Sanitize(ev.Message)
	case agent.EventExit:
		a.endedBy = text.Sanitize(ev.Message)
		return true, nil
	}
	return false, nil
}

// ServerNote is the last error the server agent reported after it was ready, if any.
func (a *Agent) ServerNote() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.serverNote
}

// EndedOrSaid waits up to d for the server agent to say why it stopped answering — its exit,
// or an error it reported (a lapsed lease is said at once) — and returns it, or "" when it said
// nothing. A client's refused connection can arrive before the server's words, which come
// through another stream.
func (a *Agent) EndedOrSaid(d time.Duration) string {
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		a.mu.Lock()
		why := cmp.Or(a.endedBy, a.serverNote)
		a.mu.Unlock()
		if why != "" || time.Now().After(end) {
			return why
		}
	}
}

// renewed records the outcome of a lease renewal.
func (a *Agent) renewed(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.renewErr = err
}

// Unrenewable says whether the last lease renewal, through the API server's pod proxy, failed:
// then the plugin cannot reach the server's port either, and a lapsed lease is that, not the
// cause of a probe's failure.
func (a *Agent) Unrenewable() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.renewErr != nil
}

// EndedBy is why the server agent said it ended (its exit event), empty while it serves: a
// probe refused by an agent that has gone is explained by this, not by the network.
func (a *Agent) EndedBy() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.endedBy
}

// Follow reads the agent's events and calls fn for each until fn returns true, the agent
// exits, or ctx ends. A broken stream is resumed from the last event's time; lines that are
// not events are shown at -v.
func (a *Agent) Follow(ctx context.Context, fn func(agent.Event) (bool, error)) error {
	var since time.Time
	seen := map[string]bool{} // events at the resume second that were already handled
	for attempt := 0; ; attempt++ {
		done, err := a.followOnce(ctx, since, seen, fn)
		if done || err != nil && !errors.Is(err, errStreamBroken) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if a.hasExited() {
			return fmt.Errorf("the %s %w", a, ErrEndedWithoutResult)
		}
		if attempt >= maxResumes {
			return fmt.Errorf("reading the %s's output: the log stream broke %d times", a, attempt+1)
		}
		a.mu.Lock()
		since = a.lastEvent
		a.mu.Unlock()
		a.s.Logf("the log stream of the %s ended; resuming from %s", a, since.Format(time.RFC3339Nano))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
}

var errStreamBroken = errors.New("log stream broken")

// followOnce reads one log stream; it returns errStreamBroken when the stream ends early.
func (a *Agent) followOnce(ctx context.Context, since time.Time, seen map[string]bool, fn func(agent.Event) (bool, error)) (bool, error) {
	opts := &corev1.PodLogOptions{Container: a.Container, Follow: true}
	if !since.IsZero() {
		t := metav1.NewTime(since)
		opts.SinceTime = &t
	}
	rc, err := a.s.Logs(ctx, a, opts)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return false, access.Forbidden(err)
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("reading the %s's output: %w", a, err)
	}
	defer rc.Close()
	return a.scan(rc, seen, fn)
}

func (a *Agent) scan(r io.Reader, seen map[string]bool, fn func(agent.Event) (bool, error)) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if seen[string(line)] {
			continue // already handled before the stream was resumed
		}
		ev, err := agent.DecodeEvent(line)
		if err != nil {
			a.s.Logf("%s: %v: %q", a, err, text.Sanitize(string(truncate(line, 200))))
			continue
		}
		a.note(ev, line, seen)
		done, err := fn(ev)
		if err != nil || done {
			return done, err
		}
		if ev.Type == agent.EventExit {
			return false, fmt.Errorf("the %s %w", a, ErrEndedWithoutResult)
		}
	}
	if err := sc.Err(); err != nil {
		a.s.Logf("reading the %s's output: %v", a, err)
	}
	return false, errStreamBroken
}

// note remembers the last event's time (to resume from) and the lines seen at that time.
func (a *Agent) note(ev agent.Event, line []byte, seen map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ev.Time.Truncate(time.Second) != a.lastEvent.Truncate(time.Second) {
		clear(seen)
	}
	seen[string(line)] = true
	a.lastEvent = ev.Time
	if ev.Type == agent.EventExit {
		a.exited = true
	}
}

func (a *Agent) hasExited() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.exited {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := a.s.Client.CoreV1().Pods(a.Namespace).Get(ctx, a.Pod, metav1.GetOptions{})
	if err != nil {
		return apierrors.IsNotFound(err)
	}
	statuses := append(p.Status.EphemeralContainerStatuses, p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if s.Name == a.Container && s.State.Terminated != nil {
			return true
		}
	}
	return false
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func (s *Session) podLogs(ctx context.Context, a *Agent, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return s.Client.CoreV1().Pods(a.Namespace).GetLogs(a.Pod, opts).Stream(ctx)
}
