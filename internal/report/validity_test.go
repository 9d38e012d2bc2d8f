package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func TestJudge(t *testing.T) {
	busy := func(cpu, wait float64) *v1alpha1.CPUUse {
		return &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: cpu, RunQueueWaitSeconds: wait}
	}
	for _, tc := range []struct {
		name       string
		client     *v1alpha1.CPUUse
		server     *v1alpha1.CPUUse
		lim        Agents
		wantValid  bool
		wantReason string
		wantAdvice string
	}{
		{"no limit anywhere, a core busy", busy(10, 3), busy(9, 2), Agents{}, true, "", ""},
		{"the server's pod limits it to 0.2 cores and it used them", busy(5, 0.1), busy(1.9, 0.5), Agents{Server: 0.2}, false,
			"server agent CPU-limited: used 0.19 cores of the pod's 0.20-core limit; its threads waited 0.50 s in all for a CPU in 10.00 s", AdvicePodLimit},
		{"under a pod limit, the app took the quota: the agent waited", busy(0.1, 2), nil, Agents{Client: 0.5}, false,
			"client agent CPU-limited: used 0.01 cores of the pod's 0.50-core limit; its threads waited 2.00 s in all for a CPU in 10.00 s (longer than they ran", AdvicePodLimit},
		{"a generous pod limit, little use, little wait", busy(2, 0.2), nil, Agents{Client: 4}, true, "", ""},
		{"under a limit, a wait shorter than the work", busy(3, 2), nil, Agents{Client: 2}, true, "", ""},
		{"a probe too short to judge", &v1alpha1.CPUUse{WallSeconds: 0.2, CPUSeconds: 0.2}, nil, Agents{Client: 0.2}, true, "", ""},
		{"the smaller of the pod's limit and the agent's own", &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: 1.9, LimitCores: 4, LimitFrom: v1alpha1.LimitFromCgroup}, nil, Agents{Client: 0.2}, false,
			"used 0.19 cores of the pod's 0.20-core limit", AdvicePodLimit},
		{"an impossible limit and negative figures reported", &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: -5, RunQueueWaitSeconds: -1, LimitCores: 1e9}, nil, Agents{}, true, "", ""},
		{"its own cgroup's quota throttled it", &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: 1, RunQueueWaitSeconds: 0.05, ThrottledSeconds: 0.5, ThrottledPeriods: 12, LimitCores: 0.5, LimitFrom: v1alpha1.LimitFromCgroup},
			nil, Agents{Client: 2}, false, "used 0.10 cores of its own 0.50-core limit; its threads waited 0.05 s in all for a CPU in 10.00 s, throttled 0.50 s in 12 periods", AdviceAgentLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{Client: tc.client, Server: tc.server}}
			Judge(r, tc.lim)
			v := r.Validity
			if v.Valid != tc.wantValid || v.Advice != tc.wantAdvice || (tc.wantReason == "") != (len(v.Reasons) == 0) ||
				(tc.wantReason != "" && !strings.Contains(strings.Join(v.Reasons, "\n"), tc.wantReason)) {
				t.Errorf("valid %v, reasons %q, advice %q; want %v, %q, %q", v.Valid, v.Reasons, v.Advice, tc.wantValid, tc.wantReason, tc.wantAdvice)
			}
		})
	}
}

// The validity figures: <probe>.valid for each probe with accounting, and valid for them all,
// which a gate can name before anything is measured.
func TestValidityFigures(t *testing.T) {
	ok := &v1alpha1.ProbeResult{Name: "icmp", Kind: v1alpha1.ProbeICMP, RTT: &v1alpha1.RTTResult{Received: 1}, Validity: &v1alpha1.Validity{Valid: true}}
	bad := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Throughput: &v1alpha1.ThroughputResult{}, Validity: &v1alpha1.Validity{Valid: false}}
	figs := Figures(ProbeFigures([]*v1alpha1.ProbeResult{ok, bad}))
	for name, want := range map[string]float64{"icmp.valid": 1, "tcp-1.valid": 0, "valid": 0} {
		if got, found := figs[name]; !found || got.Value != want {
			t.Errorf("%s = %+v (found %v), want %v", name, got, found, want)
		}
	}
	c, err := gate.Parse("valid == 0")
	if err != nil {
		t.Fatal(err)
	}
	if res := c.Evaluate(figs); !res.Violated {
		t.Errorf("valid == 0 holds on this run: %+v", res)
	}
	if _, planned := PlannedFigures(nil)["valid"]; planned {
		t.Error("valid planned without probes")
	}
}

