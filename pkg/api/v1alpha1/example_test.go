package v1alpha1_test

import (
	"fmt"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Read a report written by `kubectl netbench path -o json` and print its RTT.
func ExampleRead() {
	data := []byte(`{"apiVersion": "netbench.kubectl.dev/v1alpha1", "kind": "PathReport",
	  "path": {"class": "cross-zone"},
	  "probes": [{"name": "icmp", "kind": "icmp", "rtt": {"received": 20, "rtt": {"count": 20, "p50Micros": 412.5}}}]}`)
	r, err := v1alpha1.Read(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	switch r := r.(type) {
	case *v1alpha1.PathReport:
		for _, p := range r.Probes {
			if p.Kind == v1alpha1.ProbeICMP && p.RTT != nil {
				fmt.Printf("%s: %s p50 %g µs over %d replies\n", r.Path.Class, p.Name, p.RTT.RTT.P50Micros, p.RTT.Received)
			}
		}
	default:
		fmt.Printf("a %T\n", r)
	}
	// Output: cross-zone: icmp p50 412.5 µs over 20 replies
}
