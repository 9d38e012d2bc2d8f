package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// WriteMatrix writes a matrix report as JSON, YAML, one HTML page, OpenMetrics, JUnit, or
// (format "") tables for people, coloured when colour is set.
func WriteMatrix(w io.Writer, format string, r *report.MatrixReport, colour bool) error {
	switch format {
	case "":
	case "html":
		return WriteMatrixHTML(w, r)
	case FormatOpenMetrics:
		return WriteMatrixMetrics(w, r)
	case FormatJUnit:
		return WriteJUnit(w, "matrix of "+r.Namespace, "netbench.matrix", r.StartTime, r.Timing, r.Checks)
	default:
		return writeMachineOrText(w, format, r, func(w io.Writer) error { return WriteMatrix(w, "", r, colour) })
	}
	writeMatrixHeader(w, r)
	grid, axis := r.Zones, "zone"
	if r.Scope == "nodes" {
		grid, axis = r.NodeGrid, "node"
	}
	fmt.Fprintf(w, "\nRTT p50 / p99 by %s (rows: from, columns: to; each cell the median of its pairs' figures, pairs in brackets)\n", axis)
	writeGrid(w, grid, func(c report.MatrixCell) string {
		return fmt.Sprintf("%s / %s (%d)", report.Micros(c.P50Micros), report.Micros(c.P99Micros), c.Pairs)
	}, colour)
	if hasGbps(grid) {
		fmt.Fprintf(w, "\nTCP throughput by %s, Gbit/s (median of the cell's pairs)\n", axis)
		writeGrid(w, grid, func(c report.MatrixCell) string {
			if c.Gbps == nil {
				return "—"
			}
			return fmt.Sprintf("%.2f", *c.Gbps)
		}, false)
	}
	writeRateGrids(w, grid, axis, r.Pairs)
	if r.Scope == "nodes" && len(r.Zones) > 1 {
		fmt.Fprintln(w, "\nRTT p50 / p99 by zone")
		writeGrid(w, r.Zones, func(c report.MatrixCell) string {
			return fmt.Sprintf("%s / %s (%d)", report.Micros(c.P50Micros), report.Micros(c.P99Micros), c.Pairs)
		}, colour)
	}
	writeMatrixFamilies(w, r, colour)
	writeNodeSummary(w, r.Summary, colour)
	writeOutliers(w, r, colour)
	writePolicy(w, r.Policy)
	writeValidity(w, matrixValidity(r.Pairs)...)
	writeChecks(w, r.Checks)
	writeFooter(w, r.Warnings, r.Timing)
	return nil
}

func writeMatrixHeader(w io.Writer, r *report.MatrixReport) {
	zones := map[string]bool{}
	for _, n := range r.Nodes {
		zones[n.Zone] = true
	}
	scope := r.Scope
	switch {
	case r.Scope == "zones":
		scope += fmt.Sprintf(", up to %d pairs per cell", r.Plan.PairsPerCell)
	case r.Scope == "sample":
		scope += fmt.Sprintf(" of %d pairs", r.Plan.Sample)
	}
	fmt.Fprintf(w, "kubectl netbench matrix: %d nodes in %d zones (namespace %s), scope %s\n", len(r.Nodes), len(zones), r.Namespace, scope)
	switch {
	case r.IPv6 != nil:
		fmt.Fprintf(w, "IP families: IPv4 and IPv6 (each pair measured over both in one job; IPv6's figures named %s*)\n", report.MatrixV6Prefix)
	case r.IPFamily != "":
		fmt.Fprintf(w, "IP family: %s\n", r.IPFamily)
	}
	fmt.Fprintf(w, "%d pairs in %d rounds of up to %d at once; RTT from %s, %s round trips per pair\n",
		r.Plan.Pairs, r.Plan.Rounds, r.Plan.Concurrency, r.Probe, samplesOf(r.Pairs))
	for _, e := range r.Excluded {
		fmt.Fprintf(w, "left out %s: %s\n", e.Node, e.Reason)
	}
	for _, p := range r.Pairs {
		if p.Error != "" {
			fmt.Fprintf(w, "not measured %s → %s: %s\n", p.From, p.To, p.Error)
		}
		if p.RateError != "" {
			fmt.Fprintf(w, "rates not measured %s → %s: %s\n", p.From, p.To, p.RateError)
		}
	}
}

