package e2e

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The way out from every rung: `ladder deploy/api --egress http://outside.lab/` has each rung's
// client (on lab-b1, lab-b2, lab-a1) also measure the outside host, through its node's SNAT and
// the router's WAN delay (1 ms one way). Each rung's egress connect p50 is what ping from a pod
// on the same node to the outside host reads, before and after, within 5 % + 150 µs; the name
// was looked up through the pod's resolver, and the first byte came after the connect; a gate
// reads the rungs' egress figures by class. A way out that fails is said on every rung, the rest
// of the ladder stands, and the run exits 1 after its report.
func TestLadderEgress(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "wan-delay", "1ms")
	t.Cleanup(func() { labScript(t, "wan-delay", "off") })
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), deployment("api", "lab-b1", "netbench.lab/sample-app:1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, "api")
	nodes := map[string]string{"same-node": "lab-b1", "same-zone": "lab-b2", "cross-zone zone-a": "lab-a1"}
	netns := map[string]string{}
	for rung, node := range nodes {
		name := "ping-" + strings.Fields(rung)[0]
		createPod(t, cs, ns, pod(name, node, "netbench.lab/pause:1", nil, nil))
		p := waitPod(t, cs, ns, name, 60*time.Second, "running", running)
		netns[rung] = podNetns(t, node, p.Status.PodIP)
	}
	alone(t)
	before := map[string]float64{}
	for rung := range nodes {
		before[rung] = pingMedian(t, netns[rung], outsideIP, 30, "0.05")
	}
	r := ladderJSON(t, "-n", ns, "deploy/api", "--probes", "rtt", "--egress", "http://"+outsideName+"/",
		"--fail-if", "cross-zone.egress.connect.p50 > 3 * same-node.egress.connect.p50")
	for _, rung := range r.Rungs {
		f, ok := rung.Figures["egress.connect.p50"]
		dns, ttfb := rung.Figures["egress.dns.p50"], rung.Figures["egress.ttfb-new.p50"]
		if rung.Skipped != "" || !ok || rung.Node != nodes[rung.Name] {
			t.Errorf("rung %s on %s: skipped %q, egress connect measured %v", rung.Name, rung.Node, rung.Skipped, ok)
			continue
		}
		after := pingMedian(t, netns[rung.Name], outsideIP, 30, "0.05")
		lo, hi := min(before[rung.Name], after), max(before[rung.Name], after)
		t.Logf("%s (%s): egress connect p50 %.0f µs, dns p50 %.0f µs, first byte p50 %.0f µs; ping %.0f-%.0f µs", rung.Name, rung.Node, f.Median, dns.Median, ttfb.Median, lo, hi)
		if f.Median < lo-pingBound(lo) || f.Median > hi+pingBound(hi) {
			t.Errorf("%s: egress connect p50 %.0f µs, more than 5 %% + 150 µs outside ping's %.0f-%.0f µs from a pod on %s", rung.Name, f.Median, lo, hi, rung.Node)
		}
		if dns.Samples == 0 || ttfb.Median <= f.Median {
			t.Errorf("%s: dns %+v, first byte %+v: want the name looked up and the first byte after the connect (%.0f µs)", rung.Name, dns, ttfb, f.Median)
		}
	}
	if len(r.Checks) != 1 || r.Checks[0].Violated || r.Checks[0].Left < 1000 || len(r.Rungs) != 3 {
		t.Errorf("checks %+v, %d rungs: want the gate on the rungs' egress figures read and not violated, 3 rungs", r.Checks, len(r.Rungs))
	}
	// A way out that fails (nothing listens on the outside host's port 9) is said per rung, the
	// ladder's own figures stand, and the run exits 1 once its report is printed.
	out, stderr, err := netbench(t, "ladder", "-o", "json", "-n", ns, "deploy/api", "--probes", "rtt", "--egress", "tcp://"+outsideIP+":9", "--zones", "zone-b")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr, "probe egress to the destination outside the cluster failed") {
		t.Errorf("a ladder whose way out failed: %v, stderr %q: want exit 1 naming the failure", err, stderr)
	}
	r = decodeStrict[v1alpha1.LadderReport](t, out)
	if r.Kind != "LadderReport" || r.APIVersion != v1alpha1.APIVersion || len(r.Rungs) == 0 || len(r.Figures) == 0 {
		t.Fatalf("the report printed before exit 1 lacks required fields: %+v", r)
	}
	said, measured := 0, 0
	for _, w := range r.Warnings {
		if strings.Contains(w, "probe egress to the destination outside the cluster failed") {
			said++
		}
	}
	for _, rung := range r.Rungs {
		if rung.Skipped == "" && rung.Figures["icmp.p50"].Samples > 0 {
			measured++
		}
	}
	if measured == 0 || said != measured {
		t.Errorf("warnings %q, %d rungs measured: want the way out's failure said on each, the rungs measured", r.Warnings, measured)
	}
	noAgentPods(t, cs, ns)
}
