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
		rows = append(rows, []string{f.Name, formatValue(f.Value, f.Unit), formatValue(twin.Value, f.Unit), familyDiff(f.Value, twin.Value, f.Unit)})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nIPv4 and IPv6 side by side (each probe's figures over each family; difference = IPv6 − IPv4)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FIGURE\tIPv4\tIPv6\tDIFFERENCE\t")
	for _, row := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", row[0], row[1], row[2], row[3])
	}
	tw.Flush()
}

// familyDiff is IPv6's figure minus IPv4's, in unit and relative to IPv4's ("—" when that is 0).
func familyDiff(v4, v6 float64, unit string) string {
	diff := v6 - v4
	rel := "—"
	if v4 != 0 {
		rel = fmt.Sprintf("%+.1f %%", 100*diff/v4)
	}
	return fmt.Sprintf("%s (%s)", signed(formatValue(diff, unit), diff), rel)
}

// signed puts a plus before a difference that is not negative (a negative one has its minus).
func signed(s string, v float64) string {
	if v >= 0 {
		return "+" + s
	}
	return s
}

// ipFamilies says the address family each probe's figures were measured over, for the
// ip_family label: a probe's own (own: what its result says), else its twin's suffix (-v6, or
// -v4 for an IPv6-primary Service's second ClusterIP), else for the Service's figures (svc*)
// its primary ClusterIP's (svc), else the run's one family; in a run of both families the plain
// names are the IPv4 probes'. Empty where the report does not say (made before families).
type ipFamilies struct {
	own      map[string]string
	run, svc string
}

// of is probe's name without a family suffix, and its family.
func (f ipFamilies) of(probe string) (base, family string) {
	base = probe
	service := probe == "svc" || strings.HasPrefix(probe, "svc-")
	if b, ok := strings.CutSuffix(probe, v1alpha1.IPv6ProbeSuffix); ok {
		base, family = b, "IPv6"
	} else if b, ok := strings.CutSuffix(probe, v1alpha1.IPv4ProbeSuffix); ok && service {
		base, family = b, "IPv4"
	}
	switch {
	case f.own[probe] != "":
		family = f.own[probe]
	case family != "":
	case service && f.svc != "":
		family = f.svc
	case f.run == "IPv4" || f.run == "IPv6":
		family = f.run
	case strings.HasPrefix(f.run, "IPv4 and IPv6"):
		family = "IPv4"
	}
	return base, family
}

// familyOfIP is the schema's name of the family of ip (an address, or host:port); empty when it
// is neither.
func familyOfIP(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		ap, err := netip.ParseAddrPort(ip)
		if err != nil {
			return ""
		}
		a = ap.Addr()
	}
	if a.Unmap().Is4() {
		return "IPv4"
	}
	return "IPv6"
}
