package cmdutil

import (
	"cmp"
	"context"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/internal/render"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// Command is what a command supplies to the runner: its own plan, start, measure and report.
// The runner owns the sequence they share, in this order: plan (nothing created) and --fail-if
// checked against the planned figures (before the plan when they do not depend on it), open
// (permissions, the session and its deferred close), start, measure, finish, the session
// closed, closed, timing, gates evaluated, write, verdict.
type Command interface {
	// Plan resolves the targets and places the agents; it creates nothing.
	Plan(ctx context.Context) error
	// PlannedFigures are the figures the report will have, for checking --fail-if.
	PlannedFigures() map[string]string
	// Open checks the user's permissions and opens the run's session.
	Open(ctx context.Context) (*session.Session, error)
	// Start creates what measuring needs (temporary policies, agents).
	Start(ctx context.Context) error
	// Measure runs the probes and says how long that took.
	Measure(ctx context.Context) (time.Duration, error)
	// Finish completes the report from what the agents reported, before the session closes.
	Finish(ctx context.Context)
	// Closed completes the report once every agent has ended and every temporary object is gone.
	Closed()
	// Output is the report to time, check and write.
	Output() RunOutput
}

// RunOutput is a command's report as the runner needs it.
type RunOutput struct {
	Timing *report.Timing
	Timer  *PhaseTimer // nil: the report has no phases
	// Figures are the report's figures for --fail-if; checks receives the results.
	Figures func() []report.FigureValue
	Checks  *[]gate.Result
	Write   func() error
	// Err, when set, is the run's error after a written report (path's app-port probes).
	Err func() error
	// Complete, when set, completes the report once cleanup is timed (matrix: its cells).
	Complete func()
}

// planWriter is a command with a plan to show in words before a dry run (--dry-run, human
// output): the matrix's pairs, round by round.
type planWriter interface {
	WritePlan() error
}

// rehearser is a command that creates more objects while it measures than in Start (a
// ladder's clients, dns's agents): in a dry run, Rehearse sends them all, waiting for none.
type rehearser interface {
	Rehearse(ctx context.Context) error
}

// figuresFirst is a command whose planned figures do not depend on its plan: its --fail-if
// conditions are checked before it resolves anything, so that a typo costs no API call.
type figuresFirst interface {
	FiguresBeforePlan()
}

// Execute carries out one run of c (with --dry-run, up to its start: see rehearse). Whatever happens after open, the session is closed once
// (by the deferred finish when an earlier step failed), and an interrupted run says what it
// left.
func (o *CommonOptions) Execute(ctx context.Context, start time.Time, c Command) (err error) {
	_, first := c.(figuresFirst)
	if first {
		if err := o.Gates.Check(c.PlannedFigures()); err != nil {
			return err
		}
	}
	if err := c.Plan(ctx); err != nil {
		return err
	}
	if !first {
		if err := o.Gates.Check(c.PlannedFigures()); err != nil {
			return err
		}
	}
	if pw, ok := c.(planWriter); ok && o.DryRun && o.Output == "" {
		if err := pw.WritePlan(); err != nil {
			return err
		}
	}
	sess, err := c.Open(ctx)
	if sess != nil {
		defer func() { err = o.Finish(ctx, sess, err) }()
	}
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	if o.DryRun {
		return o.rehearse(ctx, c, sess)
	}
	measuring, err := c.Measure(ctx)
	if err != nil {
		return err
	}
	out := c.Output()
	out.Timing.MeasuringSeconds = report.Round1(measuring.Seconds())
	c.Finish(ctx)
	if err := sess.Close(); err != nil {
		return err
	}
	c.Closed()
	return o.conclude(start, out)
}

// rehearse ends a dry run after Start: the objects measuring would add are sent too, then
// every object the API server admitted is written; nothing was persisted, so nothing is left.
func (o *CommonOptions) rehearse(ctx context.Context, c Command, sess *session.Session) error {
	if r, ok := c.(rehearser); ok {
		if err := r.Rehearse(ctx); err != nil {
			return err
		}
	}
	return render.WritePlanned(o.Out, o.Output, sess.Planned())
}

// conclude times, checks and writes a finished run's report, and gives its verdict.
func (o *CommonOptions) conclude(start time.Time, out RunOutput) error {
	if out.Timer != nil {
		out.Timer.Phase("cleanup")
	}
	if out.Complete != nil {
		out.Complete()
	}
	t := out.Timing
	t.WallSeconds = report.Round1(time.Since(start).Seconds())
	t.OverheadSeconds = report.Round1(t.WallSeconds - t.MeasuringSeconds)
	*out.Checks = o.Gates.Evaluate(out.Figures())
	if err := out.Write(); err != nil {
		return err
	}
	var runErr error
	if out.Err != nil {
		runErr = out.Err()
	}
	return cmp.Or(runErr, Verdict(*out.Checks))
}
