package report

import (
	"fmt"
	"slices"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// maxAppLines bounds the containers AppLines names.
const maxAppLines = 16

// appTotal is one container's figures summed over the probes, with the most it used in one and
// how many probes its own limit decided.
type appTotal struct {
	side            string
	app             v1alpha1.AppContainer
	probes, limited int
	mostCores       float64
}

// AppLines name the application containers, in the agents' pods, that their own CPU limit
// decided in a probe, that waited for a CPU longer than they ran, or that used appBusyCores or
// more: use and waits summed over the probes (what, e.g. " in round 2", in the first line).
func AppLines(what string, results []*v1alpha1.ProbeResult) []string {
	var lines []string
	for _, t := range appTotals(results) {
		if l := t.line(); l != "" && len(lines) < maxAppLines {
			lines = append(lines, l)
		}
	}
	lines = append(lines, notCompared(results)...)
	if len(lines) == 0 {
		return nil
	}
	return append([]string{"application containers' CPU" + what + ", as the agents in their pods saw it (-o json: validity.clientApp, serverApp)"}, lines...)
}

func appTotals(results []*v1alpha1.ProbeResult) []*appTotal {
	var totals []*appTotal
	for _, r := range results {
		if r == nil || r.Validity == nil || r.Skipped != "" {
			continue
		}
		for _, side := range []struct {
			role string
			app  []v1alpha1.AppContainer
		}{{"client", r.Validity.ClientApp}, {"server", r.Validity.ServerApp}} {
			for _, a := range side.app {
				if !a.NotSeen && a.WallSeconds > 0 {
					totals = addApp(totals, side.role, a)
				}
			}
		}
	}
	return totals
}

// addApp adds one probe's figures of a container to its side's total.
func addApp(totals []*appTotal, side string, a v1alpha1.AppContainer) []*appTotal {
	i := slices.IndexFunc(totals, func(t *appTotal) bool { return t.side == side && t.app.ContainerID == a.ContainerID })
	if i < 0 {
		totals = append(totals, &appTotal{side: side, app: a})
		i = len(totals) - 1
		totals[i].app.WallSeconds, totals[i].app.CPUSeconds, totals[i].app.RunQueueWaitSeconds = 0, 0, 0
	}
	t := totals[i]
	t.app.WallSeconds += a.WallSeconds
	t.app.CPUSeconds += a.CPUSeconds
	t.app.RunQueueWaitSeconds += a.RunQueueWaitSeconds
	t.probes++
	t.mostCores = max(t.mostCores, a.CPUSeconds/a.WallSeconds)
	if a.CPULimited {
		t.limited++
	}
	return totals
}

// line is what AppLines prints of a container, or "" when there is nothing to say.
func (t *appTotal) line() string {
	a := t.app
	cores := a.CPUSeconds / a.WallSeconds
	starved := a.RunQueueWaitSeconds >= a.CPUSeconds && a.RunQueueWaitSeconds >= cpuWaitShare*a.WallSeconds
	if a.WallSeconds < cpuMinWall || t.limited == 0 && !starved && cores < appBusyCores {
		return ""
	}
	l := fmt.Sprintf("  %s pod, container %s: %.2f cores (at most %.2f in a probe)", t.side, appName(a), cores, t.mostCores)
	if a.LimitCores > 0 {
		l += fmt.Sprintf(" of its %.2f-core limit", a.LimitCores)
	}
	l += fmt.Sprintf(", its threads waited %.2f s in all for a CPU in %.2f s of probes", a.RunQueueWaitSeconds, a.WallSeconds)
	switch {
	case t.limited > 0:
		l += fmt.Sprintf("; at its own limit in %d of %d probes: CPU-THROTTLED — the application's own latency can hold CPU waits that the path's figures do not", t.limited, t.probes)
	case starved:
		l += "; it waited longer than it ran: its own limit, the pod's (which an ephemeral agent shares) or other work on the node"
	}
	return l
}

// AppNotComparedWhy says why an agent has no figures for its pod's containers in a probe.
const AppNotComparedWhy = "its two scans of the pod's processes could not be compared (a scan cut short: more than 20,000 threads or past 200 ms; a /proc it could not list; the server's first scan lost; or figures no kernel counts)"

// notCompared names the sides whose agent could not compare its scans in some of the probes
// that side took part in.
func notCompared(results []*v1alpha1.ProbeResult) []string {
	var lines []string
	for _, side := range []struct {
		role string
		of   func(*v1alpha1.Validity) (took, not bool)
	}{
		{"client", func(v *v1alpha1.Validity) (bool, bool) { return v.Client != nil, v.ClientAppNotCompared }},
		{"server", func(v *v1alpha1.Validity) (bool, bool) { return v.Server != nil, v.ServerAppNotCompared }},
	} {
		n, all := 0, 0
		for _, r := range results {
			if r == nil || r.Validity == nil || r.Skipped != "" {
				continue
			}
			if took, not := side.of(r.Validity); took {
				all++
				if not {
					n++
				}
			}
		}
		if n > 0 {
			lines = append(lines, fmt.Sprintf("  %s pod, in %d of %d probes: %s", side.role, n, all, AppNotComparedWhy))
		}
	}
	return lines
}
