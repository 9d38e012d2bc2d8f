package plugin

import (
	"cmp"
	"context"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// command is what a command supplies to the runner: its own plan, start, measure and report.
// The runner owns the sequence they share, in this order: plan (nothing created) and --fail-if
// checked against the planned figures (before the plan when they do not depend on it), open (permissions, the session and its deferred close),
// start, measure, finish, the session closed, closed, timing, gates evaluated, write, verdict.
type command interface {
	// plan resolves the targets and places the agents; it creates nothing.
	plan(ctx context.Context) error
	// plannedFigures are the figures the report will have, for checking --fail-if.
	plannedFigures() map[string]string
	// open checks the user's permissions and opens the run's session.
	open(ctx context.Context) (*Session, error)
	// start creates what measuring needs (temporary policies, agents).
	start(ctx context.Context) error
	// measure runs the probes and says how long that took.
	measure(ctx context.Context) (time.Duration, error)
	// finish completes the report from what the agents reported, before the session closes.
	finish(ctx context.Context)
	// closed completes the report once every agent has ended and every temporary object is gone.
	closed()
	// output is the report to time, check and write.
	output() runOutput
}

// runOutput is a command's report as the runner needs it.
type runOutput struct {
	timing *report.Timing
	timer  *phaseTimer // nil: the report has no phases
	// figures are the report's figures for --fail-if; checks receives the results.
	figures func() []report.FigureValue
	checks  *[]gate.Result
	write   func() error
	// err, when set, is the run's error after a written report (path's app-port probes).
	err func() error
	// complete, when set, completes the report once cleanup is timed (matrix: its cells).
	complete func()
}

// planWriter is a command that can stop after its plan (--dry-run) and write it.
type planWriter interface {
	dryRun() bool
	writePlan() error
}

// figuresFirst is a command whose planned figures do not depend on its plan: its --fail-if
// conditions are checked before it resolves anything, so that a typo costs no API call.
type figuresFirst interface {
	figuresBeforePlan()
}

// run carries out one run of c. Whatever happens after open, the session is closed once (by the
// deferred finish when an earlier step failed), and an interrupted run says what it left.
func (o *commonOptions) run(ctx context.Context, start time.Time, c command) (err error) {
	_, first := c.(figuresFirst)
	if first {
		if err := o.gates.check(c.plannedFigures()); err != nil {
			return err
		}
	}
	if err := c.plan(ctx); err != nil {
		return err
	}
	if pw, ok := c.(planWriter); ok && pw.dryRun() {
		return pw.writePlan()
	}
	if !first {
		if err := o.gates.check(c.plannedFigures()); err != nil {
			return err
		}
	}
	sess, err := c.open(ctx)
	if sess != nil {
		defer func() { err = o.finish(ctx, sess, err) }()
	}
	if err != nil {
		return err
	}
	if err := c.start(ctx); err != nil {
		return err
	}
	measuring, err := c.measure(ctx)
	if err != nil {
		return err
	}
	out := c.output()
	out.timing.MeasuringSeconds = round1(measuring.Seconds())
	c.finish(ctx)
	if err := sess.Close(); err != nil {
		return err
	}
	c.closed()
	return o.conclude(start, out)
}

// conclude times, checks and writes a finished run's report, and gives its verdict.
func (o *commonOptions) conclude(start time.Time, out runOutput) error {
	if out.timer != nil {
		out.timer.phase("cleanup")
	}
	if out.complete != nil {
		out.complete()
	}
	t := out.timing
	t.WallSeconds = round1(time.Since(start).Seconds())
	t.OverheadSeconds = round1(t.WallSeconds - t.MeasuringSeconds)
	*out.checks = o.gates.evaluate(out.figures())
	if err := out.write(); err != nil {
		return err
	}
	var runErr error
	if out.err != nil {
		runErr = out.err()
	}
	return cmp.Or(runErr, verdict(*out.checks))
}
