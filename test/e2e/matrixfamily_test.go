package e2e

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// matrix --ip-family both with the zone delay on: every pair is measured over IPv4 and IPv6 in
// one job, the report's node cells are IPv4's and its ipv6 twin's IPv6's, each within reach of
// iputils ping -4 / ping -6 between pods on the same two nodes, before and after it; the human report sets the two
// side by side and OpenMetrics labels each cell with its family.
func TestMatrixBothFamilies(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })
	three := []string{"lab-a1", "lab-b1", "lab-b2"}
	ips, netns := pingers(t, cs, ns, three...)
	ip6 := map[string]string{}
	for _, n := range three {
		p := waitPod(t, cs, ns, "ping-"+n, 60*time.Second, "running", running)
		if ip6[n] = familyIP(*p, true); ip6[n] == "" {
			t.Fatalf("pod ping-%s has no IPv6 address (%v): this test needs the dual-stack lab", n, p.Status.PodIPs)
		}
	}
	dstOf := func(fam, node string) string {
		if fam == "IPv6" {
			return ip6[node]
		}
		return ips[node]
	}
	before := map[string]map[string]float64{}
	for _, fam := range []string{"IPv4", "IPv6"} {
		before[fam] = pingsBefore(t, netns, three, func(node string) string { return dstOf(fam, node) })
	}
	args := []string{"-n", ns, "--scope", "nodes", "--nodes", "kubernetes.io/hostname!=lab-a2", "--ip-family", "both"}
	r := matrixJSON(t, args...)
	if r.IPv6 == nil || r.IPFamily != "IPv4" || r.IPv6.IPFamily != "IPv6" || len(r.NodeGrid) != 6 || len(r.IPv6.NodeGrid) != 6 {
		t.Fatalf("families %q / %+v, %d node cells: want IPv4's and IPv6's 3 × 3 node matrices", r.IPFamily, r.IPv6, len(r.NodeGrid))
	}
	for _, p := range r.IPv6.Pairs {
		if p.Error != "" || p.Samples < 48 {
			t.Errorf("IPv6 pair %s → %s: %d samples, error %q", p.From, p.To, p.Samples, p.Error)
		}
	}
	for _, p := range r.Pairs {
		for _, res := range p.Results {
			if strings.HasSuffix(res.Name, "-v6") {
				t.Errorf("pair %s → %s: an IPv6 result %s among IPv4's", p.From, p.To, res.Name)
			}
		}
	}
	nothingLeft(t, cs, ns)

	for fam, grid := range map[string][]v1alpha1.MatrixCell{"IPv4": r.NodeGrid, "IPv6": r.IPv6.NodeGrid} {
		for _, c := range grid {
			withinPing(t, fam+" ", c, netns[c.From], dstOf(fam, c.To), before[fam][c.From+">"+c.To])
		}
	}

	// The human report of a zone matrix of both families, gated on an IPv6 figure.
	out, stderr, err := netbench(t, "matrix", "-n", ns, "--pairs-per-cell", "1", "--ip-family", "both", "--fail-if", "v6.cross-zone.rtt.p50 > 1s")
	if err != nil {
		t.Fatalf("matrix --ip-family both: %v\n%s", err, stderr)
	}
	t.Logf("report:\n%s", out)
	for _, want := range []string{"IP families: IPv4 and IPv6", "IPv4 and IPv6 side by side, by zone", "zone-a → zone-b", "ok     v6.cross-zone.rtt.p50 > 1s"} {
		if !strings.Contains(out, want) {
			t.Errorf("the human report lacks %q", want)
		}
	}
	nothingLeft(t, cs, ns)
}

// pingsBefore is iputils ping's median RTT between every two of nodes' pinger pods (keys
// "from>to"), taken before a matrix runs: the agents' teardown after it loads the lab's delay
// lines (pings after read 1,115-1,195 µs where the matrix read 948-950 µs, CI; 1,100 µs against
// 849 µs in another run).
func pingsBefore(t *testing.T, netns map[string]string, nodes []string, dst func(node string) string) map[string]float64 {
	t.Helper()
	before := map[string]float64{}
	for _, from := range nodes {
		for _, to := range nodes {
			if from != to {
				before[from+">"+to] = pingMedian(t, netns[from], dst(to), 50, "0.01")
			}
		}
	}
	return before
}

// withinPing fails t unless the matrix cell's p50 lies within pingBound of the span of ping's
// medians on the same pod path: the one taken before the matrix and pingSpan's after it.
func withinPing(t *testing.T, fam string, c v1alpha1.MatrixCell, netns, ip string, before float64) {
	t.Helper()
	if miss := pingMiss(t, fam, c, netns, ip, before); miss != "" {
		t.Error(miss)
	}
}

// pingMiss says how the matrix cell's p50 lies outside pingBound of the span of ping's medians
// (withinPing), or "" when it lies within.
func pingMiss(t *testing.T, fam string, c v1alpha1.MatrixCell, netns, ip string, before float64) string {
	t.Helper()
	lo, hi := pingSpan(t, netns, ip, c.P50Micros)
	lo, hi = min(lo, before), max(hi, before)
	t.Logf("%s%s → %s: matrix p50 %.0f µs, ping median %.0f–%.0f µs", fam, c.From, c.To, c.P50Micros, lo, hi)
	if c.P50Micros < lo-pingBound(lo) || c.P50Micros > hi+pingBound(hi) {
		return fmt.Sprintf("%s%s → %s: matrix p50 %.0f µs, ping median %.0f–%.0f µs on the same pod path: more than 5 %% + 150 µs outside", fam, c.From, c.To, c.P50Micros, lo, hi)
	}
	return ""
}

// pingSpan is iputils ping's median RTT to ip (50 echoes 10 ms apart), taken a second time when
// the first is more than pingBound from got: the medians of one pod path moved by up to 140 µs
// between two moments seconds apart in CI (same-zone, 1,050 and 1,190 µs over IPv4 and IPv6,
// the matrix 982 and 974 µs), more than the 91 µs of benchmarks/notes/2026-12-03-ping-bounds.md;
// the figure compared must then lie within the bound of the span ping itself covered.
func pingSpan(t *testing.T, netns, ip string, got float64) (lo, hi float64) {
	t.Helper()
	first := pingMedian(t, netns, ip, 50, "0.01")
	if math.Abs(got-first) <= pingBound(first) {
		return first, first
	}
	again := pingMedian(t, netns, ip, 50, "0.01")
	return min(first, again), max(first, again)
}
