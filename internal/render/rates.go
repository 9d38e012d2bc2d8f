package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// writeRates writes the table of the rate probes (tcp-rr, udp-rr, tcp-crr): their rate beside
// Little's law, their transactions' latency, and what tcp-crr did to the client's ports.
func writeRates(w io.Writer, title string, rates []*v1alpha1.ProbeResult) {
	fmt.Fprintf(w, "\nRates, %s (closed loop: each client's next transaction as soon as the last one ended)\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "probe\tclients\tbytes req/resp\tseconds\ttransactions\tper second\tLittle's law\terrors\tmin\tp50\tp90\tp99\tmax\t")
	for _, r := range rates {
		x, l := r.Rate, r.Rate.Latency
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%.1f\t%d\t%.0f\t%.0f\t%d\t%s\t%s\t%s\t%s\t%s\t\n", report.Marked(r), x.Connections, x.RequestBytes, x.ResponseBytes,
			x.DurationSeconds, x.Transactions, x.PerSecond, x.LittleLawPerSecond, x.Errors,
			report.Micros(l.MinMicros), report.Micros(l.P50Micros), report.Micros(l.P90Micros), report.Micros(l.P99Micros), report.Micros(l.MaxMicros))
	}
	tw.Flush()
	var lats []namedLatency
	for _, r := range rates {
		lats = append(lats, namedLatency{r.Name, r.Rate.Latency})
	}
	percentileBasis(w, lats)
	for _, r := range rates {
		writeRateNotes(w, r.Name, r.Rate)
		writeIdleEntries(w, r)
	}
}

// writeIdleEntries says how often, per transaction, the agents' nodes' CPUs stopped idle over
// a rate probe: a loop whose waits sleep pays a wake-up on some of its transactions, which is
// the machine's, not the path's.
func writeIdleEntries(w io.Writer, r *v1alpha1.ProbeResult) {
	v, n := r.Validity, r.Rate.Transactions
	if v == nil || n <= 0 {
		return
	}
	var parts []string
	for _, side := range []struct {
		name string
		use  *v1alpha1.CPUUse
	}{{"client's", v.Client}, {"server's", v.Server}} {
		if side.use != nil && side.use.NodeIdleEntries != nil {
			parts = append(parts, fmt.Sprintf("%s node %.2f", side.name, float64(*side.use.NodeIdleEntries)/float64(n)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  %s: CPU idle entries per transaction (summed over every CPU of the node, whatever ran on it: at most this many of its waits paid a CPU's wake-up, time the path does not cost): %s\n",
			r.Name, strings.Join(parts, ", "))
	}
}

// writeRateNotes says what one rate probe's transaction is and what else it found.
func writeRateNotes(w io.Writer, name string, x *v1alpha1.RateResult) {
	switch x.Kind {
	case v1alpha1.ProbeTCPCRR:
		connect := "n/a"
		if x.Connect != nil {
			connect = report.Micros(x.Connect.P50Micros)
		}
		fmt.Fprintf(w, "  %s: a transaction is a whole connection: connect, request (with a %d-byte hello), response, close; connect p50 %s (one round trip)\n",
			name, x.HelloBytes, connect)
		if p := x.Ports; p != nil {
			fmt.Fprintf(w, "  %s: client ports held at most %d of a budget of %d (half the pod's range %d less its TIME-WAIT sockets towards the server, %d; the pod's TIME-WAIT sockets %d before, %d after, each for 60 s)\n",
				name, p.PeakHeld, p.Budget, p.RangeSize, p.TimeWaitToServer, p.TimeWaitBefore, p.TimeWaitAfter)
		}
	case v1alpha1.ProbeUDPRR:
		fmt.Fprintf(w, "  %s: %.1f %% of datagrams unanswered within %.0f ms (each counted as an error)\n", name, x.LossPercent, x.TimeoutMillis)
	}
	if wait, ok := clientWaits[x.ClientWait]; ok && x.Kind != v1alpha1.ProbeTCPCRR {
		fmt.Fprintf(w, "  %s: the client waited for each answer %s\n", name, wait)
	}
	writeRateStops(w, name, x)
}

// clientWaits says how a rate client waited for its answers.
var clientWaits = map[string]string{
	v1alpha1.WaitBlockingRead: "in a blocking read(2), as sockperf and netperf do",
	v1alpha1.WaitPoller:       "through Go's network poller (a few µs more per transaction than a blocking read)",
}

// writeRateStops says whether a rate probe stopped early (the port budget, errors) and its
// first error; where names the probe (and, in a ladder, its rung and round).
func writeRateStops(w io.Writer, where string, x *v1alpha1.RateResult) {
	if x.Stopped != "" {
		fmt.Fprintf(w, "  %s: stopped early: %s\n", where, x.Stopped)
	}
	if x.FirstError != "" {
		fmt.Fprintf(w, "  %s: first error: %s\n", where, x.FirstError)
	}
}

// writeLadderRateStops is writeRateStops for every rate probe of every rung and round: a
// ladder's table shows medians only, and a round that stopped early must not pass unseen.
func writeLadderRateStops(w io.Writer, rungs []*report.LadderRung) {
	for _, rung := range rungs {
		for _, round := range rung.Results {
			for _, p := range round.Probes {
				if p.Rate != nil {
					writeRateStops(w, fmt.Sprintf("%s, round %d, %s", rung.Name, round.Round, p.Name), p.Rate)
				}
			}
		}
	}
}
