package render

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// writeRounds writes, for a path run with --repeat, each figure's median over the rounds with
// their range.
func writeRounds(w io.Writer, r *report.PathReport) {
	if r.Rounds < 2 || len(r.Figures) == 0 {
		return
	}
	fmt.Fprintf(w, "\nOver %d rounds (the tables above are round 1's): each figure's median [min–max]\n", r.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, name := range r.FigureOrder {
		f, ok := r.Figures[name]
		if !ok || report.IsValidity(name) {
			continue
		}
		note := ""
		probe, _ := report.SplitFigure(name)
		if n := invalidRounds(r, probe); n > 0 {
			note = fmt.Sprintf("\tnot the network's in %d of %d rounds", n, f.Samples)
		}
		fmt.Fprintf(tw, "  %s\t%s\t[%s–%s]\t%d rounds%s\n", name, formatValue(f.Median, f.Unit), formatValue(f.Min, f.Unit), formatValue(f.Max, f.Unit), f.Samples, note)
	}
	tw.Flush()
}

// pathValidity groups a path report's results for writeValidity: one group, or one per round.
func pathValidity(r *report.PathReport) []validityGroup {
	if len(r.RoundResults) < 2 {
		return []validityGroup{{results: append(append([]*v1alpha1.ProbeResult(nil), r.Probes...), r.AppPort...)}}
	}
	var out []validityGroup
	for _, round := range r.RoundResults {
		out = append(out, validityGroup{what: fmt.Sprintf(" in round %d", round.Round), results: roundResults(round)})
	}
	return out
}

// invalidRounds counts the rounds whose result of probe a CPU limit or the application's traffic
// decided.
func invalidRounds(r *report.PathReport, probe string) int {
	n := 0
	for _, round := range r.RoundResults {
		for _, res := range roundResults(round) {
			if res.Name == probe && res.Validity != nil && !res.Validity.Valid {
				n++
			}
		}
	}
	return n
}

// roundResults are a round's agent-to-agent and app-port results.
func roundResults(round report.LadderRound) []*v1alpha1.ProbeResult {
	return append(append([]*v1alpha1.ProbeResult(nil), round.Probes...), round.AppPort...)
}
