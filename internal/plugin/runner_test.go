package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/report"
)

var errStep = errors.New("step failed")

// fakeCommand fails at the step named in failAt, records the steps it ran, and gives the
// session one temporary NetworkPolicy when it starts, so that closing the session shows up as
// one delete on the fake cluster.
type fakeCommand struct {
	failAt  string
	cancel  context.CancelFunc // called during measure when failAt is "interrupt"
	dry     bool
	steps   []string
	sess    *Session
	rtt     float64
	timing  report.Timing
	checks  []gate.Result
	written bool
	timer   *phaseTimer
}

func (c *fakeCommand) step(name string) error {
	c.steps = append(c.steps, name)
	if c.failAt == name {
		return errStep
	}
	return nil
}

func (c *fakeCommand) plan(context.Context) error { return c.step("plan") }
func (c *fakeCommand) plannedFigures() map[string]string {
	c.steps = append(c.steps, "plannedFigures")
	return map[string]string{"rtt.p50": "µs"}
}
func (c *fakeCommand) dryRun() bool { return c.dry }
func (c *fakeCommand) writePlan() error {
	c.steps = append(c.steps, "writePlan")
	return nil
}

func (c *fakeCommand) open(context.Context) (*Session, error) {
	if err := c.step("open"); err != nil {
		return nil, err
	}
	c.sess = NewSession(nil, "run1", "token", "image", ModePod, time.Second)
	return c.sess, nil
}

func (c *fakeCommand) start(context.Context) error {
	c.sess.policies = append(c.sess.policies, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "np"}})
	return c.step("start")
}

func (c *fakeCommand) measure(context.Context) (time.Duration, error) {
	if c.failAt == "interrupt" {
		c.steps = append(c.steps, "measure")
		c.cancel()
		return time.Second, nil
	}
	return time.Second, c.step("measure")
}

func (c *fakeCommand) finish(context.Context) { c.steps = append(c.steps, "finish") }
func (c *fakeCommand) closed()                { c.steps = append(c.steps, "closed") }

func (c *fakeCommand) output() runOutput {
	return runOutput{timing: &c.timing, timer: c.timer, checks: &c.checks,
		figures: func() []report.FigureValue {
			return []report.FigureValue{{Name: "rtt.p50", Unit: "µs", Value: c.rtt}}
		},
		write: func() error {
			c.written = true
			return c.step("write")
		}}
}

// The runner carries out every command's shared sequence: on every exit path after open the
// session is closed exactly once (one delete of its temporary policy), an interrupted run says
// so, a failed gate comes after the written report as ErrGateFailed, and nothing is opened when
// planning or the gates' check fails.
func TestRunnerExitPaths(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failAt  string
		failIf  []string
		rtt     float64
		dry     bool
		wantErr func(error) bool
		steps   string
		deletes int
	}{
		{"success", "", []string{"rtt.p50 > 1ms"}, 500, false, isNil, "plan plannedFigures open start measure finish closed write", 1},
		{"gate failed", "", []string{"rtt.p50 > 1ms"}, 5000, false, isGate, "plan plannedFigures open start measure finish closed write", 1},
		{"dry run", "", nil, 0, true, isNil, "plan writePlan", 0},
		{"plan fails", "plan", nil, 0, false, isStep, "plan", 0},
		{"unknown figure in a gate", "", []string{"tcp.gbps < 1"}, 0, false, isGateSyntax, "plan plannedFigures", 0},
		{"open fails", "open", nil, 0, false, isStep, "plan plannedFigures open", 0},
		{"start fails", "start", nil, 0, false, isStep, "plan plannedFigures open start", 1},
		{"measure fails", "measure", nil, 0, false, isStep, "plan plannedFigures open start measure", 1},
		{"interrupted while measuring", "interrupt", nil, 0, false, isInterrupted, "plan plannedFigures open start measure", 1},
		{"write fails", "write", nil, 0, false, isStep, "plan plannedFigures open start measure finish closed write", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cs := fake.NewClientset()
			o := &commonOptions{gates: gates{FailIf: tc.failIf}}
			if err := o.gates.parse(""); err != nil {
				t.Fatal(err)
			}
			c := &fakeCommand{failAt: tc.failAt, cancel: cancel, dry: tc.dry, rtt: tc.rtt}
			c.timer = newPhaseTimer(&c.timing, time.Now())
			err := o.run(ctx, time.Now(), &clientSetter{c, cs})
			if !tc.wantErr(err) {
				t.Errorf("error %v", err)
			}
			if got := strings.Join(c.steps, " "); got != tc.steps {
				t.Errorf("steps %q, want %q", got, tc.steps)
			}
			deletes := 0
			for _, a := range cs.Actions() {
				if a.GetVerb() == "delete" && a.GetResource().Resource == "networkpolicies" {
					deletes++
				}
			}
			if deletes != tc.deletes {
				t.Errorf("the session's policy deleted %d times, want %d", deletes, tc.deletes)
			}
			if c.written && (c.timing.MeasuringSeconds != 1 || c.timing.WallSeconds < 0 || len(c.timing.Phases) != 1 || c.timing.Phases[0].Name != "cleanup") {
				t.Errorf("timing %+v: want 1 s measuring and the cleanup phase", c.timing)
			}
		})
	}
}

// clientSetter gives the fake command's session the fake cluster.
type clientSetter struct {
	*fakeCommand
	cs *fake.Clientset
}

func (c *clientSetter) open(ctx context.Context) (*Session, error) {
	s, err := c.fakeCommand.open(ctx)
	if s != nil {
		s.Client = c.cs
	}
	return s, err
}

func (c *clientSetter) dryRun() bool     { return c.fakeCommand.dryRun() }
func (c *clientSetter) writePlan() error { return c.fakeCommand.writePlan() }

func isNil(err error) bool  { return err == nil }
func isStep(err error) bool { return errors.Is(err, errStep) }
func isGate(err error) bool { return errors.Is(err, ErrGateFailed) }
func isGateSyntax(err error) bool {
	return errors.Is(err, gate.ErrUnknownFigure) && !errors.Is(err, ErrGateFailed)
}
func isInterrupted(err error) bool { return errors.Is(err, ErrInterrupted) }