func TestValidityLines(t *testing.T) {
	valid := &v1alpha1.ProbeResult{Name: "icmp", Validity: &v1alpha1.Validity{Valid: true}}
	limited := &v1alpha1.ProbeResult{Name: "tcp-1", Validity: &v1alpha1.Validity{Reasons: []string{"server agent CPU-limited: …"}, Advice: AdvicePodLimit}}
	got := ValidityLines(" on rung same-zone", []*v1alpha1.ProbeResult{valid, limited, limited})
	want := []string{"NOT THE NETWORK'S on rung same-zone: a CPU limit decided tcp-1", "  tcp-1: server agent CPU-limited: …", "  tcp-1: → " + AdvicePodLimit}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := ValidityLines("", []*v1alpha1.ProbeResult{valid}); len(got) != 1 || got[0] != ValidNote {
		t.Errorf("all valid: %q", got)
	}
	if got := ValidityLines("", []*v1alpha1.ProbeResult{{Name: "old"}}); got != nil {
		t.Errorf("without accounting: %q", got)
	}
}

// The application's own traffic on a pod's interface: a rate figure it took trafficShare or more
// of is not valid and marked [shared]; a latency probe is only named in the traffic lines.
func TestJudgeTraffic(t *testing.T) {
	busy := &v1alpha1.Traffic{WallSeconds: 3, InterfaceBytes: 6.2e9, AgentBytes: 6e9, OtherBytes: 37.5e6 * 10, OtherBitsPerSecond: 1e9}
	quiet := &v1alpha1.Traffic{WallSeconds: 3, InterfaceBytes: 6.2e9, AgentBytes: 6e9, OtherBytes: 20e3, OtherBitsPerSecond: 53e3}
	for _, tc := range []struct {
		name      string
		kind      string
		client    *v1alpha1.Traffic
		server    *v1alpha1.Traffic
		wantValid bool
		wantMark  string
		wantLines int
	}{
		{"tcp beside 375 MB of the app's on the server's pod", v1alpha1.ProbeTCP, quiet, busy, false, "tcp-1 [shared]", 2},
		{"tcp on quiet pods", v1alpha1.ProbeTCP, quiet, quiet, true, "tcp-1", 0},
		{"tcp beside 4 % of its own", v1alpha1.ProbeTCP, &v1alpha1.Traffic{WallSeconds: 3, InterfaceBytes: 1.05e9, AgentBytes: 1e9, OtherBytes: 4e7, OtherBitsPerSecond: 1.07e8}, nil, true, "tcp-1", 2},
		{"a latency probe beside the app's traffic: named, valid", v1alpha1.ProbeHTTP, &v1alpha1.Traffic{WallSeconds: 3, InterfaceBytes: 3.8e7, AgentBytes: 1e5, OtherBytes: 3.75e7, OtherBitsPerSecond: 1e8}, nil, true, "tcp-1", 2},
		{"no counters", v1alpha1.ProbeTCP, nil, nil, true, "tcp-1", 0},
		{"a probe too short to judge", v1alpha1.ProbeTCP, &v1alpha1.Traffic{WallSeconds: 0.1, AgentBytes: 1e6, OtherBytes: 1e6, OtherBitsPerSecond: 8e7}, nil, true, "tcp-1", 0},
		{"hostile: other bytes beyond the interface's", v1alpha1.ProbeTCP, &v1alpha1.Traffic{WallSeconds: 3, InterfaceBytes: 10, AgentBytes: 1, OtherBytes: 1e9, OtherBitsPerSecond: 1e9}, nil, true, "tcp-1", 0},
		{"hostile: beyond any line rate", v1alpha1.ProbeTCP, &v1alpha1.Traffic{WallSeconds: 1, InterfaceBytes: 1 << 62, AgentBytes: 1, OtherBytes: 1 << 61}, nil, true, "tcp-1", 0},
		{"hostile: negative figures", v1alpha1.ProbeTCP, &v1alpha1.Traffic{WallSeconds: 3, InterfaceBytes: -5, AgentBytes: 1, OtherBytes: 1e9}, nil, true, "tcp-1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: tc.kind, Validity: &v1alpha1.Validity{ClientTraffic: tc.client, ServerTraffic: tc.server}}
			Judge(r, Agents{ClientInApp: true, ServerInApp: true})
			if r.Validity.Valid != tc.wantValid || Marked(r) != tc.wantMark {
				t.Errorf("valid %v, marked %q (reasons %q); want %v, %q", r.Validity.Valid, Marked(r), r.Validity.Reasons, tc.wantValid, tc.wantMark)
			}
			if !tc.wantValid && r.Validity.Advice != AdviceTraffic {
				t.Errorf("advice %q, want %q", r.Validity.Advice, AdviceTraffic)
			}
			if !tc.wantValid && !slices.Contains(r.Validity.Causes, v1alpha1.CauseSharedInterface) {
				t.Errorf("causes %q, want %q", r.Validity.Causes, v1alpha1.CauseSharedInterface)
			}
			lines := TrafficLines("", []*v1alpha1.ProbeResult{r})
			if len(lines) != tc.wantLines {
				t.Errorf("traffic lines %q, want %d", lines, tc.wantLines)
			}
		})
	}
}

