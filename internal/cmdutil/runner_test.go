package cmdutil

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

var (
	errStep = errors.New("step failed")
	errApp  = errors.New("the app's port did not answer")
)

// fakeCommand records the steps it runs and fails at the one named in failAt. Its session holds
// one temporary NetworkPolicy from start on (from open with failAt "open-with-session"), whose
// deletion on the fake cluster records the step "close": the session's effective close.
type fakeCommand struct {
	failAt  string
	cancel  context.CancelFunc
	appErr  bool
	steps   []string
	cs      *fake.Clientset
	sess    *session.Session
	rtt     float64
	timing  report.Timing
	checks  []gate.Result
	timer   *PhaseTimer
	written bool
}

func (c *fakeCommand) step(name string) error {
	c.steps = append(c.steps, name)
	if c.failAt == name {
		return errStep
	}
	return nil
}

func (c *fakeCommand) addPolicy() {
	c.sess.Policies = append(c.sess.Policies, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "np"}})
}

func (c *fakeCommand) Plan(context.Context) error { return c.step("plan") }
func (c *fakeCommand) PlannedFigures() map[string]string {
	c.steps = append(c.steps, "plannedFigures")
	return map[string]string{"rtt.p50": "µs"}
}
func (c *fakeCommand) WritePlan() error {
	c.steps = append(c.steps, "writePlan")
	return nil
}

func (c *fakeCommand) Open(context.Context) (*session.Session, error) {
	c.steps = append(c.steps, "open")
	switch c.failAt {
	case "open":
		return nil, errStep
	}
	c.sess = session.NewSession(c.cs, "run1", "token", "image", session.ModePod, time.Second)
	if c.failAt == "open-with-session" {
		c.addPolicy()
		return c.sess, errStep
	}
	return c.sess, nil
}

func (c *fakeCommand) Start(ctx context.Context) error {
	c.addPolicy()
	if c.failAt == "interrupt in start" {
		c.steps = append(c.steps, "start")
		c.cancel()
		return ctx.Err()
	}
	return c.step("start")
}

func (c *fakeCommand) Measure(ctx context.Context) (time.Duration, error) {
	if c.failAt == "interrupt in measure" {
		c.steps = append(c.steps, "measure")
		c.cancel()
		return time.Second, ctx.Err()
	}
	return time.Second, c.step("measure")
}

func (c *fakeCommand) Finish(context.Context) { c.steps = append(c.steps, "finish") }
func (c *fakeCommand) Closed()                { c.steps = append(c.steps, "closed") }

func (c *fakeCommand) Output() RunOutput {
	out := RunOutput{Timing: &c.timing, Timer: c.timer, Checks: &c.checks,
		Figures: func() []report.FigureValue {
			return []report.FigureValue{{Name: "rtt.p50", Unit: "µs", Value: c.rtt}}
		},
		Write: func() error {
			c.written = true
			return c.step("write")
		}}
	if c.appErr {
		out.Err = func() error { return errApp }
	}
	return out
}

// firstFigures is a fakeCommand whose figures are known before its plan (as path's and dns's).
type firstFigures struct{ *fakeCommand }

func (firstFigures) FiguresBeforePlan() {}

