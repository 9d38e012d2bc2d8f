package render

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// WriteDiff renders a diff as JSON, YAML or a table.
func WriteDiff(w io.Writer, format string, d *report.DiffReport) error {
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
		if f.Verdict != report.WithinSpread {
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

func rangeText(r *report.Range, unit string) string {
	switch {
	case r == nil:
		return ""
	case r.High == nil:
		return " [" + gate.Format(r.Low, unit) + " … too few samples to bound]"
	}
	return " [" + gate.Format(r.Low, unit) + " … " + gate.Format(*r.High, unit) + "]"
}
