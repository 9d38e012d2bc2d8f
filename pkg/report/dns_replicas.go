package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// DNSService is the Service behind the pod's nameserver (kube-dns) and how its queries spread
// over the replicas' zones.
type DNSService struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	ClusterIP string `json:"clusterIP"`
	// TrafficDistribution is the Service's spec.trafficDistribution ("" = none).
	TrafficDistribution string `json:"trafficDistribution,omitempty"`
	ReadyReplicas       int    `json:"readyReplicas"`
	// PodZone is the measured pod's zone; SameZoneReplicas how many ready replicas share it.
	PodZone          string `json:"podZone,omitempty"`
	SameZoneReplicas int    `json:"sameZoneReplicas"`
	// CrossZoneShare is the share of the pod's queries through the Service that reach a replica
	// in another zone (0–1; -1 when the zones are unknown), and ShareBasis why.
	CrossZoneShare float64 `json:"crossZoneShare"`
	ShareBasis     string  `json:"shareBasis"`
	// LookupsPerSecond (--lookups-per-second) and what it makes of the share: queries per
	// second that cross a zone, for lookups of the first name as configured.
	LookupsPerSecond          float64 `json:"lookupsPerSecond,omitempty"`
	CrossZoneQueriesPerSecond float64 `json:"crossZoneQueriesPerSecond,omitempty"`
	// NodeLocalCache says whether a node-local DNS cache answers the pod's queries.
	NodeLocalCache *NodeLocalDNS `json:"nodeLocalCache,omitempty"`
	// Skipped says why there is no per-replica view.
	Skipped string `json:"skipped,omitempty"`
}

// States of a pod's node-local DNS cache.
const (
	NodeLocalInUse    = "in use"
	NodeLocalNotInUse = "not in use"
	NodeLocalUnknown  = "unknown"
)

// NodeLocalDNS is a node-local DNS cache (NodeLocal DNSCache) as this pod meets it.
type NodeLocalDNS struct {
	// State is "in use", "not in use" or "unknown"; Basis says how it was told.
	State string `json:"state"`
	Basis string `json:"basis"`
	// Pod is the cache's pod on the pod's node; Address the nameserver the pod asks.
	Pod     string `json:"pod,omitempty"`
	Address string `json:"address,omitempty"`
	// Without a cache: the Service's p50 and the nearest replica's, asked directly from the
	// pod — on its node (SameNode) or else the fastest in its zone — for what answering close
	// by would save.
	ServiceP50Micros float64 `json:"serviceP50Micros,omitempty"`
	NearestReplica   string  `json:"nearestReplica,omitempty"`
	NearestP50Micros float64 `json:"nearestP50Micros,omitempty"`
	SameNode         bool    `json:"sameNode,omitempty"`
}

// writeDNSService prints the nameserver Service's replicas, each asked directly, and the share of
// queries that cross a zone.
func writeDNSService(w io.Writer, r *DNSReport) {
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
		fmt.Fprintf(w, "  %s A asked of each directly, in turns (warm, exact percentiles over %d answers each)\n", v.Query, r.Result.Repeats)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  server\taddress\tnode\tzone\tfrom this pod\tp50\tp90\tmax\tno answer\t")
		ns, label := v.Nameserver, "the Service"
		if c := s.NodeLocalCache; c != nil && c.State == NodeLocalInUse {
			label = "node-local cache"
		}
		fmt.Fprintf(tw, "  %s\t%s\t\t\t\t%s\t%s\t%s\t%d\t\n", label, ns.Address, Micros(ns.Latency.P50Micros), Micros(ns.Latency.P90Micros), Micros(ns.Latency.MaxMicros), ns.Errors)
		for _, rp := range v.Replicas {
			where := "same zone"
			if rp.Zone == "" || s.PodZone == "" {
				where = "zone unknown"
			} else if rp.Zone != s.PodZone {
				where = "other zone"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", rp.Pod, rp.Address, rp.Node, orUnknown(rp.Zone), where,
				Micros(rp.Latency.P50Micros), Micros(rp.Latency.P90Micros), Micros(rp.Latency.MaxMicros), rp.Errors)
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
func writeNodeLocal(w io.Writer, c *NodeLocalDNS) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "  NodeLocal DNSCache: %s — %s\n", c.State, c.Basis)
	switch {
	case c.NearestReplica == "":
	case c.SameNode:
		fmt.Fprintf(w, "  what if: replica %s on this node answered in p50 %s, the Service in %s (%s per query): a node-local cache answers at least as close\n",
			c.NearestReplica, Micros(c.NearestP50Micros), Micros(c.ServiceP50Micros), signedMicros(c.NearestP50Micros-c.ServiceP50Micros))
	default:
		fmt.Fprintf(w, "  what if: no replica runs on this node to measure a node-local cache by; the fastest in the pod's zone, %s, answered in p50 %s, the Service in %s (%s per query)\n",
			c.NearestReplica, Micros(c.NearestP50Micros), Micros(c.ServiceP50Micros), signedMicros(c.NearestP50Micros-c.ServiceP50Micros))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown zone)"
	}
	return s
}
