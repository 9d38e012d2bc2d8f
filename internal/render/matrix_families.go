package render

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// writeMatrixFamilies sets an --ip-family both matrix's cells side by side: each cell's RTT p50
// (and throughput) over IPv4 and over IPv6, measured in the same jobs, and the difference; then
// what only IPv6 says (pairs it could not measure, its outliers).
func writeMatrixFamilies(w io.Writer, r *report.MatrixReport, colour bool) {
	v6 := r.V6()
	if v6 == nil {
		return
	}
	grid, grid6, axis := r.Zones, v6.Zones, "zone"
	if r.Scope == "nodes" {
		grid, grid6, axis = r.NodeGrid, v6.NodeGrid, "node"
	}
	twins, own := map[[2]string]report.MatrixCell{}, map[[2]string]bool{}
	for _, c := range grid6 {
		twins[[2]string{c.From, c.To}] = c
	}
	for _, c := range grid {
		own[[2]string{c.From, c.To}] = true
	}
	fmt.Fprintf(w, "\nIPv4 and IPv6 side by side, by %s (each cell's median over the same pairs, both families in the same jobs; difference = IPv6 − IPv4)\n", axis)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CELL\tFIGURE\tIPv4\tIPv6\tDIFFERENCE\t")
	for _, c := range grid {
		t, ok := twins[[2]string{c.From, c.To}]
		cell := c.From + " → " + c.To
		if !ok {
			fmt.Fprintf(tw, "  %s\tRTT p50\t%s\t—\t(no IPv6 pair measured)\t\n", cell, formatValue(c.P50Micros, report.UnitMicros))
			continue
		}
		familyRow(tw, cell, "RTT p50", c.P50Micros, t.P50Micros, report.UnitMicros)
		familyRow(tw, cell, "RTT p99", c.P99Micros, t.P99Micros, report.UnitMicros)
		if c.Gbps != nil && t.Gbps != nil {
			familyRow(tw, cell, "TCP", *c.Gbps, *t.Gbps, report.UnitGbps)
		}
		for _, kind := range report.MatrixRateKinds {
			v4, ok4 := c.PerSecond[kind]
			v6, ok6 := t.PerSecond[kind]
			if ok4 && ok6 {
				familyRow(tw, cell, kind, v4, v6, report.UnitReqPerS)
			}
		}
	}
	for _, c := range grid6 {
		if !own[[2]string{c.From, c.To}] {
			fmt.Fprintf(tw, "  %s → %s\tRTT p50\t—\t%s\t(no IPv4 pair measured)\t\n", c.From, c.To, formatValue(c.P50Micros, report.UnitMicros))
		}
	}
	tw.Flush()
	for i, p := range v6.Pairs {
		if p.Error != "" && (i >= len(r.Pairs) || r.Pairs[i].Error != p.Error) {
			fmt.Fprintf(w, "not measured over IPv6 %s → %s: %s\n", p.From, p.To, p.Error)
		}
		if p.RateError != "" {
			fmt.Fprintf(w, "rates not measured over IPv6 %s → %s: %s\n", p.From, p.To, p.RateError)
		}
	}
	if len(v6.Outliers) > 0 {
		fmt.Fprintln(w, "\nIPv6 outliers")
		for _, o := range v6.Outliers {
			line := "  " + o.Message
			if colour {
				line = "  " + ansiRed + o.Message + ansiReset
			}
			fmt.Fprintln(w, line)
		}
	}
}

func familyRow(w io.Writer, cell, figure string, v4, v6 float64, unit string) {
	fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t\n", cell, figure, formatValue(v4, unit), formatValue(v6, unit), familyDiff(v4, v6, unit))
}
