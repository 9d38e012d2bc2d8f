// Package placement plans where measuring agents go: which node each client runs on so that a
// comparison covers the paths users ask about (same node, same zone, every other zone, other
// regions), and why a path that cannot be measured is skipped. It reads nodes, never the API.
package placement

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// Rung names and the path class each measures.
const (
	SameNode    = "same-node"
	SameZone    = "same-zone"
	CrossZone   = "cross-zone"
	CrossRegion = "cross-region"
	OtherNode   = "other-node" // nodes without zone labels: another node, class unknown
)

// Node is what placement needs of a node.
type Node struct {
	Name, Zone, Region string
	Labels             map[string]string
	Ready              bool
	Unschedulable      bool
	Taints             []corev1.Taint
	// IPv4 and IPv6 say the node has a pod range of that family (or, where the cluster
	// allocates none, an InternalIP).
	IPv4, IPv6 bool
}

// NodeFrom reads a node object.
func NodeFrom(n *corev1.Node) Node {
	out := Node{Name: n.Name, Labels: n.Labels, Zone: n.Labels[corev1.LabelTopologyZone],
		Region: n.Labels[corev1.LabelTopologyRegion], Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	// Its pods' families: its pod ranges where the cluster allocates them, else its InternalIPs.
	addrs := slices.Clone(n.Spec.PodCIDRs)
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && len(n.Spec.PodCIDRs) == 0 {
			addrs = append(addrs, a.Address)
		}
	}
	for _, a := range addrs {
		v6 := strings.Contains(a, ":")
		out.IPv4, out.IPv6 = out.IPv4 || !v6, out.IPv6 || v6
	}
	return out
}

// Filter restricts the nodes clients may use: a label selector (--nodes) and zones (--zones).
type Filter struct {
	Nodes labels.Selector
	Zones []string
}

// Rung is one path to measure: a client on Node reaching the destination.
type Rung struct {
	// Name is the rung's label: same-node, same-zone, "cross-zone <zone>", "cross-region <region>".
	Name  string `json:"name"`
	Class string `json:"class"`
	Node  string `json:"node,omitempty"`
	Zone  string `json:"zone,omitempty"`
	// Region is set when nodes carry region labels.
	Region string `json:"region,omitempty"`
	// Skipped says why the rung cannot be measured (no node fits); empty when it can.
	Skipped string `json:"skipped,omitempty"`
}

// Ladder plans the rungs for a destination on node dst: same node, another node of its zone,
// one node of each other zone of its region, one of each other region. Clients tolerate
// what the destination's pod tolerates. Rungs that cannot exist are returned with the reason.
func Ladder(dst Node, nodes []Node, tolerations []corev1.Toleration, f Filter) []Rung {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var rungs []Rung
	same := Rung{Name: SameNode, Class: SameNode, Node: dst.Name, Zone: dst.Zone, Region: dst.Region}
	if why := f.Excludes(dst); why != "" {
		same.Node, same.Skipped = "", fmt.Sprintf("node %s %s", dst.Name, why)
	}
	rungs = append(rungs, same)
	if dst.Zone == "" {
		return append(rungs, pick(OtherNode, "unknown", dst, nodes, tolerations, f, func(n Node) bool { return n.Name != dst.Name },
			"the cluster (its nodes carry no "+corev1.LabelTopologyZone+" label)"))
	}
	rungs = append(rungs, pick(SameZone, SameZone, dst, nodes, tolerations, f,
		func(n Node) bool { return n.Name != dst.Name && n.Zone == dst.Zone }, "zone "+dst.Zone))
	for _, z := range otherZones(dst, nodes) {
		r := pick(CrossZone+" "+z, CrossZone, dst, nodes, tolerations, f,
			func(n Node) bool { return n.Zone == z && n.Region == dst.Region }, "zone "+z)
		r.Zone = z
		if len(f.Zones) > 0 && !slices.Contains(f.Zones, z) {
			r.Node, r.Skipped = "", "zone "+z+" is not in --zones"
		}
		rungs = append(rungs, r)
	}
	for _, reg := range otherRegions(dst, nodes) {
		r := pick(CrossRegion+" "+reg, CrossRegion, dst, nodes, tolerations, f,
			func(n Node) bool { return n.Region == reg }, "region "+reg)
		r.Region = reg
		rungs = append(rungs, r)
	}
	return rungs
}

// pick returns a rung on the first node (by name) that is in scope and usable, or the rung
// skipped with why each node in scope was not.
func pick(name, class string, dst Node, nodes []Node, tol []corev1.Toleration, f Filter, inScope func(Node) bool, scope string) Rung {
	var why []string
	for _, n := range nodes {
		if !inScope(n) {
			continue
		}
		reason := unusable(n, tol, "neither the destination's pod nor a --toleration tolerates")
		if reason == "" {
			reason = f.Excludes(n)
		}
		if reason == "" {
			return Rung{Name: name, Class: class, Node: n.Name, Zone: n.Zone, Region: n.Region}
		}
		why = append(why, n.Name+" "+reason)
	}
	r := Rung{Name: name, Class: class, Region: dst.Region}
	if len(why) == 0 {
		r.Skipped = "no other node in " + scope
	} else {
		r.Skipped = "no usable node in " + scope + ": " + strings.Join(why, "; ")
	}
	return r
}

// unusable says why an agent pod cannot run on n, or "";
// who names what does not tolerate a taint.
func unusable(n Node, tol []corev1.Toleration, who string) string {
	switch {
	case !n.Ready:
		return "is not Ready"
	case n.Unschedulable:
		return "is cordoned"
	}
	for _, t := range n.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !tolerated(t, tol) {
			return fmt.Sprintf("has taint %s that %s", taintString(t), who)
		}
	}
	return ""
}

func tolerated(t corev1.Taint, tol []corev1.Toleration) bool {
	for i := range tol {
		if tol[i].ToleratesTaint(klog.Background(), &t, true) {
			return true
		}
	}
	return false
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// Excludes says why the filter keeps clients off n, or "".
func (f Filter) Excludes(n Node) string {
	if f.Nodes != nil && !f.Nodes.Empty() && !f.Nodes.Matches(labels.Set(n.Labels)) {
		return "does not match --nodes " + f.Nodes.String()
	}
	return ""
}

func otherZones(dst Node, nodes []Node) []string {
	seen := map[string]bool{}
	var zs []string
	for _, n := range nodes {
		if n.Zone != "" && n.Zone != dst.Zone && n.Region == dst.Region && !seen[n.Zone] {
			seen[n.Zone] = true
			zs = append(zs, n.Zone)
		}
	}
	sort.Strings(zs)
	return zs
}

func otherRegions(dst Node, nodes []Node) []string {
	seen := map[string]bool{}
	var rs []string
	for _, n := range nodes {
		if n.Region != "" && n.Region != dst.Region && !seen[n.Region] {
			seen[n.Region] = true
			rs = append(rs, n.Region)
		}
	}
	sort.Strings(rs)
	return rs
}
