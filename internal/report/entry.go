package report

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The entry report's parts, as the schema defines them.
type (
	EntryCopy       = v1alpha1.EntryCopy
	EntryRung       = v1alpha1.EntryRung
	EntrySource     = v1alpha1.EntrySource
	EntryDifference = v1alpha1.EntryDifference
	EntryNodeShare  = v1alpha1.EntryNodeShare
)

// What a source address the endpoints saw is (EntrySource.Is).
const (
	SourceClient = "client"
	SourceNode   = "node"
	SourceOther  = "other"
)

// The ways in (EntryReport.Via).
const (
	ViaNodePort     = "nodeport"
	ViaLoadBalancer = "loadbalancer"
)

// The externalTrafficPolicy values an entry is measured with.
const (
	PolicyCluster = "Cluster"
	PolicyLocal   = "Local"
)

// AddEntry sums one round of a way in into its rung.
func AddEntry(r *EntryRung, res *probes.EntryResult, nodeOf NodeAddrs) {
	r.Connections += res.Connections
	r.Answered += len(res.Answered)
	for k, n := range res.ErrorsByKind {
		if r.UnansweredByKind == nil {
			r.UnansweredByKind = map[string]int{}
		}
		r.UnansweredByKind[k] += n
	}
	if res.Stopped != "" {
		r.Stopped = res.Stopped
	}
	for _, c := range res.Answered {
		if r.ByNode == nil {
			r.ByNode = map[string]int{}
		}
		r.ByNode[c.Node]++
		addSource(r, c, nodeOf)
	}
}

// addSource counts the source c's endpoint saw: the client's own address (kept), an address a
// node lists (that node's SNAT), the endpoint pod's default gateway (its own node's SNAT, to the
// node's address in the pod network), or anything else (a NAT or proxy on the way; a pod
// relaying the connection is one).
func addSource(r *EntryRung, c probes.EntryConn, nodeOf NodeAddrs) {
	for i := range r.Sources {
		if r.Sources[i].Address == c.Peer {
			r.Sources[i].Connections++
			return
		}
	}
	s := EntrySource{Address: c.Peer, Connections: 1}
	s.Is, s.Node, s.PodRange = SeenAs(c, nodeOf)
	r.Sources = append(r.Sources, s)
}

// SummarizeEntry fills a rung's latencies from every round's answered connections; through a
// load balancer (no Node), each connection's entry node is read from its source (entryNodeOf).
func SummarizeEntry(r *EntryRung, rounds []*probes.EntryResult, nodeOf NodeAddrs) {
	var connect, answer, same, other []time.Duration
	byEntry := map[string]*entryShare{}
	for _, res := range rounds {
		for _, c := range res.Answered {
			connect, answer = append(connect, c.Connect), append(answer, c.Answer)
			entry := r.Node
			if entry == "" {
				if entry = entryNodeOf(c, nodeOf, r.Policy); entry == "" {
					r.UnplacedConnections++
					continue
				}
				byEntry[entry] = byEntry[entry].add(c, entry)
			}
			if c.Node == entry {
				same = append(same, c.Connect)
			} else {
				other = append(other, c.Connect)
			}
		}
	}
	r.Connect, r.Answer = latencyOf(connect), latencyOf(answer)
	r.ConnectSameNode, r.ConnectOtherNode = latencyOf(same), latencyOf(other)
	if n := len(same) + len(other); n > 0 {
		p := Round1(100 * float64(len(other)) / float64(n))
		r.OtherNodePercent = &p
	}
	r.EntryNodes = shares(byEntry)
	slices.SortFunc(r.Sources, func(a, b EntrySource) int {
		return cmp.Or(b.Connections-a.Connections, strings.Compare(a.Address, b.Address))
	})
}

// entryShare gathers the connect times of the connections a load balancer sent to one node.
type entryShare struct{ all, other []time.Duration }

func (s *entryShare) add(c probes.EntryConn, entry string) *entryShare {
	if s == nil {
		s = &entryShare{}
	}
	s.all = append(s.all, c.Connect)
	if c.Node != entry {
		s.other = append(s.other, c.Connect)
	}
	return s
}

