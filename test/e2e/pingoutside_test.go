package e2e

import (
	"slices"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// With the WAN delay at 1 ms each way, path from a pod on lab-a1 to the outside host by name
// (icmp://outside.lab: looked up through the pod's resolver, then pinged) and by its address
// alone (198.51.100.10: no lookup) reads the ICMP round trip iputils ping reads from the same
// pod's network namespace, before, between and after: within pingBound of the span of ping's
// medians.
func TestPathPingsAnOutsideHost(t *testing.T) {
	ns, netns := outsideClient(t, "1ms")
	alone(t)
	pings := []float64{pingMedian(t, netns, outsideIP, 20, "0.05")}
	results := map[string]*v1alpha1.EgressResult{}
	for _, dst := range []string{"icmp://" + outsideName, outsideIP} {
		results[dst] = egressResult(t, pathJSON(t, "-n", ns, "app", dst, "--requests", "20"))
		pings = append(pings, pingMedian(t, netns, outsideIP, 20, "0.05"))
	}
	lo, hi := slices.Min(pings), slices.Max(pings)
	for dst, e := range results {
		if e.ICMP == nil || e.ICMP.Received != 20 || e.RemoteAddress != outsideIP || e.Connect.Count != 0 {
			t.Fatalf("%s: result %+v (icmp %+v): want 20 echo replies from %s", dst, e, e.ICMP, outsideIP)
		}
		got := e.ICMP.RTT.P50Micros
		t.Logf("%s: icmp p50 %.0f µs over %d echoes, ping's medians %s µs", dst, got, e.ICMP.RTT.Count, microsList(pings))
		if got < lo-pingBound(lo) || got > hi+pingBound(hi) {
			t.Errorf("%s: icmp p50 %.0f µs, ping's medians %.0f-%.0f µs on the same path: more than 5 %% + 150 µs outside", dst, got, lo, hi)
		}
	}
	if e := results["icmp://"+outsideName]; e.DNS == nil || e.DNS.Count != 20 || !slices.Contains(e.Addresses, outsideIP) {
		t.Errorf("by name: lookups %+v, addresses %v: want 20 lookups through the pod's resolver giving %s", e.DNS, e.Addresses, outsideIP)
	}
	if e := results[outsideIP]; e.DNS != nil || e.Target != "icmp://"+outsideIP {
		t.Errorf("by address: lookups %+v, target %q: want none, and icmp://%s", e.DNS, e.Target, outsideIP)
	}
}
