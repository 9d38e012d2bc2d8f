package report

import (
	"errors"
	"fmt"
	"math"
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
		worse := (n.Value > o.Value) == HigherIsWorse(n)
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
