package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
)

// LoadedRun is a report read back from a file, with its figures.
type LoadedRun struct {
	Info    RunInfo
	Figures []FigureValue
}

// ErrDifferentKinds is wrapped when diff is given the reports of two different commands.
var ErrDifferentKinds = errors.New("the runs are of different commands")

// Diff compares two runs of the same kind.
func Diff(old, cur *LoadedRun, tolerancePercent float64) (*DiffReport, error) {
	if old.Info.Kind != cur.Info.Kind {
		return nil, fmt.Errorf("%w: %s is a %s and %s a %s (compare two runs of the same command)", ErrDifferentKinds, displayName(old.Info.File), old.Info.Kind, displayName(cur.Info.File), cur.Info.Kind)
	}
	d := &DiffReport{APIVersion: APIVersion, Kind: "DiffReport", Old: old.Info, New: cur.Info, TolerancePercent: tolerancePercent}
	if old.Info.Subject != cur.Info.Subject {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the runs measured different things: %s, then %s", old.Info.Subject, cur.Info.Subject))
	}
	if old.Info.Profile != cur.Info.Profile {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the runs used different profiles (%s, then %s): sample counts differ", old.Info.Profile, cur.Info.Profile))
	}
	olds := map[string]FigureValue{}
	for _, f := range old.Figures {
		if !f.Alias {
			olds[f.Name] = f
		}
	}
	seen := map[string]bool{}
	for _, n := range cur.Figures {
		if n.Alias {
			continue
		}
		seen[n.Name] = true
		o, ok := olds[n.Name]
		if !ok {
			d.OnlyNew = append(d.OnlyNew, n.Name)
			continue
		}
		c := compareFigure(o, n, tolerancePercent)
		switch c.Verdict {
		case Regressed:
			d.Regressions++
		case Improved:
			d.Improvements++
		}
		d.Figures = append(d.Figures, c)
	}
	for _, f := range old.Figures {
		if !f.Alias && !seen[f.Name] {
			d.OnlyOld = append(d.OnlyOld, f.Name)
		}
	}
	return d, nil
}

// compareFigure decides whether a figure changed beyond the runs' spread: by more than the
// tolerance, and, where both runs carry an interval, out of each other's interval.
func compareFigure(o, n FigureValue, tol float64) FigureChange {
	c := FigureChange{Name: n.Name, Unit: n.Unit, Old: o.Value, New: n.Value, Change: round3(n.Value - o.Value),
		OldRange: o.Spread, NewRange: n.Spread, Verdict: WithinSpread}
	pct := math.Inf(1) // from 0, or from a value too close to 0 for a percentage, to another
	switch p := Round1(100 * (n.Value - o.Value) / math.Abs(o.Value)); {
	case !math.IsInf(p, 0) && !math.IsNaN(p):
		c.ChangePercent, pct = &p, math.Abs(p)
	case n.Value == o.Value:
		pct = 0
	}
	overlap := c.OldRange != nil && c.NewRange != nil && c.OldRange.Overlaps(c.NewRange)
	switch {
	case pct <= tol:
		c.Reason = fmt.Sprintf("within the %g %% tolerance", tol)
	case overlap && (c.OldRange.High == nil || c.NewRange.High == nil):
		c.Reason = "the runs' own ranges overlap: too few samples to bound this percentile from above"
	case overlap:
		c.Reason = "the runs' own ranges overlap"
	default:
		worse := (n.Value > o.Value) == HigherIsWorse(n.Unit)
		c.Verdict, c.Reason = Improved, "beyond the tolerance"
		if worse {
			c.Verdict = Regressed
		}
		if c.OldRange != nil && c.NewRange != nil {
			c.Reason += " and out of both runs' ranges"
		}
	}
	return c
}

// WriteDiff renders a diff as JSON, YAML or a table.
func WriteDiff(w io.Writer, format string, d *DiffReport) error {
	if format != "" {
		return writeMachineOrText(w, format, d, func(w io.Writer) error { return WriteDiff(w, "", d) })
	}
	fmt.Fprintf(w, "kubectl netbench diff: %s\n  old: %s (%s)\n  new: %s (%s)\n\n", d.New.Subject, d.Old.File, d.Old.StartTime.Format(time.RFC3339), d.New.File, d.New.StartTime.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tOLD\tNEW\tCHANGE\tVERDICT")
	for _, f := range d.Figures {
		pct := "—"
		if f.ChangePercent != nil {
			pct = fmt.Sprintf("%+.1f %%", *f.ChangePercent)
		}
		mark := f.Verdict
		if f.Verdict != WithinSpread {
			mark = "** " + f.Verdict
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s%s\t%s\t%s\n", f.Name, gate.Format(f.Old, f.Unit), rangeText(f.OldRange, f.Unit), gate.Format(f.New, f.Unit), rangeText(f.NewRange, f.Unit), pct, mark)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d regressed, %d improved, %d within spread (a change counts when it exceeds %g %% and, where both runs have one, leaves the other run's range)\n",
		d.Regressions, d.Improvements, len(d.Figures)-d.Regressions-d.Improvements, d.TolerancePercent)
	if len(d.OnlyOld) > 0 {
		fmt.Fprintf(w, "only in old: %v\n", d.OnlyOld)
	}
	if len(d.OnlyNew) > 0 {
		fmt.Fprintf(w, "only in new: %v\n", d.OnlyNew)
	}
	for _, s := range d.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	return nil
}

func rangeText(r *Range, unit string) string {
	switch {
	case r == nil:
		return ""
	case r.High == nil:
		return " [" + gate.Format(r.Low, unit) + " … too few samples to bound]"
	}
	return " [" + gate.Format(r.Low, unit) + " … " + gate.Format(*r.High, unit) + "]"
}
