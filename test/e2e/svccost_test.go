package e2e

import (
	"math"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// With the zone delay on, `ladder svc/zoned-close` and `svc/zoned-any` split the Service's cost
// in two. The dataplane's cost (each endpoint's handshake through the Service minus straight to
// it) is the same on every rung as on the same-node rung, within the noise of two p50
// differences, and never negative beyond it: where connections land does not enter it. The
// routing's effect (the straight handshakes of the endpoints connections landed on, weighted,
// minus the straight one to DST) matches what the rungs' own ICMP p50s predict for where the
// connections landed: under PreferSameZone the cross-zone rung's connections stay in its zone,
// a saving of about the cross-zone delay, and without it about half that.
func TestLadderServiceCostsWithZoneDelay(t *testing.T) {
	cs, ns := lab(t)
	zonedServices(t, cs, ns)
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })
	for _, svc := range []string{"zoned-close", "zoned-any"} {
		t.Run(svc, func(t *testing.T) {
			// The figures come from the spread's handshakes, whatever the HTTP probes' duration;
			// through the IPv4 ClusterIP alone (the dual-stack Services' second spread doubles
			// the handshakes and the load they time under: TestLadderService checks both). Each
			// figure is the median of three rounds, as a careful user runs it: one round's is a
			// difference of two p50s through the user-space delay line, and a moment of the
			// machine's load moved one by 100 µs (same-node rung: −101 µs while others stayed
			// within −21…+40 µs).
			r := ladderJSON(t, "-n", ns, "svc/"+svc, "--probes", "rtt", "--duration", "1s", "--ip-family", "4", "--repeat", "3")
			checkServiceCosts(t, svc, r)
		})
	}
	noAgentPods(t, cs, ns)
}

// dataplaneNoise bounds how far a rung's dataplane figure may lie from the same-node rung's, and
// below zero: each is a difference of two handshake p50s of ~40-100 samples. Four runs on the
// lab put every rung's figure at −29…+40 µs and the rungs of one Service at most 50 µs apart:
// the bound is twice that.
const dataplaneNoise = 100.0

func checkServiceCosts(t *testing.T, svc string, r *v1alpha1.LadderReport) {
	t.Helper()
	icmp := map[string]float64{}
	for _, rung := range r.Rungs {
		icmp[rung.Name] = rung.Figures["icmp.p50"].Median
	}
	var sameNode *float64
	for _, rung := range r.Rungs {
		d, ok1 := rung.Figures["svc.dataplane-tcp-rtt.p50"]
		rt, ok2 := rung.Figures["svc.routing-tcp-rtt.p50"]
		if rung.Skipped != "" || !ok1 || !ok2 || len(rung.Results) == 0 {
			t.Errorf("%s, rung %s: no dataplane or routing figure (skipped %q)", svc, rung.Name, rung.Skipped)
			continue
		}
		if sameNode == nil {
			sameNode = &d.Median
		}
		want := expectedRouting(rung, r.Rungs, icmp)
		t.Logf("%s from %s (%s): dataplane %.0f µs, routing %.0f µs (ICMP predicts %.0f µs), zones %v", svc, rung.Name, rung.Zone, d.Median, rt.Median, want, rung.Spread.ZonePercent)
		if d.Median < -dataplaneNoise || math.Abs(d.Median-*sameNode) > dataplaneNoise {
			t.Errorf("%s, rung %s: dataplane %.0f µs: want within %.0f µs of the same-node rung's and not below −%.0f µs (same-node: %.0f µs)", svc, rung.Name, d.Median, dataplaneNoise, dataplaneNoise, *sameNode)
		}
		if math.Abs(rt.Median-want) > pingBound(math.Abs(want)) {
			t.Errorf("%s, rung %s: routing %.0f µs, ICMP predicts %.0f µs: more than 5 %% + 150 µs apart", svc, rung.Name, rt.Median, want)
		}
	}
}

// expectedRouting is the routing figure a rung's connections predict from the rungs' ICMP p50s
// to DST: an endpoint on the rung's node costs the same-node rung's, one in the rung's zone the
// same-zone rung's, one in the other zone the cross-zone rung's; minus the rung's own to DST.
// Each round's connections landed apart: the prediction is the median of the rounds' own, as
// the figure is the median of the rounds' figures.
func expectedRouting(rung v1alpha1.LadderRung, rungs []v1alpha1.LadderRung, icmp map[string]float64) float64 {
	classOf := func(node, zone string) string {
		switch {
		case node == rung.Node:
			return "same-node"
		case zone == rung.Zone:
			return "same-zone"
		}
		for _, r := range rungs {
			if r.Zone != rungs[0].Zone {
				return r.Name
			}
		}
		return ""
	}
	var rounds []float64
	for _, round := range rung.Results {
		var n, sum float64
		for _, p := range round.AppPort {
			if p.Spread == nil {
				continue
			}
			for _, e := range p.Spread.Endpoints {
				w := float64(e.Service.Count)
				n += w
				sum += w * icmp[classOf(e.Node, e.Zone)]
			}
		}
		if n > 0 {
			rounds = append(rounds, sum/n-icmp[rung.Name])
		}
	}
	if len(rounds) == 0 {
		return math.NaN()
	}
	return median(rounds)
}