// samplesOf is the pairs' sample count, or its range when they differ.
func samplesOf(pairs []report.MatrixPair) string {
	lo, hi := -1, -1
	for _, p := range pairs {
		if !report.Measured(p) {
			continue
		}
		if lo < 0 || p.Samples < lo {
			lo = p.Samples
		}
		hi = max(hi, p.Samples)
	}
	switch {
	case lo < 0:
		return "no"
	case lo == hi:
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

func hasGbps(cells []report.MatrixCell) bool {
	for _, c := range cells {
		if c.Gbps != nil {
			return true
		}
	}
	return false
}

// writeRateGrids writes, for a matrix run with --rates, a grid per rate probe: the median of its
// cell's pairs, per second.
func writeRateGrids(w io.Writer, grid []report.MatrixCell, axis string, pairs []report.MatrixPair) {
	for _, kind := range report.MatrixRateKinds {
		if !slices.ContainsFunc(grid, func(c report.MatrixCell) bool { _, ok := c.PerSecond[kind]; return ok }) {
			continue
		}
		fmt.Fprintf(w, "\n%s by %s, %s (median of the cell's pairs; %s)\n", kind, axis, rateUnit(kind), rateClients(kind, pairs))
		writeGrid(w, grid, func(c report.MatrixCell) string {
			v, ok := c.PerSecond[kind]
			if !ok {
				return "—"
			}
			return fmt.Sprintf("%.0f", v)
		}, false)
		for _, p := range pairs {
			for _, res := range p.Results {
				if res.Kind == kind && res.Rate != nil {
					writeRateStops(w, fmt.Sprintf("%s → %s, %s", p.From, p.To, res.Name), res.Rate)
				}
			}
		}
	}
}

// rateUnit names what a rate probe counts per second.
func rateUnit(kind string) string {
	if kind == v1alpha1.ProbeTCPCRR {
		return "connections per second"
	}
	return "transactions per second"
}

// rateClients says how a matrix's rate probe ran: its clients, what each transaction is, and
// on how many pairs it ended at its cap on transactions before its time.
func rateClients(kind string, pairs []report.MatrixPair) string {
	clients, capped, limit := 0, 0, int64(0)
	for _, p := range pairs {
		for _, res := range p.Results {
			if res.Kind == kind && res.Rate != nil {
				clients = res.Rate.Connections
				if res.Rate.Capped {
					capped, limit = capped+1, max(limit, res.Rate.Cap)
				}
			}
		}
	}
	what := "1-byte request and response"
	switch kind {
	case v1alpha1.ProbeTCPCRR:
		what = "each connection: connect, 1-byte request, response, close"
	case v1alpha1.ProbeUDPRR:
		what = "its smallest datagram each way (its header)"
	}
	s := fmt.Sprintf("%d client(s) in a closed loop, %s", clients, what)
	if capped > 0 {
		s += fmt.Sprintf("; %d pair(s) ended at the cap of %d before their time", capped, limit)
	}
	return s
}

// ANSI colours of the heat scale and of outliers.
const (
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiRed    = "\x1b[31m"
	ansiReset  = "\x1b[0m"
)

// heat colours a cell by its p50 over the smallest cell's: up to 1.5× green, up to 3× yellow,
// beyond red.
func heat(v, lowest float64) string {
	switch {
	case lowest <= 0 || v <= 1.5*lowest:
		return ansiGreen
	case v <= 3*lowest:
		return ansiYellow
	}
	return ansiRed
}

// writeGrid prints cells as a table with one row per From and one column per To; cells not
// measured show "—".
func writeGrid(w io.Writer, cells []report.MatrixCell, text func(report.MatrixCell) string, colour bool) {
	rows, cols := axes(cells)
	byKey := map[[2]string]report.MatrixCell{}
	lowest := 0.0
	for _, c := range cells {
		byKey[[2]string{c.From, c.To}] = c
		if lowest == 0 || c.P50Micros < lowest {
			lowest = c.P50Micros
		}
	}
	table := [][]string{append([]string{"from \\ to"}, cols...)}
	paint := [][]string{make([]string, len(cols)+1)}
	for _, r := range rows {
		line, hue := []string{r}, []string{""}
		for _, col := range cols {
			c, ok := byKey[[2]string{r, col}]
			if !ok {
				line, hue = append(line, "—"), append(hue, "")
				continue
			}
			line, hue = append(line, text(c)), append(hue, heat(c.P50Micros, lowest))
		}
		table, paint = append(table, line), append(paint, hue)
	}
	writeTable(w, table, paint, colour)
}

// axes are a grid's rows and columns, each sorted: every name on either side is both a row and a
// column, so that the diagonal lines up.
func axes(cells []report.MatrixCell) (rows, cols []string) {
	seen := map[string]bool{}
	for _, c := range cells {
		for _, n := range []string{c.From, c.To} {
			if !seen[n] {
				seen[n] = true
				rows = append(rows, n)
			}
		}
	}
	slices.Sort(rows)
	return rows, rows
}

// writeTable left-aligns columns two spaces apart; paint holds each cell's colour.
func writeTable(w io.Writer, table, paint [][]string, colour bool) {
	widths := map[int]int{}
	for _, row := range table {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for r, row := range table {
		var b strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if colour && paint[r][i] != "" {
				cell = paint[r][i] + cell + ansiReset
			}
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(pad + "  ")
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

func writeNodeSummary(w io.Writer, summary []report.NodeSummary, colour bool) {
	fmt.Fprintln(w, "\nper node: the median of its pairs' p50 over the same cells' other pairs")
	table := [][]string{{"node", "zone", "pairs (client/server)", "ratio", "excess"}}
	paint := [][]string{make([]string, 5)}
	for _, s := range summary {
		ratio, excess := "—", "—"
		if s.Compared > 0 {
			ratio, excess = fmt.Sprintf("%.2f×", s.Ratio), signedMicros(s.ExcessMicros)
		}
		hue := ""
		if s.Outlier {
			hue = ansiRed
		}
		table = append(table, []string{s.Node, s.Zone, fmt.Sprintf("%d/%d", s.AsClient, s.AsServer), ratio, excess})
		paint = append(paint, []string{hue, "", "", hue, hue})
	}
	writeTable(w, table, paint, colour)
}

func signedMicros(us float64) string {
	if us >= 0 {
		return "+" + report.Micros(us)
	}
	return report.Micros(us)
}

func writeOutliers(w io.Writer, r *report.MatrixReport, colour bool) {
	if len(r.Outliers) == 0 {
		fmt.Fprintf(w, "\nno outliers (no node at %.2f× nor pair at %.2f× the same cells' other pairs and %d µs above)\n", r.NodeFactor, r.Factor, report.MinOutlierExcessMicros)
		return
	}
	fmt.Fprintf(w, "\noutliers (nodes at %.2f×, pairs at %.2f× the same cells' other pairs, and at least %d µs above)\n", r.NodeFactor, r.Factor, report.MinOutlierExcessMicros)
	for _, o := range r.Outliers {
		line := "  " + o.Message
		if colour {
			line = "  " + ansiRed + o.Message + ansiReset
		}
		fmt.Fprintln(w, line)
	}
}
