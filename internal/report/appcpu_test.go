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

// The server agent under its pod's 0.4-core limit, beside a sidecar that fills its own 0.2 (the
// pod shares its process namespace): the sidecar is named, judged at its own limit, and named
// in the agent's reason; the pod's sandbox stays unnamed; the agent's word is not taken for
// names, limits, throttling, figures no kernel counts, a window not its own, or an ID that is
// not one.
func TestJudgeNamesTheAppContainers(t *testing.T) {
	pod := []Container{
		{Name: "app", ID: "a1", LimitCores: 0.2, Visible: true},
		{Name: "burner", ID: "b1", LimitCores: 0.2, Visible: true},
		{Name: "netbench-old", ID: "e1", Ephemeral: true, Visible: true},
	}
	burner := v1alpha1.AppContainer{Name: "app", ContainerID: "b1", Processes: 1, CPUUse: use(2, 0.4, 1.5)}
	burner.LimitCores, burner.ThrottledSeconds = 9, 3 // not the agent's to say
	r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{
		Server: &v1alpha1.CPUUse{WallSeconds: 2, CPUSeconds: 0.38, RunQueueWaitSeconds: 1.2},
		ServerApp: []v1alpha1.AppContainer{
			{ContainerID: "pause", Processes: 1, CPUUse: use(2, 0, 0)},
			burner,
			{ContainerID: "a1", Processes: 1, CPUUse: use(2, 0.001, 0)},
			{ContainerID: "b1", CPUUse: use(2, 1, 1)},                   // twice: the first counts
			{ContainerID: "huge", CPUUse: use(2, 1e9, 0)},               // beyond any machine
			{ContainerID: "longwait", CPUUse: use(2, 0, 1e9)},           // beyond any thread count
			{ContainerID: "elsewhen", CPUUse: use(8, 1, 0)},             // not around the agent's window
			{ContainerID: "shorter", CPUUse: use(1.5, 1, 0)},            // shorter than the agent's window
			{ContainerID: "\x1b[2J", CPUUse: use(2, 1, 0)},              // not an ID
			{ContainerID: "e1", Processes: -4, CPUUse: use(2.01, 0, 0)}, // another run's agent
		},
	}}
	Judge(r, Agents{Server: 0.4, ServerInApp: true, ServerPod: pod})
	limitedUse := use(2, 0.4, 1.5)
	limitedUse.LimitCores, limitedUse.LimitFrom = 0.2, v1alpha1.LimitFromContainer
	appUse := use(2, 0.001, 0)
	appUse.LimitCores, appUse.LimitFrom = 0.2, v1alpha1.LimitFromContainer
	want := []v1alpha1.AppContainer{
		{Name: "app", ContainerID: "a1", Processes: 1, CPUUse: appUse},
		{Name: "burner", ContainerID: "b1", Processes: 1, CPULimited: true, CPUUse: limitedUse},
		{Name: "netbench-old", ContainerID: "e1", CPUUse: use(2.01, 0, 0)},
		{ContainerID: "pause", Processes: 1, CPUUse: use(2, 0, 0)},
	}
	if diff := cmp.Diff(want, r.Validity.ServerApp); diff != "" {
		t.Errorf("server app containers (-want +got):\n%s", diff)
	}
	reasons := strings.Join(r.Validity.Reasons, "\n")
	if s := "server agent CPU-limited: "; !strings.Contains(reasons, s) || !strings.Contains(reasons, "; the pod's containers meanwhile: app 0.00 cores, burner 0.20 cores, netbench-old 0.00 cores") || strings.Contains(reasons, "not seen") {
		t.Errorf("reasons:\n%s", reasons)
	}
	lines := strings.Join(AppLines("", []*v1alpha1.ProbeResult{r, r}), "\n")
	for _, s := range []string{"application containers' CPU, as the agents in their pods saw it",
		"server pod, container burner: 0.20 cores (at most 0.20 in a probe) of its 0.20-core limit, its threads waited 3.00 s in all for a CPU in 4.00 s of probes; at its own limit in 2 of 2 probes: CPU-THROTTLED"} {
		if !strings.Contains(lines, s) {
			t.Errorf("AppLines lack %q:\n%s", s, lines)
		}
	}
	for _, s := range []string{"pause", "container app", "netbench-old", "\x1b"} {
		if strings.Contains(lines, s) {
			t.Errorf("AppLines name %q:\n%s", s, lines)
		}
	}
}

