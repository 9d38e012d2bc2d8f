package render

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// writeLoaded writes a loaded-rtt probe: its round trips idle and under the load, the delay the
// load added, the responsiveness, and the load itself.
func writeLoaded(w io.Writer, title string, r *v1alpha1.ProbeResult) {
	x := r.Loaded
	if x.Idle == nil || x.Loaded == nil {
		fmt.Fprintf(w, "\nLatency under load (%s), %s: incomplete result (no idle or loaded round trips)\n", report.Marked(r), title)
		return
	}
	fmt.Fprintf(w, "\nLatency under load (%s), %s: round trips idle, then while %d TCP streams from the client to the server saturate the path\n", report.Marked(r), title, x.Streams)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "echo\tidle replies\tidle p50\tidle p99\tloaded replies\tloaded loss\tloaded p50\tloaded p99\tadded p50\tadded p99\t")
	row := func(name string, idle, loaded *v1alpha1.RTTResult) {
		if idle == nil || loaded == nil {
			return
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%d/%d\t%.1f %%\t%s\t%s\t%s\t%s\t\n", name, idle.Received, idle.Sent, report.Micros(idle.RTT.P50Micros), report.Micros(idle.RTT.P99Micros),
			loaded.Received, loaded.Sent, loaded.LossPercent, report.Micros(loaded.RTT.P50Micros), report.Micros(loaded.RTT.P99Micros),
			report.Micros(loaded.RTT.P50Micros-idle.RTT.P50Micros), report.Micros(loaded.RTT.P99Micros-idle.RTT.P99Micros))
	}
	row("udp", x.Idle, x.Loaded)
	row("icmp", x.IdleICMP, x.LoadedICMP)
	tw.Flush()
	if x.ICMPSkipped != "" {
		fmt.Fprintf(w, "  icmp: not measured: %s\n", x.ICMPSkipped)
	}
	if t := x.Throughput; t != nil {
		fmt.Fprintf(w, "  load: %s received over %.1f s (%d retransmits); samples every %.3g ms from %.1f s after its start until 0.5 s before its end\n",
			Bits(t.BitsPerSecondReceived), x.LoadSeconds, t.Retransmits, x.Loaded.IntervalMillis, x.WarmUpSeconds)
	}
	fmt.Fprintf(w, "  round trips per minute under load: %.0f (%.0f idle): 60 s over the trimmed mean (lowest 95 %%) of the UDP round trips, the IETF IPPM\n", x.RPM, x.IdleRPM)
	fmt.Fprintln(w, "  responsiveness draft's unit and trimmed mean; not comparable with its RPM: these echoes (kernel time stamps, the server's dwell taken off) leave out the stack and application time its TCP, TLS and HTTP probes hold")
}
