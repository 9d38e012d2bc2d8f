package cmdutil

import (
	"context"
	"fmt"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
)

// RunOne starts the agent as, hands it its one-probe job and follows it to its end: the result
// keep accepts (what the probe is named in errors), or its error as one line.
func RunOne(ctx context.Context, sess *session.Session, as session.AgentSpec, what string, keep func(*agent.ProbeResult) bool) (*session.Agent, *agent.ProbeResult, error) {
	a, err := sess.StartReady(ctx, as, "the agent")
	if err != nil {
		return nil, nil, err
	}
	var res *agent.ProbeResult
	err = a.Follow(ctx, func(ev agent.Event) (bool, error) {
		switch ev.Type {
		case agent.EventResult:
			if ev.Result != nil && keep(ev.Result) {
				res = ev.Result
			}
		case agent.EventError:
			return false, fmt.Errorf("%s in %s/%s: %s", what, as.Target.Namespace, as.Target.Pod.Name, text.Sanitize(ev.Message))
		case agent.EventExit:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if res == nil {
		return nil, nil, fmt.Errorf("the %s %w", a, session.ErrEndedWithoutResult)
	}
	return a, res, nil
}
