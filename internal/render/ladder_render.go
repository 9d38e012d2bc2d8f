package render

import (
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// WriteLadder writes a ladder report as JSON, YAML, one HTML page, or (format "") tables for people.
func WriteLadder(w io.Writer, format string, r *report.LadderReport) error {
	switch format {
	case "":
	case "html":
		return WriteLadderHTML(w, r)
	case FormatOpenMetrics:
		return WriteLadderMetrics(w, r)
	case FormatJUnit:
		return WriteJUnit(w, "ladder to "+r.Destination.Namespace+"/"+r.Destination.Pod, "netbench.ladder", r.StartTime, r.Timing, r.Checks)
	default:
		return writeMachineOrText(w, format, r, func(w io.Writer) error { return WriteLadder(w, "", r) })
	}
	fmt.Fprintf(w, "kubectl netbench ladder: to %s\n", report.EndpointName(r.Destination))
	fmt.Fprintf(w, "server agent: %s   clients: temporary pods, one rung at a time   profile: %s   rounds: %d\n", r.Mode, r.Profile, r.Rounds)
	if r.IPFamily != "" {
		fmt.Fprintf(w, "IP family: %s\n", r.IPFamily)
	}
	var measured []*report.LadderRung
	for i := range r.Rungs {
		rung := &r.Rungs[i]
		if rung.Skipped != "" {
			fmt.Fprintf(w, "skipped rung %s: %s\n", rung.Name, rung.Skipped)
			continue
		}
		measured = append(measured, rung)
	}
	if len(measured) == 0 {
		return nil
	}
	writeLadderTable(w, r, measured)
	writeLadderRateStops(w, measured)
	writeLadderBaselines(w, r.Figures, measured)
	writeLadderService(w, r.Service, measured)
	writeLadderBars(w, measured)
	writeLadderCost(w, measured)
	writeValidity(w, ladderValidity(measured)...)
	writePolicy(w, r.Policy)
	writeChecks(w, r.Checks)
	writeFooter(w, r.Warnings, r.Timing)
	return nil
}

// writeLadderTable prints one row per figure and one column per rung: the median (with the
// range over rounds when there are several) and its difference from the same-node rung.
func writeLadderTable(w io.Writer, r *report.LadderReport, rungs []*report.LadderRung) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "figure\t"
	where := "\t"
	for _, rung := range rungs {
		head += rung.Name + "\t"
		where += rung.Node + "\t"
	}
	fmt.Fprintln(tw, head)
	fmt.Fprintln(tw, where)
	for _, name := range r.Figures {
		row := name + "\t"
		for _, rung := range rungs {
			f, ok := rung.Figures[name]
			if !ok {
				row += "—\t"
				continue
			}
			row += figureCell(f, r.Rounds) + "\t"
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	note := "medians"
	if r.Rounds > 1 {
		note = fmt.Sprintf("medians of %d rounds [min–max]", r.Rounds)
	}
	fmt.Fprintf(w, "  (%s; in parentheses the difference from same-node; latency percentiles as each probe reports them: counts and resolutions in -o json)\n", note)
}

func figureCell(f report.Figure, rounds int) string {
	s := formatValue(f.Median, f.Unit)
	if rounds > 1 {
		s += " [" + formatValue(f.Min, f.Unit) + "–" + formatValue(f.Max, f.Unit) + "]"
	}
	if d := difference(f); d != "" {
		s += " (" + d + ")"
	}
	return s
}

// difference is a figure's difference from the same-node rung, absolute and in %.
func difference(f report.Figure) string {
	if f.VsSameNode == nil {
		return ""
	}
	sign := "+"
	if *f.VsSameNode < 0 {
		sign = "−"
	}
	d := sign + formatValue(math.Abs(*f.VsSameNode), f.Unit)
	if f.VsSameNodePercent != nil {
		d += ", " + strings.Replace(fmt.Sprintf("%+.0f %%", *f.VsSameNodePercent), "-", "−", 1)
	}
	return d
}

func formatValue(v float64, unit string) string {
	switch unit {
	case report.UnitMicros:
		return report.Micros(v)
	case report.UnitGbps:
		return fmt.Sprintf("%.2f Gbit/s", v)
	case report.UnitReqPerS:
		return fmt.Sprintf("%.0f req/s", v)
	case report.UnitPercent:
		return fmt.Sprintf("%.1f %%", v)
	case report.UnitBytes:
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// writeLadderBars draws the RTT p50 and p99 of each rung on one scale.
func writeLadderBars(w io.Writer, rungs []*report.LadderRung) {
	probe := ""
	for _, p := range []string{"icmp", "tcp-rtt"} {
		if _, ok := rungs[0].Figures[p+".p50"]; ok {
			probe = p
			break
		}
	}
	if probe == "" {
		return
	}
	var top float64
	for _, r := range rungs {
		top = max(top, r.Figures[probe+".p99"].Median)
	}
	if top <= 0 {
		return
	}
	const width = 40
	fmt.Fprintf(w, "\nRTT per rung (%s): █ p50, ░ up to p99, one scale\n", probe)
	for _, r := range rungs {
		p50, p99 := r.Figures[probe+".p50"].Median, r.Figures[probe+".p99"].Median
		a := int(math.Round(width * p50 / top))
		b := max(int(math.Round(width*p99/top))-a, 0)
		fmt.Fprintf(w, "  %-22s %s%s %s / %s\n", r.Name, strings.Repeat("█", max(a, 1)), strings.Repeat("░", b), report.Micros(p50), report.Micros(p99))
	}
}

func writeLadderCost(w io.Writer, rungs []*report.LadderRung) {
	for _, r := range rungs {
		if c := r.Cost; c != nil {
			fmt.Fprintf(w, "cost %s: 1 Gbit/s sustained for 30 days = $%.0f at $%.3f/GB × 2 sides (this run moved %s across)\n",
				r.Name, c.MonthlyUSDPerGbps, c.PricePerGBUSD, report.BytesText(c.BytesCrossedZone))
		}
	}
}

// writeLadderService says which Service was measured, with its traffic settings, and where its
// new connections landed from each rung.
func writeLadderService(w io.Writer, svc *report.LadderService, rungs []*report.LadderRung) {
	if svc == nil {
		return
	}
	settings := "trafficDistribution " + orNone(svc.TrafficDistribution) + ", internalTrafficPolicy " + orNone(svc.InternalTrafficPolicy)
	if svc.TopologyMode != "" {
		settings += ", topology-mode " + svc.TopologyMode
	}
	zones := sortedKeys(svc.EndpointsByZone)
	var perZone []string
	for _, z := range zones {
		perZone = append(perZone, fmt.Sprintf("%s %d", orNone(z), svc.EndpointsByZone[z]))
	}
	addr := net.JoinHostPort(svc.ClusterIP, strconv.Itoa(svc.Port))
	if len(svc.ClusterIPs) > 1 {
		addr = fmt.Sprintf("%s port %d, %s", strings.Join(svc.ClusterIPs, " and "), svc.Port, cmpOr(svc.IPFamilyPolicy, "dual-stack"))
	}
	fmt.Fprintf(w, "\nService %s/%s (%s; %s; %d ready endpoints: %s)\n", svc.Namespace, svc.Name, addr, settings,
		svc.ReadyEndpoints, strings.Join(perZone, ", "))
	fmt.Fprintln(w, "  svc-* figures go through its ClusterIP, app-* to DST's pod IP; svc.vs-dst-* is the difference: where the Service sent connections and its dataplane together")
	if len(svc.ClusterIPs) > 1 {
		fmt.Fprintf(w, "  svc-*%s figures go through its second ClusterIP %s\n", suffixOf(svc.ClusterIPs[1]), svc.ClusterIPs[1])
	}
	if svc.Dataplane != nil {
		fmt.Fprintf(w, "  dataplane: %s\n", svc.Dataplane)
	}
	if svc.SpreadSkipped != "" {
		fmt.Fprintf(w, "  where connections land: not measured: %s\n", svc.SpreadSkipped)
		return
	}
	writeSpread(w, svc, rungs, zones, "", func(r *report.LadderRung) *report.RungSpread { return r.Spread })
	if len(svc.ClusterIPs) > 1 {
		writeSpread(w, svc, rungs, zones, suffixOf(svc.ClusterIPs[1]), func(r *report.LadderRung) *report.RungSpread { return r.SpreadSecondary })
	}
	fmt.Fprintln(w, "  column dataplane: TCP handshake p50 through the Service minus straight to the same endpoint, per endpoint, weighted by its connections")
	fmt.Fprintln(w, "  (each p50 over the connections the endpoint answered and ≥ 10 straight handshakes, counts in the JSON's spread.endpoints; clock 1 ns);")
	fmt.Fprintln(w, "  column routing vs DST: the straight p50 of the endpoints connections landed on minus the straight p50 to DST (negative: nearer than DST)")
	if svc.SpreadCaveat != "" {
		fmt.Fprintf(w, "  caveat: %s\n", svc.SpreadCaveat)
	}
}

// suffixOf is the name suffix of the probes through a dual-stack Service's second ClusterIP.
func suffixOf(ip string) string {
	if strings.Contains(ip, ":") {
		return "-v6"
	}
	return "-v4"
}

// writeSpread writes where new connections landed through one of the temporary Service's
// ClusterIPs (the spread that of picks from each rung, its probe named with suffix); nothing if
// no rung has one.
func writeSpread(w io.Writer, svc *report.LadderService, rungs []*report.LadderRung, zones []string, suffix string, of func(*report.LadderRung) *report.RungSpread) {
	var first *report.RungSpread
	for _, r := range rungs {
		if first == nil {
			first = of(r)
		}
	}
	if first == nil {
		return
	}
	through := ""
	if first.ClusterIP != "" {
		through = fmt.Sprintf(", through %s %s", cmpOr(first.IPFamily, "ClusterIP"), first.ClusterIP)
	}
	fmt.Fprintf(w, "  where new connections land (agents in %d of %d endpoints on port %d, behind temporary Service %s%s):\n",
		svc.MeasuredEndpoints, svc.ReadyEndpoints, svc.AgentPort, svc.TemporaryService, through)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "  rung\tzone\tanswered\t"
	for _, z := range zones {
		head += orNone(z) + "\t"
	}
	fmt.Fprintln(tw, head+"same zone\tcross-zone cost of 1 Gbit/s, 30 days\tdataplane\trouting vs DST\t")
	var estimate string
	probe := report.SpreadProbe + suffix
	for _, r := range rungs {
		sp := of(r)
		if sp == nil {
			continue
		}
		row := fmt.Sprintf("  %s\t%s\t%d/%d\t", r.Name, orNone(r.Zone), sp.Answered, sp.Connections)
		for _, z := range zones {
			row += fmt.Sprintf("%.1f %%\t", sp.ZonePercent[z])
		}
		fmt.Fprintln(tw, row+fmt.Sprintf("%.1f %%\t$%.0f\t%s\t%s\t", sp.SameZonePercent, sp.MonthlyUSDPerGbps,
			figureText(r.Figures, report.SpreadFigureName(report.FigureDataplane, probe)), figureText(r.Figures, report.SpreadFigureName(report.FigureRouting, probe))))
		estimate = cmpOr(estimate, sp.Estimate)
	}
	tw.Flush()
	if estimate != "" {
		fmt.Fprintf(w, "  estimate: %s\n", estimate)
	}
}

// figureText is a rung's figure (its median over rounds) in µs or ms, "—" when not measured.
func figureText(fs map[string]report.Figure, name string) string {
	f, ok := fs[name]
	if !ok {
		return "—"
	}
	return report.Micros(f.Median)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// writeLadderBaselines says what the pod network adds over the nodes' own path, from the
// host-network rung and the rung on the same nodes.
func writeLadderBaselines(w io.Writer, order []string, rungs []*report.LadderRung) {
	for _, r := range rungs {
		if len(r.VsBaseline) == 0 {
			continue
		}
		var parts []string
		for _, name := range order {
			if d, ok := r.VsBaseline[name]; ok && r.Figures[name].Unit == report.UnitMicros {
				sign := "+"
				if d < 0 {
					sign = "−"
				}
				parts = append(parts, name+" "+sign+report.Micros(math.Abs(d)))
			}
		}
		fmt.Fprintf(w, "\nWhat the pod network adds over the nodes' own path (%s minus %s, same nodes %s): %s\n",
			r.Baseline, r.Name, r.Node, strings.Join(parts, ", "))
	}
}
