package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Container is one of an application pod's containers as the plugin knows it: its name, the
// runtime's ID from the pod's status (without the "containerd://" scheme), its own CPU limit in
// cores (0 without) and whether it is an ephemeral container (another run's agent).
type Container struct {
	Name, ID   string
	LimitCores float64
	Ephemeral  bool
}

// maxAppContainers bounds the entries kept of one agent's word about its pod's containers.
const maxAppContainers = 64

// appBusyCores: a container seen using this many cores or more over the probes is named in
// AppLines even when its limit did not decide its work.
const appBusyCores = 0.1

// judgeApp names the containers an agent saw by the pod's status, gives each its own limit and
// judges whether that limit decided its work, and adds the pod's containers the agent did not
// see; nil where the agent is not in an application pod (what it saw is not the application's)
// or took no such accounting over the probe (a probe the server agent had no part in).
func judgeApp(seen []v1alpha1.AppContainer, inApp bool, pod []Container) []v1alpha1.AppContainer {
	if !inApp || len(pod) == 0 || len(seen) == 0 {
		return nil
	}
	var out []v1alpha1.AppContainer
	matched := map[string]bool{}
	for _, a := range seen[:min(len(seen), maxAppContainers)] {
		sanitize(&a.CPUUse)
		if a.WallSeconds <= 0 || a.CPUSeconds > cpuMaxCores*a.WallSeconds || matched[a.ContainerID] {
			continue
		}
		a.Name, a.NotSeen, a.LimitCores, a.LimitFrom, a.ThrottledSeconds, a.ThrottledPeriods = "", false, 0, "", 0, 0
		if i := slices.IndexFunc(pod, func(c Container) bool { return c.ID != "" && c.ID == a.ContainerID }); i >= 0 {
			a.Name, a.LimitCores = pod[i].Name, pod[i].LimitCores
			if a.LimitCores > 0 {
				a.LimitFrom = v1alpha1.LimitFromContainer
			}
		}
		matched[a.ContainerID] = true
		a.CPULimited = cpuLimited(&a.CPUUse) != ""
		out = append(out, a)
	}
	for _, c := range pod {
		if !c.Ephemeral && !matched[c.ID] {
			out = append(out, v1alpha1.AppContainer{Name: c.Name, ContainerID: c.ID, NotSeen: true, CPUUse: v1alpha1.CPUUse{LimitCores: c.LimitCores}})
		}
	}
	slices.SortStableFunc(out, func(x, y v1alpha1.AppContainer) int {
		return cmp.Or(cmp.Compare(specOrder(pod, x), specOrder(pod, y)), strings.Compare(x.ContainerID, y.ContainerID))
	})
	return out
}

// specOrder is a container's place in the pod's list; the unnamed last.
func specOrder(pod []Container, a v1alpha1.AppContainer) int {
	if i := slices.IndexFunc(pod, func(c Container) bool { return a.Name != "" && c.Name == a.Name }); i >= 0 {
		return i
	}
	return len(pod)
}

// appName is how the lines name a container: its name, or its cgroup's ID.
func appName(a v1alpha1.AppContainer) string {
	if a.Name != "" {
		return a.Name
	}
	return "cgroup " + a.ContainerID[:min(len(a.ContainerID), 12)]
}

// beside says what the pod's containers used while an agent under the pod's limit ran: "; the
// pod's containers meanwhile: burner 0.20 cores, app 0.00 (not seen: x …)", or "".
func beside(app []v1alpha1.AppContainer) string {
	var used, unseen []string
	for _, a := range app {
		switch {
		case a.NotSeen:
			unseen = append(unseen, a.Name)
		case a.Name != "" || a.CPUSeconds >= appBusyCores*a.WallSeconds:
			used = append(used, fmt.Sprintf("%s %.2f cores", appName(a), a.CPUSeconds/a.WallSeconds))
		}
	}
	if len(used) == 0 && len(unseen) == 0 {
		return ""
	}
	s := "; the pod's containers meanwhile:"
	if len(used) > 0 {
		s += " " + strings.Join(used, ", ")
	}
	if len(unseen) > 0 {
		s += " (not seen: " + strings.Join(unseen, ", ") + " — " + NotSeenWhy + ")"
	}
	return s
}

// NotSeenWhy says why an agent cannot see some of its pod's containers.
const NotSeenWhy = "the agent shares only its target container's process namespace; a pod with shareProcessNamespace shows them all"

// appTotal is one container's use summed over probes.
type appTotal struct {
	side    string
	app     v1alpha1.AppContainer
	limited bool
}

// AppLines name the application containers, in the agents' pods, that their own CPU limit
// decided during the probes or that used appBusyCores or more: use and waits summed over the
// probes (what, e.g. " in round 2", in the first line).
func AppLines(what string, results []*v1alpha1.ProbeResult) []string {
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
				totals = addApp(totals, side.role, a)
			}
		}
	}
	var lines []string
	for _, t := range totals {
		a := t.app
		if a.WallSeconds < cpuMinWall || !t.limited && a.CPUSeconds < appBusyCores*a.WallSeconds {
			continue
		}
		l := fmt.Sprintf("  %s pod, container %s: %.2f cores", t.side, appName(a), a.CPUSeconds/a.WallSeconds)
		if a.LimitCores > 0 {
			l += fmt.Sprintf(" of its %.2f-core limit", a.LimitCores)
		}
		l += fmt.Sprintf(", its threads waited %.2f s in all for a CPU in %.2f s of probes", a.RunQueueWaitSeconds, a.WallSeconds)
		if t.limited {
			l += ": CPU-THROTTLED — the application's own latency holds CPU waits that the path's figures do not"
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil
	}
	return append([]string{"application containers' CPU" + what + ", as the agents in their pods saw it (-o json: validity.clientApp, serverApp)"}, lines...)
}

// addApp adds one probe's figures of a container to its side's total.
func addApp(totals []*appTotal, side string, a v1alpha1.AppContainer) []*appTotal {
	if a.NotSeen {
		return totals
	}
	i := slices.IndexFunc(totals, func(t *appTotal) bool { return t.side == side && t.app.ContainerID == a.ContainerID })
	if i < 0 {
		return append(totals, &appTotal{side: side, app: a, limited: a.CPULimited})
	}
	t := totals[i]
	t.app.WallSeconds += a.WallSeconds
	t.app.CPUSeconds += a.CPUSeconds
	t.app.RunQueueWaitSeconds += a.RunQueueWaitSeconds
	t.limited = t.limited || a.CPULimited
	return totals
}
