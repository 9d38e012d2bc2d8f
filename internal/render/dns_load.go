package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// writeCapacity prints the capacity ramp: each server's knee, and what the nameserver's means in
// the application's lookups per second now and after the fixes.
func writeCapacity(w io.Writer, r *report.DNSReport) {
	l := r.Result.Load
	if l == nil {
		return
	}
	if l.Skipped != "" {
		fmt.Fprintf(w, "\nDNS capacity (--load): skipped: %s\n", Clean(l.Skipped))
		return
	}
	fmt.Fprintf(w, "\nDNS capacity (--load: load on the shared cluster DNS): the pod's query mix (%d queries for %s) sent open loop, %.0f s per rate, up to %.0f queries/s within %.0f s\n",
		len(l.Mix), plural(l.Lookups, "lookup"), l.StepSeconds, l.CeilingQPS, l.BudgetSeconds)
	fmt.Fprintf(w, "  a rate is sustained when the answers keep pace (≥ %.0f %% of it), p99 ≤ %s, ≤ %.0f %% unanswered within %.0f ms and no SERVFAIL or REFUSED\n", 100*l.MinPaceRatio,
		report.Micros(l.P99BudgetMicros), 100*l.MaxLossRatio, l.TimeoutMillis)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  server\tsustained\tp50 / p99 there\tsteps\tabove it")
	for _, s := range l.Servers {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", serverName(s), sustained(s), atKnee(s), len(s.Steps), Clean(aboveKnee(s)))
	}
	tw.Flush()
	c := r.Capacity
	if c == nil {
		return
	}
	atLeast := ""
	if c.LowerBound {
		atLeast = "at least "
	}
	fmt.Fprintf(w, "  At the pod's %.1f queries per lookup the nameserver allows %s%s lookups/s before it degrades", c.Now.QueriesPerLookup, atLeast, count(c.Now.LookupsPerSecond))
	for _, f := range c.Fixed {
		fmt.Fprintf(w, "; with %s (%.1f per lookup) %s%s", f.Fix, f.QueriesPerLookup, atLeast, count(f.LookupsPerSecond))
	}
	fmt.Fprintln(w, " (the same cost per query assumed)")
	for _, n := range c.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func serverName(s v1alpha1.DNSServerLoad) string {
	parts := []string{s.Address}
	if s.Nameserver {
		parts = append(parts, "(nameserver)")
	}
	if s.Pod != "" {
		parts = append(parts, s.Pod)
	}
	if s.Zone != "" {
		parts = append(parts, "("+s.Zone+")")
	}
	return strings.Join(parts, " ")
}

// sustained is the knee, or a lower bound with the reason.
func sustained(s v1alpha1.DNSServerLoad) string {
	v := count(s.SustainedQPS) + " q/s"
	switch s.Limit {
	case v1alpha1.LoadLimitDegraded:
		return v
	case v1alpha1.LoadLimitErrors:
		return v + " (stopped at errors)"
	}
	return "≥ " + v + " (" + s.Limit + ")"
}

// atKnee is the latency at the knee: the passing step of the highest rate, with its answers
// (exact percentiles over every answered query).
func atKnee(s v1alpha1.DNSServerLoad) string {
	var best *v1alpha1.DNSLoadStep
	for i, st := range s.Steps {
		if st.Degraded == "" && (best == nil || st.OfferedQPS > best.OfferedQPS) {
			best = &s.Steps[i]
		}
	}
	if best == nil {
		return "–"
	}
	return fmt.Sprintf("%s / %s (%d answers)", report.Micros(best.P50Micros), report.Micros(best.P99Micros), best.Answered)
}

// aboveKnee is the lowest failing step above the knee: its rate and why.
func aboveKnee(s v1alpha1.DNSServerLoad) string {
	var best *v1alpha1.DNSLoadStep
	for i, st := range s.Steps {
		if st.Degraded != "" && st.OfferedQPS > s.SustainedQPS && (best == nil || st.OfferedQPS < best.OfferedQPS) {
			best = &s.Steps[i]
		}
	}
	if best == nil {
		return "–"
	}
	return count(best.OfferedQPS) + " q/s: " + best.Degraded
}

// count prints a rate as a whole number with thousands separated.
func count(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
