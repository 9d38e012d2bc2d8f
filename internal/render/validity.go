package render

import (
	"fmt"
	"io"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// validityGroup is a part of a report whose probes' validity is told together: the whole path
// run, a ladder rung, a matrix pair; what names it in the lines (" on rung same-zone").
type validityGroup struct {
	what    string
	results []*v1alpha1.ProbeResult
}

// writeValidity prints which groups' probes a CPU limit or the application's traffic decided,
// with reasons and advice, or one line saying none did (where any probe carries the agents'
// accounting); then the probes during which the application's own traffic was busy.
func writeValidity(w io.Writer, groups ...validityGroup) {
	var all []*v1alpha1.ProbeResult
	var lines, traffic []string
	for _, g := range groups {
		all = append(all, g.results...)
		if l := report.ValidityLines(g.what, g.results); len(l) > 0 && l[0] != report.ValidNote {
			lines = append(lines, l...)
		}
		traffic = append(append(traffic, report.TrafficLines(g.what, g.results)...), report.AppLines(g.what, g.results)...)
	}
	if len(lines) == 0 && report.HasAccounting(all) {
		lines = []string{report.ValidNote}
	}
	for _, l := range append(lines, traffic...) {
		fmt.Fprintln(w, l)
	}
}

func ladderValidity(rungs []*report.LadderRung) []validityGroup {
	var out []validityGroup
	for _, rung := range rungs {
		g := validityGroup{what: " on rung " + rung.Name}
		for _, round := range rung.Results {
			g.results = append(append(g.results, round.Probes...), round.AppPort...)
		}
		out = append(out, g)
	}
	return out
}

func matrixValidity(pairs []report.MatrixPair) []validityGroup {
	var out []validityGroup
	for _, p := range pairs {
		out = append(out, validityGroup{what: " on " + p.From + " → " + p.To, results: p.Results})
	}
	return out
}
