package cmdutil

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Endpoint is one ready endpoint pod of a Service; hints its EndpointSlice's topology hints
// ("zones=…;nodes=…", "" without any), which decide where the dataplane sends connections.
type Endpoint struct{ Pod, Node, Zone, Addr, Hints string }

// ReadyEndpoints lists the Service's ready endpoint pods from its EndpointSlices (of any
// address type: a dual-stack Service's pods once each).
func ReadyEndpoints(ctx context.Context, client kubernetes.Interface, ns, name string) ([]Endpoint, error) {
	return ReadyEndpointsOf(ctx, client, ns, name, "")
}

// ReadyEndpointsOf lists the Service's ready endpoint pods from its EndpointSlices of address
// type t (IPv4, IPv6; "" for any).
func ReadyEndpointsOf(ctx context.Context, client kubernetes.Interface, ns, name string, t discoveryv1.AddressType) ([]Endpoint, error) {
	slices, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of Service %s/%s: %w", ns, name, access.ForbiddenOr(err))
	}
	seen := map[string]bool{}
	var out []Endpoint
	for _, s := range slices.Items {
		if t != "" && s.AddressType != t {
			continue
		}
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || (e.Conditions.Ready != nil && !*e.Conditions.Ready) || seen[e.TargetRef.Name] {
				continue
			}
			seen[e.TargetRef.Name] = true
			ep := Endpoint{Pod: e.TargetRef.Name, Node: Deref(e.NodeName), Zone: Deref(e.Zone)}
			if len(e.Addresses) > 0 {
				ep.Addr = e.Addresses[0]
			}
			ep.Hints = hintString(e.Hints)
			out = append(out, ep)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out, nil
}

// hintString writes an endpoint's topology hints in one canonical form ("" without any).
func hintString(h *discoveryv1.EndpointHints) string {
	if h == nil {
		return ""
	}
	var zones, nodes []string
	for _, z := range h.ForZones {
		zones = append(zones, z.Name)
	}
	for _, n := range h.ForNodes {
		nodes = append(nodes, n.Name)
	}
	if len(zones)+len(nodes) == 0 {
		return ""
	}
	sort.Strings(zones)
	sort.Strings(nodes)
	s := "zones=" + strings.Join(zones, ",")
	if len(nodes) > 0 {
		s += ";nodes=" + strings.Join(nodes, ",")
	}
	return s
}
