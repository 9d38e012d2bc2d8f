package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

// A renewal the pod proxy holds does not hold back the next: the next tick's renewal goes out
// while the first still waits (renewed one at a time, two slow answers in a row ended the
// server's 5 s lease).
func TestLeaseRenewalsOverlapASlowProxy(t *testing.T) {
	s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Second)
	held, second := make(chan struct{}), make(chan struct{})
	calls := 0
	s.Proxy = func(ctx context.Context, _ *Agent, method, path string, _ []byte) error {
		if method != "POST" || path != agent.PathLease {
			t.Errorf("%s %s, want POST %s", method, path, agent.PathLease)
		}
		s.mu.Lock()
		calls++
		n := calls
		s.mu.Unlock()
		switch n {
		case 1:
			select { // the first renewal waits until the second has gone out, or its own end
			case <-second:
			case <-ctx.Done():
				t.Errorf("the first renewal ran out (%v) before a second one went out", ctx.Err())
			}
			close(held)
		case 2:
			close(second)
		}
		return nil
	}
	done := make(chan struct{})
	go func() { defer close(done); s.renewLease(&Agent{s: s, Pod: "p"}) }()
	select {
	case <-held:
	case <-time.After(2 * LeasePeriod):
		t.Error("no second renewal while the first was held")
	}
	s.stop()
	<-done
}

// A server's exit event is kept as why it ended (a probe it then refuses names it), its errors
// as its note.
func TestServerExitReasonKept(t *testing.T) {
	s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Second)
	a := &Agent{s: s, Pod: "p"}
	var lines strings.Builder
	for _, ev := range []agent.Event{
		{APIVersion: agent.APIVersion, Type: agent.EventError, Time: time.Now(), Message: "a job failed"},
		{APIVersion: agent.APIVersion, Type: agent.EventExit, Time: time.Now(), Message: "lease expired: the plugin stopped renewing it"},
	} {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(append(b, '\n'))
	}
	if done, err := a.scan(strings.NewReader(lines.String()), map[string]bool{}, a.serverEvent); !done || err != nil {
		t.Fatalf("scan: done %v, %v", done, err)
	}
	if got := a.EndedBy(); got != "lease expired: the plugin stopped renewing it" {
		t.Errorf("EndedBy %q", got)
	}
	if got := a.ServerNote(); got != "a job failed" {
		t.Errorf("ServerNote %q", got)
	}
}

// A renewal that fails marks the server unrenewable (the plugin cannot reach its port either),
// one that gets through clears it.
func TestUnrenewable(t *testing.T) {
	s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Second)
	a := &Agent{s: s, Pod: "p"}
	fail := true
	s.Proxy = func(context.Context, *Agent, string, string, []byte) error {
		if fail {
			return errors.New("connection refused")
		}
		return nil
	}
	if a.Unrenewable() {
		t.Error("unrenewable before any renewal")
	}
	s.renewOnce(a)
	if !a.Unrenewable() {
		t.Error("a failed renewal: want unrenewable")
	}
	fail = false
	s.renewOnce(a)
	if a.Unrenewable() {
		t.Error("a renewal that got through: want renewable")
	}
}
