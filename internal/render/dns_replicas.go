package render

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// writeDNSService prints the nameserver Service's replicas, each asked directly, and the share of
// queries that cross a zone.
func writeDNSService(w io.Writer, r *report.DNSReport) {
	s := r.NameserverService
	if s == nil {
		return
	}
	if s.Skipped != "" {
		fmt.Fprintf(w, "\nNameserver replicas: %s\n", s.Skipped)
		return
	}
	fmt.Fprintf(w, "\nNameserver replicas: Service %s/%s (%s), %d ready, this pod in %s\n", s.Namespace, s.Name, s.ClusterIP, s.ReadyReplicas, orUnknown(s.PodZone))
	if v := r.Result.ReplicaView; v != nil {
		qtype := v.QueryType
		if qtype == "" {
			qtype = "A" // reports made before the type was said
		}
		fmt.Fprintf(w, "  %s %s asked of each directly, in turns (warm, exact percentiles over %d answers each)\n", v.Query, qtype, r.Result.Repeats)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  server\taddress\tnode\tzone\tfrom this pod\tp50\tp90\tmax\tno answer\t")
		ns, label := v.Nameserver, "the Service"
		if c := s.NodeLocalCache; c != nil && c.State == report.NodeLocalInUse {
			label = "node-local cache"
		}
		fmt.Fprintf(tw, "  %s\t%s\t\t\t\t%s\t%s\t%s\t%d\t\n", label, ns.Address, report.Micros(ns.Latency.P50Micros), report.Micros(ns.Latency.P90Micros), report.Micros(ns.Latency.MaxMicros), ns.Errors)
		for _, rp := range v.Replicas {
			where := "same zone"
			if rp.Zone == "" || s.PodZone == "" {
				where = "zone unknown"
			} else if rp.Zone != s.PodZone {
				where = "other zone"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", rp.Pod, rp.Address, rp.Node, orUnknown(rp.Zone), where,
				report.Micros(rp.Latency.P50Micros), report.Micros(rp.Latency.P90Micros), report.Micros(rp.Latency.MaxMicros), rp.Errors)
		}
		tw.Flush()
	}
	writeNodeLocal(w, s.NodeLocalCache)
	if s.CrossZoneShare < 0 {
		fmt.Fprintf(w, "  cross-zone share unknown: %s\n", s.ShareBasis)
		return
	}
	fmt.Fprintf(w, "  %.0f %% of this pod's queries through the Service reach another zone: %s\n", 100*s.CrossZoneShare, s.ShareBasis)
	if s.LookupsPerSecond > 0 {
		fmt.Fprintf(w, "  at %g lookups/s of %s as configured: %.1f cross-zone queries/s\n", s.LookupsPerSecond, r.Result.Names[0].Name, s.CrossZoneQueriesPerSecond)
	}
}

// writeNodeLocal says whether a node-local cache answers the pod and, without one, what answering
// on the node would save.
func writeNodeLocal(w io.Writer, c *report.NodeLocalDNS) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "  NodeLocal DNSCache: %s — %s\n", c.State, c.Basis)
	switch {
	case c.NearestReplica == "":
	case c.SameNode:
		fmt.Fprintf(w, "  what if: replica %s on this node answered in p50 %s, the Service in %s (%s per query): a node-local cache answers at least as close\n",
			c.NearestReplica, report.Micros(c.NearestP50Micros), report.Micros(c.ServiceP50Micros), signedMicros(c.NearestP50Micros-c.ServiceP50Micros))
	default:
		fmt.Fprintf(w, "  what if: no replica runs on this node to measure a node-local cache by; the fastest in the pod's zone, %s, answered in p50 %s, the Service in %s (%s per query)\n",
			c.NearestReplica, report.Micros(c.NearestP50Micros), report.Micros(c.ServiceP50Micros), signedMicros(c.NearestP50Micros-c.ServiceP50Micros))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown zone)"
	}
	return s
}
