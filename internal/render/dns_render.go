package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// WriteDNS renders the DNS report.
func WriteDNS(w io.Writer, format string, r *report.DNSReport) error {
	switch format {
	case "":
	case FormatOpenMetrics:
		return WriteDNSMetrics(w, r)
	case FormatJUnit:
		return WriteJUnit(w, "dns "+r.Target.Namespace+"/"+r.Target.Pod, "netbench.dns", r.StartTime, r.Timing, r.Checks)
	default:
		return writeMachineOrText(w, format, r, func(w io.Writer) error { return WriteDNS(w, "", r) })
	}
	res := r.Result
	fmt.Fprintf(w, "kubectl netbench dns: %s/%s container %s (node %s)\n", r.Target.Namespace, r.Target.Pod, r.Target.Container, r.Target.Node)
	fmt.Fprintf(w, "resolver: %s — %s\n", res.Resolver, Clean(res.Detection))
	fmt.Fprintf(w, "resolv.conf (%s):\n", Clean(res.ResolvConfPath))
	for _, l := range strings.Split(strings.TrimSpace(res.ResolvConf), "\n") {
		fmt.Fprintf(w, "  %s\n", Clean(l))
	}
	if res.ObserveSkipped != "" {
		fmt.Fprintf(w, "\n%s\n", res.ObserveSkipped)
	}
	if o := res.Observed; o != nil {
		fmt.Fprintf(w, "\nObserved on the wire for %.0f s (UDP and TCP port 53, every interface of the pod): %d queries, %d responses, NXDOMAIN share %.0f %%\n",
			o.Seconds, o.Queries, o.Responses, 100*o.NXShare)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "name looked up\tlookups\tqueries\tper lookup\tNXDOMAIN\tanswered by\twith trailing dot\twith ndots:1\t")
		for _, n := range o.Names {
			ans := n.AnsweredBy
			if ans == "" {
				ans = "(not resolved)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%d\t%s\t%d\t%d\t\n", n.Name, n.Lookups, n.Queries, n.QueriesPerLookup, n.NXDomains, ans, n.TrailingDotQueries, n.Ndots1Queries)
		}
		tw.Flush()
		fmt.Fprintln(w, "  (the last two columns: queries per lookup the model predicts with that change)")
		writeObservedTCP(w, o)
		if o.Overflow > 0 {
			fmt.Fprintf(w, "  %d queries were counted but not grouped: the capture's bounds (%s) were reached\n", o.Overflow, "65536 open lookups, 4096 names")
		}
	}
	writeVariants(w, res.DNSResult)
	writeValidity(w, validityGroup{what: " (latencies)", results: []*v1alpha1.ProbeResult{{Name: "dns", Validity: r.Validity}}})
	writeTruncation(w, res.DNSResult)
	writeServerSearch(w, res.Names)
	writeTimelines(w, res.Names)
	writeDNSService(w, r)
	writeRace(w, r)
	fmt.Fprintf(w, "\nFixes\n")
	for _, f := range r.Fixes {
		if f.FixedQueries < f.Queries {
			fmt.Fprintf(w, "  %s: %d → %d queries per lookup: %s\n", f.Name, f.Queries, f.FixedQueries, f.Fix)
		} else {
			fmt.Fprintf(w, "  %s: %s\n", f.Name, f.Fix)
		}
	}
	if p := r.Patch; p != nil {
		fmt.Fprintf(w, "\nPod-wide: ndots %d sends %d instead of %d queries for one lookup of each name above:\n  %s\n", p.Ndots, p.QueriesAfter, p.QueriesBefore, p.Command)
		for _, s := range p.SideEffects {
			fmt.Fprintf(w, "  side effect: %s\n", s)
		}
	}
	writeCapacity(w, r)
	writeChecks(w, r.Checks)
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	fmt.Fprintf(w, "\nwall %.1f s = measuring %.1f s + overhead %.1f s\n", r.Timing.WallSeconds, r.Timing.MeasuringSeconds, r.Timing.OverheadSeconds)
	return nil
}

// writeTruncation says, per name and way of looking it up, what answers too large for UDP cost.
func writeTruncation(w io.Writer, res *v1alpha1.DNSResult) {
	for _, n := range res.Names {
		for _, v := range n.Variants {
			if v.Truncated == 0 {
				continue
			}
			fmt.Fprintf(w, "  %s (%s): truncated UDP answers (over 512 bytes) %d, queries sent again over TCP %d (counted above)",
				n.Name, v.Label, v.Truncated, v.TCPQueries)
			if res.Resolver == v1alpha1.ResolverMusl {
				fmt.Fprint(w, " (musl 1.2.4 and later; earlier musl keeps the truncated answer)")
			}
			fmt.Fprintln(w)
		}
	}
}

