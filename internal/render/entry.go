package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// WriteEntry writes `ladder --via nodeport|loadbalancer`'s report: text, json, yaml or junit.
func WriteEntry(w io.Writer, format string, r *report.EntryReport) error {
	switch format {
	case "":
	case FormatJUnit:
		return WriteJUnit(w, "the way in to "+r.Service.Namespace+"/"+r.Service.Name, "netbench.entry", r.StartTime, r.Timing, r.Checks)
	default:
		return writeMachineOrText(w, format, r, func(w io.Writer) error { return WriteEntry(w, "", r) })
	}
	client := "this machine"
	if len(r.Client) > 0 {
		client += " (" + strings.Join(r.Client, ", ") + ")"
	}
	fmt.Fprintf(w, "kubectl netbench ladder --via %s: into Service %s/%s from %s\n", r.Via, r.Service.Namespace, r.Service.Name, client)
	fmt.Fprintf(w, "temporary copies:")
	for _, c := range r.Copies {
		if c.LoadBalancer != "" {
			fmt.Fprintf(w, " %s (externalTrafficPolicy %s, load balancer %s)", c.Name, c.ExternalTrafficPolicy, c.LoadBalancer)
			continue
		}
		fmt.Fprintf(w, " %s (externalTrafficPolicy %s, node port %d)", c.Name, c.ExternalTrafficPolicy, c.NodePort)
	}
	fmt.Fprintf(w, "\nendpoints with an agent: %d of %d ready   IP family: %s   rounds: %d (pooled)\n\n", r.Service.MeasuredEndpoints, r.Service.ReadyEndpoints, r.IPFamily, r.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tENTRY NODE\tZONE\tLOCAL EPS\tANSWERED\tCONNECT p50\tp99\tANSWER p50\tp99\tON ANOTHER NODE\tEXTRA HOP\tSOURCE THE POD SAW")
	for _, g := range r.Rungs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Policy, entryNode(g), orDash(g.Zone), entryLocal(g), entryAnswered(g),
			entryP(g.Connect, 50), entryP(g.Connect, 99), entryP(g.Answer, 50), entryP(g.Answer, 99), entryOtherNode(g), entryExtraHop(g), entrySources(g))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	way := "the node port"
	if r.Via == report.ViaLoadBalancer {
		way = "the load balancer; ENTRY NODE: where it sent them, read from the source the pod saw"
	}
	fmt.Fprintf(w, "\nCONNECT: the TCP handshake through %s; ANSWER: connect call to the answer's first byte on that new connection.\n", way)
	fmt.Fprintln(w, "EXTRA HOP: connect p50 of the connections answered on another node, less a baseline answered on the entry node (JSON: extraHopBaseline).")
	fmt.Fprintln(w, "Exact percentiles over every answered connection of every round (nanosecond clock); a p99 of fewer than 100 is the largest.")
	for _, g := range r.Rungs {
		entryShares(w, g)
		if g.Stopped != "" {
			fmt.Fprintf(w, "%s via %s: stopped: %s\n", g.Policy, entryWay(g.Node), g.Stopped)
		}
		if g.ExtraHopMicros != nil && !strings.HasPrefix(g.ExtraHopBaseline, "the connections this rung") {
			fmt.Fprintf(w, "%s via %s: extra hop against %s\n", g.Policy, entryWay(g.Node), g.ExtraHopBaseline)
		}
	}
	for _, d := range r.Differences {
		fmt.Fprintf(w, "entering by %s: Local − Cluster: connect p50 %s, answer p50 %s\n", entryWay(d.Node), signedMicros(d.ConnectDiffMicros), signedMicros(d.AnswerDiffMicros))
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	writeChecks(w, r.Checks)
	return nil
}

// entryWay names a way in: a node, or (no node) the load balancer.
func entryWay(node string) string {
	if node == "" {
		return "the load balancer"
	}
	return node
}

// entryNode is the ENTRY NODE column: the node, or through a load balancer how many nodes it
// sent the connections to (each in entryShares).
func entryNode(g report.EntryRung) string {
	if g.Node != "" {
		return g.Node
	}
	if len(g.EntryNodes) == 1 {
		return "load balancer (to 1 node)"
	}
	return fmt.Sprintf("load balancer (to %d nodes)", len(g.EntryNodes))
}

// entryShares says, for a rung through a load balancer, each node it sent connections to: how
// many, their connect p50, and the extra hop of those answered on another node.
func entryShares(w io.Writer, g report.EntryRung) {
	if g.UnplacedConnections > 0 {
		fmt.Fprintf(w, "%s through the load balancer: %d answered connections' sources name no node (a NAT or proxy, an overlay's tunnel address, or a source kept with Cluster): in no node's share, nor in ON ANOTHER NODE\n", g.Policy, g.UnplacedConnections)
	}
	if g.Node != "" || len(g.EntryNodes) == 0 {
		return
	}
	var out []string
	for _, e := range g.EntryNodes {
		s := fmt.Sprintf("%s ×%d connect p50 %s", e.Node, e.Connections, entryP(e.Connect, 50))
		if e.ExtraHopMicros != nil {
			s += ", extra hop " + signedMicros(*e.ExtraHopMicros)
		}
		out = append(out, s)
	}
	fmt.Fprintf(w, "%s through the load balancer, by the node it sent them to: %s\n", g.Policy, strings.Join(out, "; "))
}

// entryLocal is the LOCAL EPS column (a load balancer's has no one node: "—").
func entryLocal(g report.EntryRung) string {
	if g.Node == "" {
		return "—"
	}
	return fmt.Sprint(g.LocalEndpoints)
}

func entryAnswered(g report.EntryRung) string {
	s := fmt.Sprintf("%d/%d", g.Answered, g.Connections)
	if len(g.UnansweredByKind) > 0 {
		var ks []string
		for k, n := range g.UnansweredByKind {
			ks = append(ks, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(ks)
		s += " (" + strings.Join(ks, ", ") + ")"
	}
	return s
}

func entryP(l *v1alpha1.Latency, p int) string {
	switch {
	case l == nil:
		return "—"
	case p == 50:
		return report.Micros(l.P50Micros)
	default:
		return report.Micros(l.P99Micros)
	}
}

func entryOtherNode(g report.EntryRung) string {
	if g.OtherNodePercent == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", *g.OtherNodePercent)
}

func entryExtraHop(g report.EntryRung) string {
	if g.ExtraHopMicros == nil {
		return "—"
	}
	return signedMicros(*g.ExtraHopMicros)
}

func entrySources(g report.EntryRung) string {
	if g.Answered == 0 {
		if g.Node != "" && g.LocalEndpoints == 0 && g.Policy == report.PolicyLocal {
			return "none: no endpoint on this node, and Local does not forward"
		}
		return "none"
	}
	var out []string
	for _, s := range g.Sources {
		what := "another address: a NAT or proxy on the way"
		switch {
		case s.Is == report.SourceClient:
			what = "this machine: source kept"
		case s.Is == report.SourceNode && s.PodRange:
			what = "node " + s.Node + "'s pod-network address: SNAT"
		case s.Is == report.SourceNode:
			what = "node " + s.Node + ": SNAT"
		}
		out = append(out, fmt.Sprintf("%s ×%d (%s)", s.Address, s.Connections, what))
	}
	return strings.Join(out, "; ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