// The runner carries out every command's shared sequence: --fail-if checked before anything is
// opened (before the plan when the figures do not depend on it), the session closed exactly
// once on every exit path after open — before the report is written on success — an
// interrupted run saying so, an app-port error winning over a failed gate, and a failed gate
// coming after the written report as ErrGateFailed.
func TestRunnerExitPaths(t *testing.T) {
	const body = "plan plannedFigures open start measure finish close closed write"
	for _, tc := range []struct {
		name      string
		failAt    string
		failIf    []string
		rtt       float64
		dry       bool
		appErr    bool
		first     bool
		noTimer   bool
		closeFail bool
		wantErr   func(error) bool
		steps     string
	}{
		{name: "success", failIf: []string{"rtt.p50 > 1ms"}, rtt: 500, wantErr: isNil, steps: body},
		{name: "success without phases", noTimer: true, wantErr: isNil, steps: body},
		{name: "figures before the plan", first: true, wantErr: isNil, steps: "plannedFigures plan open start measure finish close closed write"},
		{name: "gate failed", failIf: []string{"rtt.p50 > 1ms"}, rtt: 5000, wantErr: isGate, steps: body},
		{name: "app error wins over a failed gate", failIf: []string{"rtt.p50 > 1ms"}, rtt: 5000, appErr: true, wantErr: isApp, steps: body},
		{name: "dry run", dry: true, wantErr: isNil, steps: "plan plannedFigures writePlan open start close"},
		{name: "plan fails", failAt: "plan", wantErr: isStep, steps: "plan"},
		{name: "unknown figure in a gate", failIf: []string{"tcp.gbps < 1"}, wantErr: isGateSyntax, steps: "plan plannedFigures"},
		{name: "unknown figure, checked first", first: true, failIf: []string{"tcp.gbps < 1"}, wantErr: isGateSyntax, steps: "plannedFigures"},
		{name: "open fails", failAt: "open", wantErr: isStep, steps: "plan plannedFigures open"},
		{name: "open fails with a session", failAt: "open-with-session", wantErr: isStep, steps: "plan plannedFigures open close"},
		{name: "start fails", failAt: "start", wantErr: isStep, steps: "plan plannedFigures open start close"},
		{name: "interrupted while starting", failAt: "interrupt in start", wantErr: isInterrupted, steps: "plan plannedFigures open start close"},
		{name: "measure fails", failAt: "measure", wantErr: isStep, steps: "plan plannedFigures open start measure close"},
		{name: "interrupted while measuring", failAt: "interrupt in measure", wantErr: isInterrupted, steps: "plan plannedFigures open start measure close"},
		{name: "close fails", closeFail: true, wantErr: isLeftBehind, steps: "plan plannedFigures open start measure finish close"},
		{name: "write fails", failAt: "write", wantErr: isStep, steps: body},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &fakeCommand{failAt: tc.failAt, cancel: cancel, rtt: tc.rtt, appErr: tc.appErr, cs: fake.NewClientset()}
			c.cs.PrependReactor("delete", "networkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
				c.steps = append(c.steps, "close")
				if tc.closeFail {
					return true, nil, errors.New("the API server is gone")
				}
				return true, nil, nil
			})
			if !tc.noTimer {
				c.timer = NewPhaseTimer(&c.timing, time.Now())
			}
			out := &strings.Builder{}
			o := &CommonOptions{Gates: Gates{FailIf: tc.failIf}, DryRun: tc.dry}
			o.Out = out
			if err := o.Gates.Parse(""); err != nil {
				t.Fatal(err)
			}
			var cmd Command = c
			if tc.first {
				cmd = firstFigures{c}
			}
			err := o.Execute(ctx, time.Now(), cmd)
			if !tc.wantErr(err) {
				t.Errorf("error %v", err)
			}
			if got := strings.Join(c.steps, " "); got != tc.steps {
				t.Errorf("steps %q, want %q", got, tc.steps)
			}
			if tc.dry && !strings.Contains(out.String(), "nothing was created") {
				t.Errorf("dry run wrote %q", out)
			}
			wantPhases := 1
			if tc.noTimer {
				wantPhases = 0
			}
			if c.written && (c.timing.MeasuringSeconds != 1 || c.timing.WallSeconds < 0 || len(c.timing.Phases) != wantPhases) {
				t.Errorf("timing %+v: want 1 s measuring and %d phases (cleanup)", c.timing, wantPhases)
			}
		})
	}
}

func isNil(err error) bool        { return err == nil }
func isStep(err error) bool       { return errors.Is(err, errStep) }
func isGate(err error) bool       { return errors.Is(err, ErrGateFailed) }
func isApp(err error) bool        { return errors.Is(err, errApp) && !errors.Is(err, ErrGateFailed) }
func isLeftBehind(err error) bool { return errors.Is(err, session.ErrLeftBehind) }
func isGateSyntax(err error) bool {
	return errors.Is(err, gate.ErrUnknownFigure) && !errors.Is(err, ErrGateFailed)
}
func isInterrupted(err error) bool { return errors.Is(err, ErrInterrupted) }
