package render

import (
	"fmt"
	"io"
	"strconv"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// writeRace prints the race check and its advice.
func writeRace(w io.Writer, r *report.DNSReport) {
	rc := r.Result.Race
	if rc == nil {
		return
	}
	fmt.Fprintf(w, "\nRace check: %s asked %d times, as the %s resolver sends A and AAAA (%s), %d lookups at once, timeout %d s × %d attempts\n",
		rc.Name, rc.Measured.Lookups, r.Result.Resolver, rc.Measured.Mode, rc.Concurrency, rc.TimeoutSeconds, rc.Attempts)
	for _, run := range []*v1alpha1.DNSRaceRun{&rc.Measured, rc.Fix} {
		if run == nil || run.Mode == v1alpha1.RaceTCP {
			continue
		}
		fmt.Fprintf(w, "  %-22s %d of %d lookups waited out a timeout (%s), %d queries lost, %d failed; p50 %s, p99 %s, max %s\n",
			string(run.Mode)+":", run.Slow, run.Lookups, percent(run.Slow, run.Lookups), run.Lost, run.Failed,
			report.Micros(run.Latency.P50Micros), report.Micros(run.Latency.P99Micros), report.Micros(run.Latency.MaxMicros))
	}
	if a := r.RaceAdvice; a != nil {
		fmt.Fprintf(w, "  %s\n", a.Advice)
		if a.Command != "" {
			fmt.Fprintf(w, "  %s\n", a.Command)
		}
	}
}

func percent(n, of int) string {
	if of == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + " %"
}