// An agent outside an application pod (a temporary pod, a pod on the host's network): its
// interfaces' other traffic is not the application's and is dropped, not judged.
func TestTrafficOnlyInAppPods(t *testing.T) {
	r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{
		ClientTraffic: &v1alpha1.Traffic{WallSeconds: 3, InterfaceBytes: 3e9, AgentBytes: 1e9, OtherBytes: 1e9, OtherBitsPerSecond: 2.7e9}}}
	Judge(r, Agents{ServerInApp: true})
	if !r.Validity.Valid || r.Validity.ClientTraffic != nil {
		t.Errorf("a temporary client pod's traffic judged or kept: %+v", r.Validity)
	}
}

// Both causes at once: both marks, and the header names both.
func TestMarkedBothCauses(t *testing.T) {
	r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{
		Client:        &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: 1.9},
		ServerTraffic: &v1alpha1.Traffic{WallSeconds: 10, InterfaceBytes: 2.1e9, AgentBytes: 1e9, OtherBytes: 1e9, OtherBitsPerSecond: 8e8}}}
	Judge(r, Agents{Client: 0.2, ClientInApp: true, ServerInApp: true})
	if got := Marked(r); got != "tcp-1 [cpu-limited, shared]" {
		t.Errorf("marked %q", got)
	}
	if l := ValidityLines("", []*v1alpha1.ProbeResult{r}); len(l) == 0 || !strings.Contains(l[0], "a CPU limit and the application's traffic decided tcp-1") {
		t.Errorf("validity lines %q", l)
	}
}

// An agent's idle entries are its word: a negative count, or more than a CPU can make, is
// dropped by Judge, a plausible one kept.
func TestJudgeDropsImpossibleIdleEntries(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		entries *int64
		keep    bool
	}{{n(-3), false}, {n(1 << 62), false}, {n(12_000), true}, {nil, false}} {
		r := &v1alpha1.ProbeResult{Name: "tcp-rr", Kind: v1alpha1.ProbeTCPRR, Validity: &v1alpha1.Validity{
			Client: &v1alpha1.CPUUse{WallSeconds: 2, NodeIdleEntries: tc.entries}}}
		Judge(r, Agents{})
		if got := r.Validity.Client.NodeIdleEntries != nil; got != tc.keep {
			t.Errorf("idle entries %v: kept %v, want %v", tc.entries, got, tc.keep)
		}
	}
}
