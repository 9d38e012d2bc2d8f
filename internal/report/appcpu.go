package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Container is one of an application pod's containers as the plugin knows it: its name, the
// runtime's ID from the pod's status (without the "containerd://" scheme), its own CPU limit in
// cores (0 without), whether it is an ephemeral container (another run's agent), and whether
// an ephemeral agent in the pod can see its processes (the agent's target container, or every
// container where the pod shares one process namespace).
type Container struct {
	Name, ID   string
	LimitCores float64
	Ephemeral  bool
	Visible    bool
}

// Bounds on an agent's word about its pod's containers: entries kept, threads' summed wait per
// second of the probe (the agent reads at most 20,000 threads), processes.
const (
	maxAppContainers = 64
	maxAppWaitShare  = 20000
	maxAppProcesses  = 1 << 20
)

// appWindowLonger: an agent's two scans of its pod's containers bracket its own window (and, for
// the client, the calls to the server): the scans' window is at least the agent's wall time and
// longer by at most this, in seconds (two control calls of at most 2 s each, and the scans).
const appWindowLonger = 5

// appBusyCores: a container seen using this many cores or more over the probes is named in
// AppLines even when its limit did not decide its work.
const appBusyCores = 0.1

// judgeApp keeps what an agent saw of its pod's containers that a kernel could have counted over
// a window around the agent's own (wall), names each by the pod's status, gives it its own limit
// and judges whether that limit decided its work; then adds the containers the agent could not
// see (outside its process namespace). Nil where the agent is not in an application pod or took
// no such accounting over the probe (a probe the server agent had no part in); dropped when the
// agent sent entries and none could be kept.
func judgeApp(seen []v1alpha1.AppContainer, inApp bool, pod []Container, wall float64) (out []v1alpha1.AppContainer, dropped bool) {
	if !inApp || len(pod) == 0 || len(seen) == 0 || wall <= 0 {
		return nil, false
	}
	matched := map[string]bool{}
	for _, a := range seen[:min(len(seen), 4*maxAppContainers)] {
		if !plausibleApp(&a, wall) || matched[a.ContainerID] {
			continue
		}
		matched[a.ContainerID] = true
		out = append(out, nameApp(a, pod))
	}
	if len(out) == 0 {
		return nil, true
	}
	slices.SortStableFunc(out, func(x, y v1alpha1.AppContainer) int {
		return cmp.Or(cmp.Compare(specOrder(pod, x), specOrder(pod, y)), strings.Compare(x.ContainerID, y.ContainerID))
	})
	out = out[:min(len(out), maxAppContainers)]
	for _, c := range pod {
		if !c.Ephemeral && !c.Visible && !matched[c.ID] {
			out = append(out, v1alpha1.AppContainer{Name: c.Name, ContainerID: c.ID, NotSeen: true})
		}
	}
	return out, false
}

// plausibleApp says whether an entry is what a kernel could have counted over the agent's
// window, after dropping what the agent has no word on (names, limits, throttling).
func plausibleApp(a *v1alpha1.AppContainer, wall float64) bool {
	a.Name, a.NotSeen, a.CPULimited, a.LimitCores, a.LimitFrom, a.ThrottledSeconds, a.ThrottledPeriods = "", false, false, 0, "", 0, 0
	sanitize(&a.CPUUse)
	a.Processes = min(max(a.Processes, 0), maxAppProcesses)
	d := a.WallSeconds - wall
	return cpustat.LooksLikeID(a.ContainerID) && d >= -(0.01+0.01*wall) && d <= appWindowLonger &&
		a.CPUSeconds <= cpuMaxCores*a.WallSeconds && a.RunQueueWaitSeconds <= maxAppWaitShare*a.WallSeconds
}

// nameApp names a container by its ID in the pod's status and judges it by its own limit.
func nameApp(a v1alpha1.AppContainer, pod []Container) v1alpha1.AppContainer {
	i := slices.IndexFunc(pod, func(c Container) bool { return c.ID != "" && c.ID == a.ContainerID })
	if i < 0 {
		return a
	}
	a.Name, a.LimitCores = pod[i].Name, pod[i].LimitCores
	if a.LimitCores > 0 {
		a.LimitFrom = v1alpha1.LimitFromContainer
		a.CPULimited = a.WallSeconds >= cpuMinWall && a.CPUSeconds >= cpuLimitShare*a.LimitCores*a.WallSeconds &&
			a.RunQueueWaitSeconds >= cpuWaitShare*a.WallSeconds
	}
	return a
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

// NotSeenWhy says why an agent cannot see some of its pod's containers.
const NotSeenWhy = "the agent shares only its target container's process namespace; a pod with shareProcessNamespace shows them all"

// beside says what the pod's containers used while an agent under the pod's limit ran: "; the
// pod's containers meanwhile: app 0.00 cores, burner 0.20 cores (not seen: …)", or "".
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