// In a pod that does not share its process namespace, the containers other than the agent's
// target are listed as not seen, and named so in a pod-limited agent's reason; a container
// the agent should see but did not (not running when the pod was read) is not listed.
func TestJudgeListsTheContainersNotSeen(t *testing.T) {
	pod := []Container{{Name: "app", ID: "a1", Visible: true}, {Name: "side", ID: "s1", LimitCores: 0.5}, {Name: "late", Visible: true}}
	r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{
		Client:    &v1alpha1.CPUUse{WallSeconds: 2, CPUSeconds: 0.78},
		ClientApp: []v1alpha1.AppContainer{{ContainerID: "a1", Processes: 1, CPUUse: use(2, 0.01, 0)}},
	}}
	Judge(r, Agents{Client: 0.4, ClientInApp: true, ClientPod: pod})
	want := []v1alpha1.AppContainer{
		{Name: "app", ContainerID: "a1", Processes: 1, CPUUse: use(2, 0.01, 0)},
		{Name: "side", ContainerID: "s1", NotSeen: true},
	}
	if diff := cmp.Diff(want, r.Validity.ClientApp); diff != "" {
		t.Errorf("client app containers (-want +got):\n%s", diff)
	}
	if reasons := strings.Join(r.Validity.Reasons, "\n"); !strings.Contains(reasons, "the pod's containers meanwhile: app 0.01 cores (not seen: side — "+NotSeenWhy+")") {
		t.Errorf("reasons:\n%s", reasons)
	}
}

// What an agent outside an application pod saw is not the application's; a probe without that
// side's accounting claims nothing; a container that neither its limit decided, nor waited
// longer than it ran, nor was busy is not named; one that waited is named without blaming its
// limit; a busy one without a limit is named as busy.
func TestAppLinesSayOnlyWhatTheFiguresShow(t *testing.T) {
	pod := []Container{{Name: "app", ID: "a1", LimitCores: 1, Visible: true}}
	r := &v1alpha1.ProbeResult{Name: "rtt", Kind: v1alpha1.ProbeTCPRTT, Validity: &v1alpha1.Validity{
		Client:    &v1alpha1.CPUUse{WallSeconds: 2},
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
	r.Validity.ClientApp[0].RunQueueWaitSeconds = 0.5 // waited longer than it ran, far below its limit
	if l := strings.Join(AppLines(" in round 2", []*v1alpha1.ProbeResult{r}), "\n"); !strings.Contains(l, " in round 2,") ||
		!strings.Contains(l, "client pod, container app: 0.05 cores (at most 0.05 in a probe) of its 1.00-core limit") ||
		!strings.Contains(l, "it waited longer than it ran: its own limit, the pod's") || strings.Contains(l, "THROTTLED") {
		t.Errorf("a waiting container: %q", l)
	}
	r.Validity.ClientApp[0].RunQueueWaitSeconds, r.Validity.ClientApp[0].CPUSeconds = 0, 0.3
	if l := strings.Join(AppLines("", []*v1alpha1.ProbeResult{r}), "\n"); !strings.Contains(l, "container app: 0.15 cores") || strings.Contains(l, "THROTTLED") || strings.Contains(l, "waited longer") {
		t.Errorf("a busy container: %q", l)
	}
	icmp := &v1alpha1.ProbeResult{Name: "icmp", Kind: v1alpha1.ProbeICMP, Validity: &v1alpha1.Validity{Client: &v1alpha1.CPUUse{WallSeconds: 1}}}
	Judge(icmp, Agents{ServerInApp: true, ServerPod: pod})
	if icmp.Validity.ServerApp != nil {
		t.Errorf("server app containers without the server's accounting: %+v", icmp.Validity.ServerApp)
	}
}

// A container steadily at 95 % of its limit without waiting is not called throttled; an agent
// whose scan was cut short says so, once per side, outside an application pod never.
func TestAppAtItsLimitAndScansNotCompared(t *testing.T) {
	pod := []Container{{Name: "app", ID: "a1", LimitCores: 0.2, Visible: true}}
	r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{
		Client:               &v1alpha1.CPUUse{WallSeconds: 2},
		Server:               &v1alpha1.CPUUse{WallSeconds: 2},
		ClientApp:            []v1alpha1.AppContainer{{ContainerID: "a1", CPUUse: use(2, 0.38, 0.05)}},
		ServerAppNotCompared: true,
	}}
	Judge(r, Agents{ClientInApp: true, ServerInApp: true, ClientPod: pod, ServerPod: pod})
	if r.Validity.ClientApp[0].CPULimited {
		t.Errorf("a container at 95 %% of its limit that hardly waited: %+v", r.Validity.ClientApp[0])
	}
	l := strings.Join(AppLines("", []*v1alpha1.ProbeResult{r, r}), "\n")
	if !strings.Contains(l, "server pod, in 2 of 2 probes: "+AppNotComparedWhy) || strings.Contains(l, "client pod, in") || strings.Contains(l, "THROTTLED") {
		t.Errorf("AppLines:\n%s", l)
	}
	Judge(r, Agents{ClientPod: pod, ServerPod: pod})
	if r.Validity.ServerAppNotCompared || AppLines("", []*v1alpha1.ProbeResult{r}) != nil {
		t.Errorf("outside an application pod: %+v", r.Validity)
	}
	r.Validity.ClientApp = []v1alpha1.AppContainer{{ContainerID: "a1", CPUUse: use(0.2, 1, 0)}} // none to keep
	Judge(r, Agents{ClientInApp: true, ClientPod: pod})
	if !r.Validity.ClientAppNotCompared || r.Validity.ClientApp != nil {
		t.Errorf("every entry dropped: %+v", r.Validity)
	}
}