// writeServerSearch says where the server walked the search path itself, and what that saved.
func writeServerSearch(w io.Writer, names []v1alpha1.DNSName) {
	for _, n := range names {
		for _, v := range n.Variants {
			if v.ServerSearch == "" {
				continue
			}
			fmt.Fprintf(w, "  %s (%s): the server walked the search path itself (CoreDNS autopath): it answered %s with a CNAME to %s — %d queries on the wire, where the resolver alone would send %d\n",
				n.Name, v.Label, v.AnsweredBy, v.ServerSearch, v.Queries, v.ClientSideQueries)
		}
	}
}

// writeTimelines prints the cold lookup of the most amplified name, query by query, and of every
// name whose lookup went over TCP.
func writeTimelines(w io.Writer, names []v1alpha1.DNSName) {
	worst := -1
	for i := range names {
		if worst < 0 || len(names[i].Timeline) > len(names[worst].Timeline) {
			worst = i
		}
	}
	for i, n := range names {
		tcp := slices.ContainsFunc(n.Timeline, func(q v1alpha1.DNSQuery) bool { return q.Transport == "tcp" })
		if i != worst && !tcp {
			continue
		}
		fmt.Fprintf(w, "\nTimeline of one cold lookup of %s\n", n.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		if !tcp {
			fmt.Fprintln(tw, "sent at\tquery\ttype\tanswer after\trcode\t")
		} else {
			fmt.Fprintln(tw, "sent at\tquery\ttype\tover\tanswer after\trcode\t")
		}
		for _, q := range n.Timeline {
			over, rc := "udp\t", string(q.Rcode)
			switch {
			case !tcp:
				over = ""
			case q.Transport != "":
				over = q.Transport + "\t"
			}
			if q.Truncated {
				rc += " (truncated)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%s\t\n", report.Micros(q.SentMicros), q.Name, q.Type, over, report.Micros(q.RTTMicros), rc)
		}
		tw.Flush()
	}
}

// writeObservedTCP says how much of the observed traffic went over TCP and why.
func writeObservedTCP(w io.Writer, o *v1alpha1.DNSObservation) {
	if o.TCPQueries == 0 && o.Truncated == 0 {
		return
	}
	fmt.Fprintf(w, "  over TCP: %d queries, %d responses (each reassembled from its segments, counted once); %d UDP answers truncated\n", o.TCPQueries, o.TCPResponses, o.Truncated)
	for _, n := range o.Names {
		if n.TCPQueries > 0 || n.Truncated > 0 {
			fmt.Fprintf(w, "  %s: %d truncated UDP answers, %d queries over TCP (in its %d queries)\n", n.Name, n.Truncated, n.TCPQueries, n.Queries)
		}
	}
}

// Clean drops control characters (terminal escapes among them) from text the measured
// application controls, such as its resolv.conf, before it is printed.
func Clean(s string) string { return text.Clean(s) }

// writeVariants writes each name's lookups as configured and its what-ifs.
func writeVariants(w io.Writer, res *v1alpha1.DNSResult) {
	asks := ""
	if res.Config.LookupFamily != v1alpha1.LookupBoth {
		asks = ", asking " + v1alpha1.LookupFamilyLabel(res.Config.LookupFamily) + " (--lookup-family " + res.Config.LookupFamily + ")"
	}
	fmt.Fprintf(w, "\nOne lookup per name, as the %s resolver walks it%s (queries sent for real to %s; warm latency over %d lookups, exact percentiles)\n", res.Resolver, asks, res.Nameserver, res.Repeats)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tlookup as\tqueries\tNXDOMAIN\tamplification\tanswered by\tmin\tp50\tp90\tmax\t")
	for _, n := range res.Names {
		for _, v := range n.Variants {
			ans := v.AnsweredBy
			if ans == "" {
				ans = "(not resolved)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f×\t%s\t%s\t%s\t%s\t%s\t\n", n.Name, v.Label, v.Queries, v.NXDomains, v.Amplification, ans,
				report.Micros(v.Warm.MinMicros), report.Micros(v.Warm.P50Micros), report.Micros(v.Warm.P90Micros), report.Micros(v.Warm.MaxMicros))
		}
	}
	tw.Flush()
}
