package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func use(wall, cpu, wait float64) v1alpha1.CPUUse {
	return v1alpha1.CPUUse{WallSeconds: wall, CPUSeconds: cpu, RunQueueWaitSeconds: wait}
}

// The server agent under its pod's 0.4-core limit, beside a sidecar that fills its own 0.2:
// the sidecar is named, judged CPU-limited by its own limit, and named in the agent's reason;
// the container the agent could not see is listed as not seen; the sandbox's cgroup stays
// unnamed; the agent's word is not taken for limits, throttling or impossible figures.
func TestJudgeNamesTheAppContainers(t *testing.T) {
	pod := []Container{
		{Name: "app", ID: "a1", LimitCores: 0.2},
		{Name: "burner", ID: "b1", LimitCores: 0.2},
		{Name: "netbench-old", ID: "e1", Ephemeral: true},
	}
	burner := v1alpha1.AppContainer{ContainerID: "b1", Processes: 1, CPUUse: use(2, 0.4, 1.5)}
	burner.LimitCores, burner.ThrottledSeconds = 9, 3 // not the agent's to say
	r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{
		Server: &v1alpha1.CPUUse{WallSeconds: 2, CPUSeconds: 0.38, RunQueueWaitSeconds: 1.2},
		ServerApp: []v1alpha1.AppContainer{
			{ContainerID: "pause", Processes: 1, CPUUse: use(2, 0, 0)},
			burner,
			{ContainerID: "b1", CPUUse: use(2, 1, 1)},               // twice: the first counts
			{ContainerID: "huge", CPUUse: use(2, 1e9, 0)},           // beyond any machine
			{ContainerID: "never", CPUUse: use(0, 1, 0)},            // no time passed
			{ContainerID: "e1", Processes: 1, CPUUse: use(2, 0, 0)}, // another run's agent
		},
	}}
	Judge(r, Agents{Server: 0.4, ServerInApp: true, ServerPod: pod})
	limitedUse := use(2, 0.4, 1.5)
	limitedUse.LimitCores, limitedUse.LimitFrom = 0.2, v1alpha1.LimitFromContainer
	want := []v1alpha1.AppContainer{
		{Name: "app", ContainerID: "a1", NotSeen: true, CPUUse: v1alpha1.CPUUse{LimitCores: 0.2}},
		{Name: "burner", ContainerID: "b1", Processes: 1, CPULimited: true, CPUUse: limitedUse},
		{Name: "netbench-old", ContainerID: "e1", Processes: 1, CPUUse: use(2, 0, 0)},
		{ContainerID: "pause", Processes: 1, CPUUse: use(2, 0, 0)},
	}
	if diff := cmp.Diff(want, r.Validity.ServerApp); diff != "" {
		t.Errorf("server app containers (-want +got):\n%s", diff)
	}
	reasons := strings.Join(r.Validity.Reasons, "\n")
	for _, s := range []string{"server agent CPU-limited", "the pod's containers meanwhile: burner 0.20 cores, netbench-old 0.00 cores", "not seen: app — " + NotSeenWhy} {
		if !strings.Contains(reasons, s) {
			t.Errorf("reasons lack %q:\n%s", s, reasons)
		}
	}
	lines := strings.Join(AppLines("", []*v1alpha1.ProbeResult{r, r}), "\n")
	for _, s := range []string{"application containers' CPU, as the agents in their pods saw it",
		"server pod, container burner: 0.20 cores of its 0.20-core limit, its threads waited 3.00 s in all for a CPU in 4.00 s of probes: CPU-THROTTLED"} {
		if !strings.Contains(lines, s) {
			t.Errorf("AppLines lack %q:\n%s", s, lines)
		}
	}
	for _, s := range []string{"pause", "container app", "netbench-old"} {
		if strings.Contains(lines, s) {
			t.Errorf("AppLines name the idle or unseen %q:\n%s", s, lines)
		}
	}
}

// What an agent outside an application pod saw is not the application's; a container that
// neither its limit decided nor was busy is not named.
func TestAppContainersOnlyInAppPods(t *testing.T) {
	pod := []Container{{Name: "app", ID: "a1"}}
	r := &v1alpha1.ProbeResult{Name: "rtt", Kind: v1alpha1.ProbeTCPRTT, Validity: &v1alpha1.Validity{
		ClientApp: []v1alpha1.AppContainer{{ContainerID: "a1", CPUUse: use(2, 0.1, 0)}},
		ServerApp: []v1alpha1.AppContainer{{ContainerID: "a1", CPUUse: use(2, 0.1, 0)}},
	}}
	Judge(r, Agents{ClientInApp: true, ClientPod: pod, ServerPod: pod})
	if r.Validity.ServerApp != nil || len(r.Validity.ClientApp) != 1 || r.Validity.ClientApp[0].Name != "app" || r.Validity.ClientApp[0].CPULimited {
		t.Errorf("client app %+v, server app %+v", r.Validity.ClientApp, r.Validity.ServerApp)
	}
	if l := AppLines("", []*v1alpha1.ProbeResult{r}); l != nil {
		t.Errorf("an idle container named: %q", l)
	}
	r.Validity.ClientApp[0].CPUSeconds = 0.3 // busy without a limit
	if l := strings.Join(AppLines(" in round 2", []*v1alpha1.ProbeResult{r}), "\n"); !strings.Contains(l, " in round 2,") ||
		!strings.Contains(l, "client pod, container app: 0.15 cores, its threads waited 0.00 s in all") || strings.Contains(l, "THROTTLED") {
		t.Errorf("a busy container without a limit: %q", l)
	}
}

// A probe without the server agent's accounting (it had no part in it) claims nothing about
// the server pod's containers.
func TestNoAppAccountingNoClaims(t *testing.T) {
	r := &v1alpha1.ProbeResult{Name: "icmp", Kind: v1alpha1.ProbeICMP, Validity: &v1alpha1.Validity{}}
	Judge(r, Agents{ServerInApp: true, ServerPod: []Container{{Name: "app", ID: "a1"}}})
	if r.Validity.ServerApp != nil {
		t.Errorf("server app containers without the server's accounting: %+v", r.Validity.ServerApp)
	}
}
