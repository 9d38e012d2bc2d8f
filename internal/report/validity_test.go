package report

import (
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func TestJudgeCPU(t *testing.T) {
	busy := func(cpu, wait float64) *v1alpha1.CPUUse {
		return &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: cpu, RunQueueWaitSeconds: wait}
	}
	for _, tc := range []struct {
		name       string
		client     *v1alpha1.CPUUse
		server     *v1alpha1.CPUUse
		lim        CPULimits
		wantValid  bool
		wantReason string
		wantAdvice string
	}{
		{"no limit anywhere, a core busy", busy(10, 3), busy(9, 2), CPULimits{}, true, "", ""},
		{"the server's pod limits it to 0.2 cores and it used them", busy(5, 0.1), busy(1.9, 0.5), CPULimits{Server: 0.2}, false,
			"server agent CPU-limited: used 0.19 cores of the pod's 0.20-core limit; its threads waited 0.50 s in all for a CPU in 10.00 s", AdvicePodLimit},
		{"under a pod limit, the app took the quota: the agent waited", busy(0.1, 2), nil, CPULimits{Client: 0.5}, false,
			"client agent CPU-limited: used 0.01 cores of the pod's 0.50-core limit; its threads waited 2.00 s in all for a CPU in 10.00 s (longer than they ran", AdvicePodLimit},
		{"a generous pod limit, little use, little wait", busy(2, 0.2), nil, CPULimits{Client: 4}, true, "", ""},
		{"under a limit, a wait shorter than the work", busy(3, 2), nil, CPULimits{Client: 2}, true, "", ""},
		{"a probe too short to judge", &v1alpha1.CPUUse{WallSeconds: 0.2, CPUSeconds: 0.2}, nil, CPULimits{Client: 0.2}, true, "", ""},
		{"the smaller of the pod's limit and the agent's own", &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: 1.9, LimitCores: 4, LimitFrom: v1alpha1.LimitFromCgroup}, nil, CPULimits{Client: 0.2}, false,
			"used 0.19 cores of the pod's 0.20-core limit", AdvicePodLimit},
		{"an impossible limit and negative figures reported", &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: -5, RunQueueWaitSeconds: -1, LimitCores: 1e9}, nil, CPULimits{}, true, "", ""},
		{"its own cgroup's quota throttled it", &v1alpha1.CPUUse{WallSeconds: 10, CPUSeconds: 1, RunQueueWaitSeconds: 0.05, ThrottledSeconds: 0.5, ThrottledPeriods: 12, LimitCores: 0.5, LimitFrom: v1alpha1.LimitFromCgroup},
			nil, CPULimits{Client: 2}, false, "used 0.10 cores of its own 0.50-core limit; its threads waited 0.05 s in all for a CPU in 10.00 s, throttled 0.50 s in 12 periods", AdviceAgentLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &v1alpha1.ProbeResult{Name: "tcp-1", Kind: v1alpha1.ProbeTCP, Validity: &v1alpha1.Validity{Client: tc.client, Server: tc.server}}
			JudgeCPU(r, tc.lim)
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
