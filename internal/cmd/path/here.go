package path

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

// hereClient names this process as the client of path here DST, in messages.
type hereClient struct{}

func (hereClient) String() string { return "client on this machine" }

// runHere is a follower that runs job in this process, as a client agent runs it in a pod,
// handing fn each event as it is emitted, and an exit event at the end.
func runHere(job agent.Job) follower {
	return func(ctx context.Context, fn func(agent.Event) (bool, error)) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sink := &eventSink{fn: fn, cancel: cancel}
		runErr := agent.Run(ctx, job, agent.NewEmitter(sink))
		if sink.stop || sink.err != nil {
			return sink.err
		}
		exit := "the job ended"
		if runErr != nil {
			exit = runErr.Error()
		}
		_, err := fn(agent.Event{Type: agent.EventExit, Message: exit})
		return err
	}
}

// eventSink decodes each event the emitter writes (one JSON document per write) and hands it
// to fn; once fn stops or fails, the job is cancelled and later events are dropped.
type eventSink struct {
	fn     func(agent.Event) (bool, error)
	cancel context.CancelFunc
	stop   bool
	err    error
}

func (s *eventSink) Write(b []byte) (int, error) {
	if s.stop || s.err != nil {
		return len(b), nil
	}
	var ev agent.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		s.err = fmt.Errorf("the client's event %q: %w", b, err)
	} else {
		s.stop, s.err = s.fn(ev)
	}
	if s.stop || s.err != nil {
		s.cancel()
	}
	return len(b), nil
}