// shares are the entry nodes' shares by name.
func shares(by map[string]*entryShare) []EntryNodeShare {
	var out []EntryNodeShare
	for n, s := range by {
		out = append(out, EntryNodeShare{Node: n, Connections: len(s.all), Connect: latencyOf(s.all), ConnectOtherNode: latencyOf(s.other)})
	}
	slices.SortFunc(out, func(a, b EntryNodeShare) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// entryNodeOf is the node a load balancer sent c to: the node whose address c's endpoint saw
// (its SNAT); its own node's pod-network address (its own node's SNAT) names the endpoint's
// node, and so does a source kept with Local, which never forwards. It is "" when the source
// names no node: a NAT or proxy on the way, an overlay's tunnel address, or a source kept with
// Cluster (a dataplane that returns directly, or a load balancer that targets pods), which says
// nothing of the node the connection entered by.
func entryNodeOf(c probes.EntryConn, nodeOf NodeAddrs, policy string) string {
	if fault.On(fault.EntryNodeFromAnswerer) {
		return c.Node
	}
	if n := nodeOf.Of(c.Peer); n != "" {
		return n
	}
	if c.PeerIsGateway || policy == PolicyLocal && sameAddr(c.Peer, c.Local) {
		return c.Node
	}
	return ""
}

// sameAddr says whether a and b are one address (an IPv4-mapped form is its IPv4 address).
func sameAddr(a, b string) bool {
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	return errX == nil && errY == nil && x.Unmap() == y.Unmap()
}

func latencyOf(ds []time.Duration) *v1alpha1.Latency {
	if len(ds) == 0 {
		return nil
	}
	l := probes.LatencyFromSamples(ds)
	return &l
}

// Summarize sets Local beside Cluster on every entry node where both were answered, and gives
// each rung with connections answered on another node its extra hop.
func (r *EntryReport) Summarize() {
	r.differences()
	for i := range r.Rungs {
		r.extraHop(&r.Rungs[i])
	}
}

// extraHop is a rung's connect p50 of the connections answered on another node less the
// nearest baseline of connections answered on their entry node: the rung's own, else the same
// node's other policy, else the lowest of the same policy's other entry nodes (whose distance
// from the client may differ: said in ExtraHopBaseline).
func (r *EntryReport) extraHop(g *EntryRung) {
	g.ExtraHopMicros, g.ExtraHopBaseline = nil, ""
	for i := range g.EntryNodes {
		g.EntryNodes[i].ExtraHopMicros = nil
	}
	if g.ConnectOtherNode == nil {
		return
	}
	base, from := 0.0, ""
	switch {
	case g.ConnectSameNode != nil:
		base, from = g.ConnectSameNode.P50Micros, "the connections this rung's node answered itself"
	case r.rung(g.Node, otherPolicy(g.Policy)) != nil && r.rung(g.Node, otherPolicy(g.Policy)).ConnectSameNode != nil:
		base, from = r.rung(g.Node, otherPolicy(g.Policy)).ConnectSameNode.P50Micros, "the same node's answers with externalTrafficPolicy "+otherPolicy(g.Policy)
	default:
		for _, o := range r.Rungs {
			if o.Policy == g.Policy && o.ConnectSameNode != nil && (from == "" || o.ConnectSameNode.P50Micros < base) {
				base, from = o.ConnectSameNode.P50Micros, "entering by "+o.Node+", answered there (another node: the client's distance to the two may differ)"
			}
		}
	}
	if from == "" {
		return
	}
	if fault.On(fault.EntryExtraHopWithoutBaseline) {
		base = 0
	}
	d := Round1(g.ConnectOtherNode.P50Micros - base)
	g.ExtraHopMicros, g.ExtraHopBaseline = &d, from
	for i := range g.EntryNodes {
		if e := &g.EntryNodes[i]; e.ConnectOtherNode != nil {
			d := Round1(e.ConnectOtherNode.P50Micros - base)
			e.ExtraHopMicros = &d
		}
	}
}

// rung is the rung of node and policy (nil if none).
func (r *EntryReport) rung(node, policy string) *EntryRung {
	for i := range r.Rungs {
		if r.Rungs[i].Node == node && r.Rungs[i].Policy == policy {
			return &r.Rungs[i]
		}
	}
	return nil
}

func otherPolicy(p string) string {
	if p == PolicyLocal {
		return PolicyCluster
	}
	return PolicyLocal
}

func (r *EntryReport) differences() {
	r.Differences = nil
	for _, c := range r.Rungs {
		l := r.rung(c.Node, PolicyLocal)
		if c.Policy != PolicyCluster || l == nil || c.Connect == nil || l.Connect == nil {
			continue
		}
		r.Differences = append(r.Differences, EntryDifference{Node: c.Node,
			ClusterConnectMicros: c.Connect.P50Micros, LocalConnectMicros: l.Connect.P50Micros,
			ConnectDiffMicros:   Round1(l.Connect.P50Micros - c.Connect.P50Micros),
			ClusterAnswerMicros: c.Answer.P50Micros, LocalAnswerMicros: l.Answer.P50Micros,
			AnswerDiffMicros: Round1(l.Answer.P50Micros - c.Answer.P50Micros)})
	}
}

// Answered says whether any rung was answered, and if none, why in one line.
func (r *EntryReport) Answered() error {
	for _, g := range r.Rungs {
		if g.Answered > 0 {
			return nil
		}
	}
	if r.Via == ViaLoadBalancer {
		return fmt.Errorf("%w: no load balancer address answered from %s (%d ways in tried): are the load balancers reachable from here (an internal scheme, loadBalancerSourceRanges, a firewall)?", ErrNothingAnswered, strings.Join(r.Client, ", "), len(r.Rungs))
	}
	return fmt.Errorf("%w: no node port answered from %s (%d ways in tried): is the node-port range (30000-32767 by default) reachable from here?", ErrNothingAnswered, strings.Join(r.Client, ", "), len(r.Rungs))
}

// ErrNothingAnswered: a way in where no connection was answered at all.
var ErrNothingAnswered = fmt.Errorf("nothing answered")

// entryFigures are the per-rung figures and their units.
var entryFigures = []struct{ name, unit string }{
	{"connect.p50", UnitMicros}, {"connect.p99", UnitMicros}, {"answer.p50", UnitMicros}, {"answer.p99", UnitMicros},
	{"answered-percent", UnitPercent}, {"other-node-percent", UnitPercent}, {"extra-hop", UnitMicros},
}

// lbShareFigures are, through a load balancer, each entry node's figures and their units.
var lbShareFigures = []struct{ name, unit string }{
	{"share-percent", UnitPercent}, {"connect.p50", UnitMicros}, {"connect.p99", UnitMicros}, {"extra-hop", UnitMicros},
}

// FigureValues lists the entry's figures for --fail-if: per policy and entry node
// (nodeport.cluster.NODE.connect.p50, …), and per policy the worst node's
// (nodeport.local.connect.p50: the highest, or for answered-percent the lowest); through a
// load balancer, per policy (loadbalancer.local.connect.p50) and per node it sent connections
// to (loadbalancer.cluster.NODE.extra-hop: shareFigures).
func (r *EntryReport) FigureValues() []FigureValue {
	var out []FigureValue
	for _, g := range r.Rungs {
		out = append(out, r.shareFigures(g)...)
	}
	worst := map[string]FigureValue{}
	var keys []string
	for _, g := range r.Rungs {
		for _, f := range rungFigures(g) {
			name := f.Name
			if g.Node != "" {
				f.Name = r.Via + "." + strings.ToLower(g.Policy) + "." + RungKey(g.Node) + "." + name
				out = append(out, f)
			}
			k := r.Via + "." + strings.ToLower(g.Policy) + "." + name
			w, seen := worst[k]
			if !seen {
				keys = append(keys, k)
			}
			if !seen || (name == "answered-percent") == (f.Value < w.Value) && f.Value != w.Value {
				f.Name, f.Alias = k, g.Node != ""
				worst[k] = f
			}
		}
	}
	for _, k := range keys {
		out = append(out, worst[k])
	}
	return out
}

// shareFigures are the figures of each node a load balancer sent a rung's connections to: its
// share of the placed ones, its connect p50 and p99, and its extra hop.
func (r *EntryReport) shareFigures(g EntryRung) []FigureValue {
	placed := 0
	for _, e := range g.EntryNodes {
		placed += e.Connections
	}
	var out []FigureValue
	for _, e := range g.EntryNodes {
		pre := r.Via + "." + strings.ToLower(g.Policy) + "." + RungKey(e.Node) + "."
		out = append(out, FigureValue{Name: pre + "share-percent", Unit: UnitPercent, Value: Round1(100 * float64(e.Connections) / float64(placed))},
			FigureValue{Name: pre + "connect.p50", Unit: UnitMicros, Value: e.Connect.P50Micros}, FigureValue{Name: pre + "connect.p99", Unit: UnitMicros, Value: e.Connect.P99Micros})
		if e.ExtraHopMicros != nil {
			out = append(out, FigureValue{Name: pre + "extra-hop", Unit: UnitMicros, Value: *e.ExtraHopMicros})
		}
	}
	return out
}

// rungFigures are the figures one rung has: answered-percent always, the rest when measured.
func rungFigures(g EntryRung) []FigureValue {
	out := []FigureValue{{Name: "answered-percent", Unit: UnitPercent}}
	if g.Connections > 0 {
		out[0].Value = Round1(100 * float64(g.Answered) / float64(g.Connections))
	}
	if g.Connect != nil {
		out = append(out, FigureValue{Name: "connect.p50", Unit: UnitMicros, Value: g.Connect.P50Micros}, FigureValue{Name: "connect.p99", Unit: UnitMicros, Value: g.Connect.P99Micros},
			FigureValue{Name: "answer.p50", Unit: UnitMicros, Value: g.Answer.P50Micros}, FigureValue{Name: "answer.p99", Unit: UnitMicros, Value: g.Answer.P99Micros})
	}
	if g.OtherNodePercent != nil {
		out = append(out, FigureValue{Name: "other-node-percent", Unit: UnitPercent, Value: *g.OtherNodePercent})
	}
	if g.ExtraHopMicros != nil {
		out = append(out, FigureValue{Name: "extra-hop", Unit: UnitMicros, Value: *g.ExtraHopMicros})
	}
	return out
}

// EntryPlannedFigures names the figures a way in (via: nodeport or loadbalancer) over nodes
// (through a load balancer: every node it may send connections to) will report.
func EntryPlannedFigures(via string, nodes []string) map[string]string {
	out := map[string]string{}
	perNode := entryFigures
	if via == ViaLoadBalancer {
		perNode = lbShareFigures
	}
	for _, pol := range []string{PolicyCluster, PolicyLocal} {
		for _, f := range entryFigures {
			out[via+"."+strings.ToLower(pol)+"."+f.name] = f.unit
		}
		for _, f := range perNode {
			for _, n := range nodes {
				out[via+"."+strings.ToLower(pol)+"."+RungKey(n)+"."+f.name] = f.unit
			}
		}
	}
	return out
}
