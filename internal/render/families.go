package render

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// v6Suffix ends the names of an --ip-family both run's IPv6 probes.
const v6Suffix = v1alpha1.IPv6ProbeSuffix

// writeFamilies sets an --ip-family both run's figures side by side: each IPv4 figure, its IPv6
// twin's, and the difference (IPv6 minus IPv4).
func writeFamilies(w io.Writer, r *report.PathReport) {
	fs := r.FigureValues()
	byName := map[string]report.FigureValue{}
	for _, f := range fs {
		byName[f.Name] = f
	}
	var rows [][]string
	for _, f := range fs {
		if f.Alias || report.IsValidity(f.Name) || f.Probe == "" || strings.HasSuffix(f.Probe, v6Suffix) {
			continue
		}
		twin, ok := byName[f.Probe+v6Suffix+"."+f.Stat]
		if !ok {
			continue
		}
		diff := twin.Value - f.Value
		rel := "—"
		if f.Value != 0 {
			rel = fmt.Sprintf("%+.1f %%", 100*diff/f.Value)
		}
		rows = append(rows, []string{f.Name, formatValue(f.Value, f.Unit), formatValue(twin.Value, f.Unit), signed(formatValue(diff, f.Unit), diff), rel})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nIPv4 and IPv6 side by side (each probe's figures over each family; difference = IPv6 − IPv4)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FIGURE\tIPv4\tIPv6\tDIFFERENCE\t")
	for _, row := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s (%s)\t\n", row[0], row[1], row[2], row[3], row[4])
	}
	tw.Flush()
}

// signed puts a plus before a difference that is not negative (a negative one has its minus).
func signed(s string, v float64) string {
	if v >= 0 {
		return "+" + s
	}
	return s
}

// ipFamilies says the address family each probe's figures were measured over, for the
// ip_family label: a probe's own (own, from a path report's results), else its twin's suffix
// (-v6, or -v4 for an IPv6-primary Service's second ClusterIP), else the run's one family. In
// a run of both families the plain names are the IPv4 probes', except the Service's (svc*),
// which are its primary ClusterIP's (svc). Empty where the report does not say (made before
// families).
type ipFamilies struct {
	own      map[string]string
	run, svc string
}

// of is probe's name without a family suffix and its family.
func (f ipFamilies) of(probe string) (base, family string) {
	if fam := f.own[probe]; fam != "" {
		return strings.TrimSuffix(probe, v6Suffix), fam
	}
	if base, ok := strings.CutSuffix(probe, v6Suffix); ok {
		return base, "IPv6"
	}
	if base, ok := strings.CutSuffix(probe, "-v4"); ok && strings.HasPrefix(base, "svc") {
		return base, "IPv4"
	}
	switch {
	case f.run == "IPv4" || f.run == "IPv6":
		return probe, f.run
	case !strings.HasPrefix(f.run, "IPv4 and IPv6"):
		return probe, ""
	case probe == "svc" || strings.HasPrefix(probe, "svc-"):
		return probe, f.svc
	}
	return probe, "IPv4"
}

// familyOfIP is the schema's name of ip's family; empty when ip is not an address.
func familyOfIP(ip string) string {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return ""
	case a.Unmap().Is4():
		return "IPv4"
	}
	return "IPv6"
}
